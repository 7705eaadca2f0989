package stats

import (
	"math"
	"testing"
)

// TestBootstrapAgreesWithAnalytic cross-checks the analytic clustered
// intervals against the seeded cluster bootstrap on synthetic data with 200
// scenarios of 10 correlated seeds (see synthetic).
//
// Why the tolerances: for a mean over equal-sized clusters the cluster
// bootstrap variance equals the MillerSE variance Σ_c(S_c − m·ȳ)²/n² exactly
// (in expectation over resamples), and for the weighted ratio it equals the
// linearization variance to first order; so the two should differ only by
// Monte Carlo error and the ratio's small nonlinearity. With R = 2000
// replicates the relative SD of a bootstrap SE is about 1/√(2R) ≈ 1.6%, and a
// 2.5% or 97.5% percentile has SD about √(0.025·0.975/R)/φ(1.96) ≈ 0.06 SE.
// We allow 10% on the SE and 0.25 SE on each limit (about four to six Monte
// Carlo SDs). The seed is fixed, so the test is deterministic, not flaky.
func TestBootstrapAgreesWithAnalytic(t *testing.T) {
	paired, weighted := synthetic(200, 10, 7)
	const reps = 2000
	mean := make([]Obs, len(paired))
	for i, p := range paired {
		mean[i] = Obs{Cluster: p.Cluster, Y: p.B}
	}
	pr := Paired(paired, 0.95, MillerSE)
	cases := []struct {
		name     string
		analytic Estimate
		boot     BootstrapResult
	}{
		{"mean", ClusteredMean(mean, 0.95, MillerSE), BootstrapMean(mean, reps, 0.95, 11)},
		{"paired difference", Estimate{Value: pr.Diff, SE: pr.SE, CI: pr.CI}, BootstrapPairedDiff(paired, reps, 0.95, 12)},
		{"weighted rate", WeightedRate(weighted, 0.95, MillerSE), BootstrapWeightedRate(weighted, reps, 0.95, 13)},
	}
	for _, c := range cases {
		a, b := c.analytic, c.boot
		t.Logf("%s: analytic %.5f SE %.5f CI [%.5f, %.5f]; bootstrap SE %.5f CI [%.5f, %.5f]",
			c.name, a.Value, a.SE, a.CI.Lo, a.CI.Hi, b.SE, b.CI.Lo, b.CI.Hi)
		if b.Reps != reps || !near(b.Estimate, a.Value, 1e-12) {
			t.Errorf("%s: reps %d, estimate %g vs %g", c.name, b.Reps, b.Estimate, a.Value)
		}
		if math.Abs(b.SE/a.SE-1) > 0.10 {
			t.Errorf("%s: bootstrap SE %g vs analytic %g", c.name, b.SE, a.SE)
		}
		if math.Abs(b.CI.Lo-a.CI.Lo) > 0.25*a.SE || math.Abs(b.CI.Hi-a.CI.Hi) > 0.25*a.SE {
			t.Errorf("%s: bootstrap CI %v vs analytic %v", c.name, b.CI, a.CI)
		}
	}
	// The paired difference must be positive here (B is 0.05 better) and the
	// pairing must help: Tango ignores clustering but not the pairing.
	if !(pr.Diff > 0) || !(pr.Correlation > 0.5) {
		t.Errorf("synthetic paired data: %+v", pr)
	}
}

// TestBootstrapReproducible checks that the same seed gives the same result
// and a different seed a different one.
func TestBootstrapReproducible(t *testing.T) {
	_, weighted := synthetic(30, 5, 3)
	a := BootstrapWeightedRate(weighted, 500, 0.9, 42)
	b := BootstrapWeightedRate(weighted, 500, 0.9, 42)
	c := BootstrapWeightedRate(weighted, 500, 0.9, 43)
	if a != b {
		t.Errorf("same seed differs: %+v vs %+v", a, b)
	}
	if a.CI == c.CI && a.SE == c.SE {
		t.Errorf("different seeds agree exactly: %+v", a)
	}
}

// TestClusterBootstrapKeepsClusters checks that whole clusters are resampled:
// every cluster appears in a replicate a multiple of its size times.
func TestClusterBootstrapKeepsClusters(t *testing.T) {
	data := []Obs{{"a", 1}, {"b", 2}, {"a", 1}, {"c", 3}, {"a", 1}, {"c", 3}}
	size := map[string]int{"a": 3, "b": 1, "c": 2}
	whole := func(s []Obs) float64 {
		count := map[string]int{}
		for _, o := range s {
			count[o.Cluster]++
		}
		for k, n := range count {
			if n%size[k] != 0 {
				return 0
			}
		}
		return 1
	}
	r := ClusterBootstrap(data, func(o Obs) string { return o.Cluster }, whole, 300, 0.95, 5)
	if r.Estimate != 1 || r.CI != (Interval{1, 1}) || r.Reps != 300 {
		t.Errorf("clusters were split: %+v", r)
	}
}

// TestClusterBootstrapEdges checks empty data, too few replicates and the
// dropping of undefined replicates.
func TestClusterBootstrapEdges(t *testing.T) {
	if r := BootstrapMean(nil, 100, 0.95, 1); !math.IsNaN(r.Estimate) || !math.IsNaN(r.CI.Lo) {
		t.Errorf("empty: %+v", r)
	}
	if r := BootstrapMean([]Obs{{"a", 1}}, 1, 0.95, 1); r.Estimate != 1 || !math.IsNaN(r.SE) {
		t.Errorf("reps 1: %+v", r)
	}
	// Cluster "z" has zero weight: replicates drawing only "z" are undefined.
	obs := []WeightedObs{{"a", 1, 1}, {"z", 0, 0}}
	r := BootstrapWeightedRate(obs, 400, 0.95, 9)
	if r.Reps >= 400 || r.Reps < 200 || r.Estimate != 1 {
		t.Errorf("undefined replicates: %+v", r)
	}
}

// TestQuantileSorted checks R's type-7 quantile: quantile(1:4, c(0, .25,
// .5, .9, 1)) = 1, 1.75, 2.5, 3.7, 4.
func TestQuantileSorted(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	for _, tt := range []struct{ p, want float64 }{{0, 1}, {0.25, 1.75}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}} {
		if got := quantileSorted(x, tt.p); !near(got, tt.want, 1e-15) {
			t.Errorf("quantile(%g) = %g, want %g", tt.p, got, tt.want)
		}
	}
}
