package stats

import (
	"math"
	"testing"
)

// TestStudentT checks the t distribution against R's qt/pt (the same
// values from mpmath's regularized incomplete beta at 40 digits).
func TestStudentT(t *testing.T) {
	quantiles := []struct{ p, df, want float64 }{
		{0.975, 1, 12.706204736174693},
		{0.975, 2, 4.3026527297494618},
		{0.975, 9, 2.262157162798205},
		{0.975, 30, 2.0422724563012379},
		{0.995, 5, 4.0321429835552272},
		{0.95, 3.5, 2.2224334936496007},
	}
	for _, q := range quantiles {
		if got := StudentTQuantile(q.p, q.df); !near(got, q.want, 1e-9) {
			t.Errorf("StudentTQuantile(%g, %g) = %.15g, want %.15g", q.p, q.df, got, q.want)
		}
		if got := StudentTQuantile(1-q.p, q.df); !near(got, -q.want, 1e-9) {
			t.Errorf("StudentTQuantile(%g, %g) = %.15g, want %.15g", 1-q.p, q.df, got, -q.want)
		}
		if got := StudentTCDF(q.want, q.df); !near(got, q.p, 1e-12) {
			t.Errorf("StudentTCDF(%g, %g) = %.15g, want %g", q.want, q.df, got, q.p)
		}
	}
	for _, c := range []struct{ x, df, want float64 }{{-2.5, 7, 0.020496109292876448}, {1.3, 1, 0.79128559983984727}} {
		if got := StudentTCDF(c.x, c.df); !near(got, c.want, 1e-12) {
			t.Errorf("StudentTCDF(%g, %g) = %.15g, want %.15g", c.x, c.df, got, c.want)
		}
	}
	if !math.IsNaN(StudentTQuantile(0.5, 0)) || !math.IsNaN(StudentTCDF(1, -1)) || StudentTQuantile(0.5, 3) != 0 {
		t.Error("invalid degrees of freedom must give NaN; the median is 0")
	}
	if got := StudentTQuantile(0.975, math.Inf(1)); !near(got, 1.959963984540054, 1e-12) {
		t.Errorf("infinite df: %g, want the normal quantile", got)
	}
}

// TestSignFlipTest checks the randomization test by hand and against
// McNemar's exact test, which it is for one trial per cluster.
func TestSignFlipTest(t *testing.T) {
	// ±3 ±1 ±2: |T*| over the 8 patterns is 6, 4, 2, 0, 0, 2, 4, 6; T = 4:
	// P(|T*| ≥ 4) = 4/8, mid-p = (2 + 2/2)/8.
	for _, c := range []struct {
		totals  []float64
		p, midP float64
	}{
		{[]float64{3, -1, 2}, 0.5, 0.375},
		{[]float64{1.5, -0.5, 1}, 0.5, 0.375},          // the same, scaled: integerized by 2
		{[]float64{0.3, -0.1, 0.2}, 0.5, 0.375},        // scaled by 10
		{[]float64{0, 0, 0}, 1, 1},                     // no evidence
		{[]float64{1, 1, 1, 1, 1}, 2.0 / 32, 1.0 / 32}, // all one way: 2/2^5
	} {
		r := SignFlipTest(c.totals, 1)
		if !near(r.P, c.p, 1e-12) || !near(r.MidP, c.midP, 1e-12) || r.Method != "exact" {
			t.Errorf("SignFlipTest(%v) = %+v, want p %g, mid-p %g, exact", c.totals, r, c.p, c.midP)
		}
	}
	// One trial per cluster with 0/1 outcomes: totals ±1, McNemar exact.
	for _, tab := range []Table2x2{{N11: 10, N12: 2, N21: 25, N22: 65}, {N12: 5, N21: 5}, {N12: 0, N21: 7}, {N12: 40, N21: 20, N22: 100}} {
		var totals []float64
		for range tab.N12 {
			totals = append(totals, -1)
		}
		for range tab.N21 {
			totals = append(totals, 1)
		}
		for range tab.N11 + tab.N22 {
			totals = append(totals, 0)
		}
		p, mid := McNemarExact(tab)
		r := SignFlipTest(totals, 1)
		if !near(r.P, p, 1e-12) || !near(r.MidP, mid, 1e-12) {
			t.Errorf("%+v: sign flip %+v, McNemar exact %g mid-p %g", tab, r, p, mid)
		}
	}
	// Irrational totals, few: enumeration; many: Monte Carlo close to the
	// exact answer of the same data scaled to integers.
	r := SignFlipTest([]float64{math.Pi, -math.E, math.Sqrt2}, 1)
	// |±π ±e ±√2|: 7.27, 4.43, 1.84, 0.99 (twice each); T = π − e + √2 = 1.84: P = 6/8.
	if r.Method != "exact" || !near(r.P, 0.75, 1e-12) {
		t.Errorf("irrational totals: %+v, want exact p 0.75", r)
	}
	var ints, irr []float64
	for i := range 40 {
		v := float64(i%7 + 1)
		if i%3 == 0 {
			v = -v
		}
		ints = append(ints, v)
		irr = append(irr, v*math.Pi)
	}
	exact, mc := SignFlipTest(ints, 1), SignFlipTest(irr, 1)
	if mc.Method != "monte-carlo" || math.Abs(mc.P-exact.P) > 0.01 {
		t.Errorf("Monte Carlo p %g (%s) vs exact %g", mc.P, mc.Method, exact.P)
	}
	if again := SignFlipTest(irr, 1); again != mc {
		t.Error("the Monte Carlo p-value is not reproducible with the same seed")
	}
	// Many non-integer totals, none dominating: the normal limit, close to
	// the exact answer of the integer version.
	var manyInts, manyIrr []float64
	for i := range 2000 {
		v := float64(i%5 + 1)
		if i%2 == 0 || i%97 == 0 { // T = −60, Σt² = 22000: p ≈ 0.686
			v = -v
		}
		manyInts = append(manyInts, v)
		manyIrr = append(manyIrr, v*math.Sqrt2)
	}
	ex, nm := SignFlipTest(manyInts, 1), SignFlipTest(manyIrr, 1)
	if ex.Method != "exact" || nm.Method != "normal" || math.Abs(nm.P-ex.P) > 0.01 || math.Abs(nm.P-0.6858) > 1e-3 {
		t.Errorf("normal limit p %g (%s) vs exact %g (%s)", nm.P, nm.Method, ex.P, ex.Method)
	}
	if r := SignFlipTest([]float64{1, math.NaN()}, 1); !math.IsNaN(r.P) {
		t.Error("NaN total must give NaN")
	}
}

// clusteredFixture is the data of stats/testdata/clustered_paired.py.
var clusteredFixture = []WeightedPair{
	{"s1", 1, 0, 5}, {"s1", 1, 0, 5}, {"s1", 0, 0, 1},
	{"s2", 0, 1, 2}, {"s2", 1, 1, 2},
	{"s3", 1, 0, 1}, {"s3", 0, 1, 1}, {"s3", 1, 0, 3},
	{"s4", 0, 0, 4},
	{"s5", 1, 0, 2}, {"s5", 1, 1, 5},
}

// TestPairedClusteredGolden checks every number against the independent
// computation of stats/testdata/clustered_paired.py (mpmath, 40 digits) to
// 1e-9.
func TestPairedClusteredGolden(t *testing.T) {
	type want struct{ diff, meanA, se, lo, hi, tp, de, effN, p, midP float64 }
	for _, c := range []struct {
		name     string
		weighted bool
		want     want
	}{
		{"weighted", true, want{-0.41935483870967742, 0.74193548387096774, 0.24738199287903518, -1.1061973619527503,
			0.26748768453339543, 0.16528775118374618, 1.3453664690899569, 8.1762109081258017, 0.375, 0.25}},
		{"unweighted", false, want{-0.27272727272727273, 0.63636363636363636, 0.20578346442956582, -0.84407376527338519,
			0.29861921981883973, 0.25569849865221849, 0.75352455031599417, 14.598064516129032, 0.5, 0.3125}},
	} {
		obs := make([]WeightedPair, len(clusteredFixture))
		copy(obs, clusteredFixture)
		if !c.weighted {
			for i := range obs {
				obs[i].W = 1
			}
		}
		r := PairedClustered(obs, 0.95, 1)
		w := c.want
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"diff", r.Diff, w.diff}, {"mean A", r.MeanA, w.meanA}, {"mean B", r.MeanB, w.meanA + w.diff},
			{"se", r.SE, w.se}, {"lo", r.CI.Lo, w.lo}, {"hi", r.CI.Hi, w.hi}, {"t p", r.TP, w.tp},
			{"design effect", r.DesignEffect, w.de}, {"effective n", r.EffectiveN, w.effN}, {"p", r.P, w.p}, {"mid-p", r.MidP, w.midP},
		} {
			if !near(f.got, f.want, 1e-9) {
				t.Errorf("%s: %s = %.17g, want %.17g", c.name, f.name, f.got, f.want)
			}
		}
		if r.Clusters != 5 || r.DF != 4 || r.N != 11 || r.NotEstimable != "" {
			t.Errorf("%s: clusters %d df %d n %d not estimable %q", c.name, r.Clusters, r.DF, r.N, r.NotEstimable)
		}
	}
}

// TestPairedClusteredProperties: equal weights give the unweighted
// difference; scaling every weight changes nothing; swapping the arms
// negates the difference and keeps the p-value.
func TestPairedClusteredProperties(t *testing.T) {
	paired, _ := synthetic(30, 4, 9)
	ones, fives, scaled, swapped := make([]WeightedPair, len(paired)), make([]WeightedPair, len(paired)), make([]WeightedPair, len(paired)), make([]WeightedPair, len(paired))
	for i, p := range paired {
		w := float64(i%3*2 + 1)
		ones[i] = WeightedPair{p.Cluster, p.A, p.B, 1}
		fives[i] = WeightedPair{p.Cluster, p.A, p.B, 5}
		scaled[i] = WeightedPair{p.Cluster, p.A, p.B, w}
		swapped[i] = WeightedPair{p.Cluster, p.B, p.A, w}
	}
	u, f := PairedClustered(ones, 0.95, 1), PairedClustered(fives, 0.95, 1)
	unw := Paired(paired, 0.95, MillerSE)
	if !near(u.Diff, unw.Diff, 1e-12) || !near(f.Diff, u.Diff, 1e-12) || !near(f.SE, u.SE, 1e-12) || f.P != u.P ||
		!near(f.CI.Lo, u.CI.Lo, 1e-12) || !near(f.CI.Hi, u.CI.Hi, 1e-12) {
		t.Errorf("equal weights: %+v vs unweighted %+v (Paired Δ %g)", f, u, unw.Diff)
	}
	// CR1 = Miller's variance × G/(G−1).
	if g := float64(u.Clusters); !near(u.SE, unw.SE*math.Sqrt(g/(g-1)), 1e-12) {
		t.Errorf("CR1 SE %g vs Miller SE %g × √(G/(G−1))", u.SE, unw.SE)
	}
	w := PairedClustered(scaled, 0.95, 1)
	for i := range scaled {
		scaled[i].W *= 1000.5
	}
	ws := PairedClustered(scaled, 0.95, 1)
	if !near(ws.Diff, w.Diff, 1e-12) || !near(ws.SE, w.SE, 1e-12) || !near(ws.P, w.P, 1e-12) || !near(ws.DesignEffect, w.DesignEffect, 1e-9) {
		t.Errorf("scaling weights changed the result: %+v vs %+v", ws, w)
	}
	s := PairedClustered(swapped, 0.95, 1)
	if !near(s.Diff, -w.Diff, 1e-12) || !near(s.SE, w.SE, 1e-12) || !near(s.P, w.P, 1e-12) || !near(s.CI.Lo, -w.CI.Hi, 1e-12) {
		t.Errorf("swapping arms: %+v vs %+v", s, w)
	}
}

// TestPairedClusteredDegenerate: one cluster or no variation is "not
// estimable" (NaN SE and interval), never a zero SE or a point interval.
func TestPairedClusteredDegenerate(t *testing.T) {
	cases := []struct {
		name   string
		obs    []WeightedPair
		reason string
		sig    bool
	}{
		{"one cluster", []WeightedPair{{"s", 1, 0, 1}, {"s", 1, 0, 1}, {"s", 0, 0, 1}}, OneCluster, false},
		{"all agree", []WeightedPair{{"a", 1, 1, 1}, {"b", 0, 0, 1}, {"c", 1, 1, 2}}, NoVariation, false},
		// Every one of 8 clusters moved the bad way by the same amount:
		// no variation to estimate, but the exact test says 2/2^8.
		{"all moved alike", func() []WeightedPair {
			var o []WeightedPair
			for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
				o = append(o, WeightedPair{c, 1, 0, 1})
			}
			return o
		}(), NoVariation, true},
	}
	for _, c := range cases {
		r := PairedClustered(c.obs, 0.95, 1)
		if r.NotEstimable != c.reason || !math.IsNaN(r.SE) || !math.IsNaN(r.CI.Lo) || !math.IsNaN(r.CI.Hi) || !math.IsNaN(r.TP) {
			t.Errorf("%s: %+v, want not estimable (%s) with NaN SE and interval", c.name, r, c.reason)
		}
		if r.Significant(0.05) != c.sig {
			t.Errorf("%s: significant = %v, want %v (p %g)", c.name, !c.sig, c.sig, r.P)
		}
	}
	if r := PairedClustered(nil, 0.95, 1); r.NotEstimable != NoObservations || !math.IsNaN(r.Diff) {
		t.Errorf("empty: %+v", r)
	}
	if r := PairedClustered([]WeightedPair{{"a", 1, 0, -1}, {"b", 0, 1, 1}}, 0.95, 1); !math.IsNaN(r.Diff) {
		t.Errorf("negative weight: %+v, want NaN", r)
	}
}

func TestVariation(t *testing.T) {
	v := Variation([]CaseOutcome{{"a", 1}, {"b", 0}, {"a", 1}, {"b", 1}, {"c", 0}, {"a", 1}})
	if v.Cases != 2 || v.ConstantCases != 1 || v.Constant() {
		t.Errorf("%+v: want 2 cases with two seeds, 1 constant", v)
	}
	if v := Variation([]CaseOutcome{{"a", 1}, {"a", 1}, {"b", 0}, {"b", 0}}); !v.Constant() {
		t.Errorf("%+v: want constant", v)
	}
	if v := Variation([]CaseOutcome{{"a", 1}, {"b", 0}}); v.Constant() || v.Cases != 0 {
		t.Errorf("%+v: one seed per case cannot show variation", v)
	}
}

// TestWeightedPairedBootstrapCrossCheck: the seeded cluster bootstrap of
// Δw agrees with the linearization interval on data with many clusters.
func TestWeightedPairedBootstrapCrossCheck(t *testing.T) {
	paired, weighted := synthetic(80, 5, 3)
	obs := make([]WeightedPair, len(paired))
	for i, p := range paired {
		obs[i] = WeightedPair{Cluster: p.Cluster, A: p.A, B: p.B, W: weighted[i].W}
	}
	lin := PairedClustered(obs, 0.95, 1)
	boot := BootstrapWeightedPairedDiff(obs, 4000, 0.95, 7)
	if !near(boot.Estimate, lin.Diff, 1e-12) {
		t.Errorf("bootstrap estimate %g vs %g", boot.Estimate, lin.Diff)
	}
	if r := boot.SE / lin.SE; r < 0.85 || r > 1.15 {
		t.Errorf("bootstrap SE %g vs linearization %g (ratio %.3f)", boot.SE, lin.SE, r)
	}
	if math.Abs(boot.CI.Lo-lin.CI.Lo) > 0.3*lin.SE*2 || math.Abs(boot.CI.Hi-lin.CI.Hi) > 0.3*lin.SE*2 {
		t.Errorf("bootstrap interval %+v vs linearization %+v", boot.CI, lin.CI)
	}
	if again := BootstrapWeightedPairedDiff(obs, 4000, 0.95, 7); again != boot {
		t.Error("the bootstrap is not reproducible with the same seed")
	}
}
