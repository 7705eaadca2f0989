package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCohenKappaPublished holds CohenKappa to published values.
func TestCohenKappaPublished(t *testing.T) {
	// statpsych's ci.kappa(.05, f00 = 31, f01 = 12, f10 = 4, f11 = 58)
	// (Bonett, after Fleiss, Levin and Paik 2003) prints Cohen's kappa
	// 0.6756757, SE 0.07344761, 95% limits 0.5317210 and 0.8196303. Its
	// f00 is both raters' 0: our bothPass.
	k := CohenKappa(31, 12, 4, 58, 0.95)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"kappa", k.Kappa, 0.6756757}, {"se", k.SE, 0.07344761},
		{"lo", k.Interval.Lo, 0.5317210}, {"hi", k.Interval.Hi, 0.8196303},
	} {
		if math.Abs(c.got-c.want) > 5e-8 {
			t.Errorf("%s = %.9f, want %.7f", c.name, c.got, c.want)
		}
	}
	// Cohen's kappa of the textbook table (20, 5, 10, 15): po = 0.7,
	// pe = 0.5, kappa = 0.4.
	if k := CohenKappa(20, 5, 10, 15, 0.95); math.Abs(k.Kappa-0.4) > 1e-12 || math.Abs(k.Agreement-0.7) > 1e-12 || math.Abs(k.Expected-0.5) > 1e-12 {
		t.Errorf("textbook table: %+v", k)
	}
}

func TestCohenKappaEdges(t *testing.T) {
	tests := []struct {
		name       string
		a, b, c, d int
		kappa      float64 // NaN: undefined
		wantSE     bool
	}{
		{"empty", 0, 0, 0, 0, math.NaN(), false},
		{"one answer from both", 7, 0, 0, 0, math.NaN(), false},
		{"perfect", 5, 0, 0, 5, 1, true},
		{"opposite", 0, 5, 5, 0, -1, true},
		{"negative count", -1, 2, 2, 2, math.NaN(), false},
	}
	for _, tt := range tests {
		k := CohenKappa(tt.a, tt.b, tt.c, tt.d, 0.95)
		if math.IsNaN(tt.kappa) != math.IsNaN(k.Kappa) || (!math.IsNaN(tt.kappa) && math.Abs(k.Kappa-tt.kappa) > 1e-12) {
			t.Errorf("%s: kappa %v, want %v", tt.name, k.Kappa, tt.kappa)
		}
		if tt.wantSE && (math.IsNaN(k.SE) || k.Interval.Lo < -1 || k.Interval.Hi > 1 || !k.Interval.Contains(k.Kappa)) {
			t.Errorf("%s: se %v interval %+v", tt.name, k.SE, k.Interval)
		}
	}
}

// TestCohenKappaCoverage: over tables drawn from a known joint
// distribution, the 95% interval holds the true kappa about 95% of the
// time (a large n, where the asymptotic formula should hold).
func TestCohenKappaCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	probs := [4]float64{0.4, 0.1, 0.15, 0.35}
	pa, pb := probs[0]+probs[1], probs[0]+probs[2]
	pe := pa*pb + (1-pa)*(1-pb)
	trueK := (probs[0] + probs[3] - pe) / (1 - pe)
	rng := rand.New(rand.NewPCG(7, 32))
	const reps, n = 4000, 400
	hit := 0
	for r := 0; r < reps; r++ {
		var cnt [4]int
		for i := 0; i < n; i++ {
			u, cum := rng.Float64(), 0.0
			for j, p := range probs {
				cum += p
				if u < cum || j == 3 {
					cnt[j]++
					break
				}
			}
		}
		if CohenKappa(cnt[0], cnt[1], cnt[2], cnt[3], 0.95).Interval.Contains(trueK) {
			hit++
		}
	}
	if cov := float64(hit) / reps; cov < 0.935 || cov > 0.965 {
		t.Errorf("coverage %.3f of the true kappa %.3f, want about 0.95", cov, trueK)
	}
}
