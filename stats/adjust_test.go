package stats

import (
	"math"
	"testing"
)

// TestPAdjust checks Holm and Benjamini–Hochberg against R's p.adjust,
// worked by hand from its definitions (results are in input order).
//
// A: p = (0.01, 0.02, 0.03, 0.04, 0.05), m = 5.
//
//	holm: 5·.01=.05, 4·.02=.08, 3·.03=.09, 2·.04=.08→.09 (cummax), 1·.05→.09
//	BH:   .01·5/1 = .02·5/2 = .03·5/3 = .04·5/4 = .05·5/5 = .05
//
// B: p = (0.01, 0.04, 0.03, 0.005, 0.20); sorted .005, .01, .03, .04, .20.
//
//	holm: .025, .04, .09, max(.08,.09)=.09, .20
//	BH:   .025, .025, .05, .05, .20 (cummin from the top)
//
// C: capping and NaN: p = (0.5, NaN, 0.3, 0.9); m = 3 non-NaN values.
//
//	holm: sorted .3, .5, .9 → 3·.3=.9, 2·.5=1, 1·.9→1 (cummax) = (1, NaN, .9, 1)
//	BH:   .9·3/3=.9, .5·3/2=.75, .3·3/1=.9 → cummin from top .9, .75, .75
//	      = (.75, NaN, .75, .9)
//
// D: ties: p = (0.02, 0.02, 0.5): holm 3·.02=.06, 2·.02=.04→.06, .5;
// BH .02·3/1=.06, .02·3/2=.03, .5 → cummin .03, .03, .5.
func TestPAdjust(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		p        []float64
		holm, bh []float64
	}{
		{"A", []float64{0.01, 0.02, 0.03, 0.04, 0.05},
			[]float64{0.05, 0.08, 0.09, 0.09, 0.09},
			[]float64{0.05, 0.05, 0.05, 0.05, 0.05}},
		{"B", []float64{0.01, 0.04, 0.03, 0.005, 0.20},
			[]float64{0.04, 0.09, 0.09, 0.025, 0.20},
			[]float64{0.025, 0.05, 0.05, 0.025, 0.20}},
		{"C", []float64{0.5, nan, 0.3, 0.9},
			[]float64{1, nan, 0.9, 1},
			[]float64{0.75, nan, 0.75, 0.9}},
		{"D", []float64{0.02, 0.02, 0.5},
			[]float64{0.06, 0.06, 0.5},
			[]float64{0.03, 0.03, 0.5}},
		{"empty", nil, []float64{}, []float64{}},
		{"out of range", []float64{0.1, 1.2}, []float64{nan, nan}, []float64{nan, nan}},
	}
	for _, tt := range tests {
		for _, m := range []struct {
			method string
			fn     func([]float64) []float64
			want   []float64
		}{{"holm", HolmAdjust, tt.holm}, {"BH", BHAdjust, tt.bh}} {
			got := m.fn(tt.p)
			if len(got) != len(m.want) {
				t.Fatalf("%s %s: len %d, want %d", tt.name, m.method, len(got), len(m.want))
			}
			for i := range got {
				if !near(got[i], m.want[i], 1e-15) {
					t.Errorf("%s %s = %v, want %v", tt.name, m.method, got, m.want)
					break
				}
			}
		}
	}
}

// TestPAdjustMonotone checks that adjusted p-values keep the order of the
// raw p-values and never fall below them, on a spread of values.
func TestPAdjustMonotone(t *testing.T) {
	p := []float64{0.001, 0.7, 0.04, 0.04, 0.2, 0.0001, 0.5, 0.011, 0.9, 0.03}
	for name, fn := range map[string]func([]float64) []float64{"holm": HolmAdjust, "BH": BHAdjust} {
		adj := fn(p)
		for i := range p {
			if adj[i] < p[i] || adj[i] > 1 {
				t.Errorf("%s: adj[%d] = %g for p = %g", name, i, adj[i], p[i])
			}
			for j := range p {
				if p[i] < p[j] && adj[i] > adj[j] {
					t.Errorf("%s: not monotone at %d, %d", name, i, j)
				}
			}
		}
	}
}
