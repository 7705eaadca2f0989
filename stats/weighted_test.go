package stats

import (
	"math"
	"testing"
)

// TestWeightedRate checks the ratio estimator and its clustered
// linearization variance by hand.
//
// Data (cluster: (y, w) …): c1: (1, 2), (0, 1); c2: (1, 1); c3: (0, 3), (1, 1).
// Σw = 8, Σwy = 4, R = 1/2. Residual sums E_c = Σ w(y − R):
// c1: 2·½ − 1·½ = ½; c2: ½; c3: −3·½ + ½ = −1 (they sum to 0).
// Σ E_c² = ¼ + ¼ + 1 = 3/2, so SE = √(3/2)/8 (Miller, no factor) and
// SE = √(3/2 · 3/2)/8 = 3/16 with the C/(C−1) = 3/2 factor.
func TestWeightedRate(t *testing.T) {
	obs := []WeightedObs{{"c1", 1, 2}, {"c1", 0, 1}, {"c2", 1, 1}, {"c3", 0, 3}, {"c3", 1, 1}}
	z := zCrit(0.95)
	tests := []struct {
		opt SEOption
		se  float64
	}{
		{MillerSE, math.Sqrt(1.5) / 8},
		{InspectSE, 3.0 / 16},
	}
	for _, tt := range tests {
		got := WeightedRate(obs, 0.95, tt.opt)
		if !near(got.Value, 0.5, 1e-15) || !near(got.SE, tt.se, 1e-15) || got.Clusters != 3 || got.N != 5 {
			t.Errorf("opt %d: got %+v, want R 0.5, SE %g", tt.opt, got, tt.se)
		}
		checkInterval(t, "weighted CI", got.CI, Interval{0.5 - z*tt.se, 0.5 + z*tt.se}, 1e-15)
	}

	// Scaling all weights leaves R and SE unchanged.
	scaled := make([]WeightedObs, len(obs))
	for i, o := range obs {
		scaled[i] = WeightedObs{o.Cluster, o.Y, 7.5 * o.W}
	}
	a, b := WeightedRate(obs, 0.95, MillerSE), WeightedRate(scaled, 0.95, MillerSE)
	if !near(a.Value, b.Value, 1e-15) || !near(a.SE, b.SE, 1e-15) {
		t.Errorf("scale dependence: %+v vs %+v", a, b)
	}
}

// TestWeightedRateUnitWeights checks that unit weights reproduce
// ClusteredMean exactly (same Miller variance).
func TestWeightedRateUnitWeights(t *testing.T) {
	var w []WeightedObs
	var o []Obs
	for i := range 50 {
		y := float64((i * 7 % 5) % 2)
		c := string(rune('a' + i%6))
		w = append(w, WeightedObs{c, y, 1})
		o = append(o, Obs{c, y})
	}
	for _, opt := range []SEOption{MillerSE, InspectSE} {
		a, b := WeightedRate(w, 0.95, opt), ClusteredMean(o, 0.95, opt)
		if !near(a.Value, b.Value, 1e-15) || !near(a.SE, b.SE, 1e-15) {
			t.Errorf("opt %d: weighted %+v vs mean %+v", opt, a, b)
		}
	}
}

// TestWeightedRateInvalid checks the NaN cases.
func TestWeightedRateInvalid(t *testing.T) {
	for name, obs := range map[string][]WeightedObs{
		"empty":           nil,
		"zero weight":     {{"a", 1, 0}, {"b", 0, 0}},
		"negative weight": {{"a", 1, 2}, {"b", 0, -1}},
		"NaN y":           {{"a", math.NaN(), 1}},
		"Inf weight":      {{"a", 1, math.Inf(1)}},
	} {
		if got := WeightedRate(obs, 0.95, MillerSE); !math.IsNaN(got.Value) || !math.IsNaN(got.SE) {
			t.Errorf("%s: got %+v, want NaN", name, got)
		}
	}
}

// TestWeightedRateInterval: the shown interval is never narrower than the
// Wilson floor on Kish's effective n, and degenerate data is not estimable.
func TestWeightedRateInterval(t *testing.T) {
	// Weights 1, 1, 2 (Kish n = 16/6 = 8/3) on y = 1, 0, 1: R = 3/4.
	obs := []WeightedObs{{"a", 1, 1}, {"b", 0, 1}, {"c", 1, 2}}
	w := WeightedRateInterval(obs, 0.95, MillerSE, 1)
	if !near(w.KishN, 8.0/3, 1e-12) || !near(w.Value, 0.75, 1e-12) {
		t.Fatalf("%+v", w)
	}
	z := 1.959963984540054
	floor := wilson(0.75*8.0/3, 8.0/3, z)
	if !near(w.Floor.Lo, floor.Lo, 1e-12) || !near(w.Floor.Hi, floor.Hi, 1e-12) {
		t.Errorf("floor %+v, want %+v", w.Floor, floor)
	}
	if w.Shown.Lo > w.Floor.Lo || w.Shown.Hi < w.Floor.Hi || w.Shown.Lo > w.CI.Lo || w.Shown.Hi < w.CI.Hi {
		t.Errorf("shown %+v narrower than the floor %+v or the linearization interval %+v", w.Shown, w.Floor, w.CI)
	}
	// A design effect of 2 halves the effective n: a wider floor.
	if w2 := WeightedRateInterval(obs, 0.95, MillerSE, 2); !(w2.Floor.Hi-w2.Floor.Lo > w.Floor.Hi-w.Floor.Lo) {
		t.Errorf("design effect 2 floor %+v not wider than %+v", w2.Floor, w.Floor)
	}
	// Every trial agrees: linearization SE 0 is "not estimable", the floor is shown.
	all := WeightedRateInterval([]WeightedObs{{"a", 1, 1}, {"b", 1, 5}, {"c", 1, 2}}, 0.95, MillerSE, 1)
	if all.NotEstimable != NoVariation || !math.IsNaN(all.SE) || !math.IsNaN(all.CI.Lo) || !all.Floored || !(all.Shown.Lo < 1) {
		t.Errorf("all agree: %+v", all)
	}
	one := WeightedRateInterval([]WeightedObs{{"a", 1, 1}, {"a", 0, 5}}, 0.95, MillerSE, 1)
	if one.NotEstimable != OneCluster || !math.IsNaN(one.SE) {
		t.Errorf("one cluster: %+v", one)
	}
}

// TestWeightedRateIntervalUnknownDesignEffect: at a rate of 0 or 1 the
// design effect is unknown (NaN) and the floor assumes the worst, Kish's
// effective number of clusters: cluster weights 10, 5, 5 (two trials each)
// give 20²/150 = 8/3 clusters, where Kish's n of the six trials is 16/3.
func TestWeightedRateIntervalUnknownDesignEffect(t *testing.T) {
	obs := []WeightedObs{{"a", 1, 5}, {"a", 1, 5}, {"b", 1, 2.5}, {"b", 1, 2.5}, {"c", 1, 2.5}, {"c", 1, 2.5}}
	w := WeightedRateInterval(obs, 0.95, MillerSE, math.NaN())
	want := wilson(8.0/3, 8.0/3, 1.959963984540054)
	if !near(w.Floor.Lo, want.Lo, 1e-12) || w.Floor.Hi != 1 || w.Shown != w.Floor || w.NotEstimable != NoVariation {
		t.Errorf("floor %+v, want Wilson 8/3 of 8/3 %+v (%+v)", w.Floor, want, w)
	}
	// Kish's n of the trials, 400/75 = 16/3, would claim twice the evidence.
	if kish := wilson(16.0/3, 16.0/3, 1.959963984540054); !(kish.Lo > w.Floor.Lo) {
		t.Errorf("the worst-case floor %+v is not wider than Kish's %+v", w.Floor, kish)
	}
}
