package stats

import (
	"math"
	"testing"
)

// TestClusteredMean checks Miller (2024, arXiv:2411.00640, Appendix A)
// SE = √(Σ_c (Σ_{i∈c}(y_i − ȳ))²)/n on hand-computed data, and Inspect AI's
// C/(C−1) variance factor.
//
// Case "three scenarios": s1 = {1, 1, 0}, s2 = {0, 0}, s3 = {1, 1, 1, 1};
// n = 9, ȳ = 6/9 = 2/3; cluster residual sums 2 − 3·2/3 = 0,
// 0 − 2·2/3 = −4/3, 4 − 4·2/3 = 4/3; Σ² = 32/9; SE = √(32/9)/9 = 4√2/27;
// Inspect: √(32/9 · 3/2)/9 = 4√3/27.
//
// Case "singletons": every observation its own cluster reduces to the
// plug-in SE √(Σ(y − ȳ)²)/n: y = {1, 0, 0, 1, 1}, ȳ = 3/5,
// Σ(y − ȳ)² = 3·(2/5)² + 2·(3/5)² = 6/5, SE = √(6/5)/5.
func TestClusteredMean(t *testing.T) {
	three := []Obs{{"s1", 1}, {"s1", 1}, {"s1", 0}, {"s2", 0}, {"s2", 0}, {"s3", 1}, {"s3", 1}, {"s3", 1}, {"s3", 1}}
	single := []Obs{{"a", 1}, {"b", 0}, {"c", 0}, {"d", 1}, {"e", 1}}
	tests := []struct {
		name     string
		obs      []Obs
		opt      SEOption
		mean, se float64
		clusters int
	}{
		{"three scenarios, Miller", three, MillerSE, 2.0 / 3, 4 * math.Sqrt2 / 27, 3},
		{"three scenarios, Inspect", three, InspectSE, 2.0 / 3, 4 * math.Sqrt(3) / 27, 3},
		{"singletons, Miller", single, MillerSE, 0.6, math.Sqrt(1.2) / 5, 5},
	}
	z := zCrit(0.95)
	for _, tt := range tests {
		got := ClusteredMean(tt.obs, 0.95, tt.opt)
		if !near(got.Value, tt.mean, 1e-15) || !near(got.SE, tt.se, 1e-15) ||
			got.Clusters != tt.clusters || got.N != len(tt.obs) {
			t.Errorf("%s: got %+v, want mean %g se %g clusters %d", tt.name, got, tt.mean, tt.se, tt.clusters)
		}
		checkInterval(t, tt.name, got.CI, Interval{tt.mean - z*tt.se, math.Min(1, tt.mean+z*tt.se)}, 1e-15)
	}
}

// TestClusteredMeanEdges checks clipping, empty and invalid input, and that
// the result does not depend on the order of the rows.
func TestClusteredMeanEdges(t *testing.T) {
	if e := ClusteredMean(nil, 0.95, MillerSE); !math.IsNaN(e.Value) || !math.IsNaN(e.SE) || e.N != 0 {
		t.Errorf("empty = %+v", e)
	}
	if e := ClusteredMean([]Obs{{"a", math.Inf(1)}}, 0.95, MillerSE); !math.IsNaN(e.Value) {
		t.Errorf("Inf = %+v", e)
	}
	if e := ClusteredMean([]Obs{{"a", 1}, {"a", 0}}, 0.95, InspectSE); !math.IsNaN(e.SE) {
		t.Errorf("one cluster, InspectSE = %+v, want NaN SE", e)
	}
	// Rates are clipped to [0, 1]; other values are not.
	rate := ClusteredMean([]Obs{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 0}}, 0.95, MillerSE)
	if rate.CI.Hi != 1 {
		t.Errorf("rate CI = %v, want upper 1", rate.CI)
	}
	wide := ClusteredMean([]Obs{{"a", 2}, {"b", 2}, {"c", 2}, {"d", -1}}, 0.95, MillerSE)
	if !(wide.CI.Hi > 2) {
		t.Errorf("unclipped CI = %v", wide.CI)
	}
	// Interleaved rows give the same answer as grouped rows.
	grouped := []Obs{{"x", 1}, {"x", 0}, {"y", 1}, {"y", 1}, {"z", 0}}
	mixed := []Obs{{"y", 1}, {"x", 1}, {"z", 0}, {"y", 1}, {"x", 0}}
	g, m := ClusteredMean(grouped, 0.9, MillerSE), ClusteredMean(mixed, 0.9, MillerSE)
	if !near(g.SE, m.SE, 1e-15) || !near(g.Value, m.Value, 1e-15) {
		t.Errorf("order dependence: %+v vs %+v", g, m)
	}
}
