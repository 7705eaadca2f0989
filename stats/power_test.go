package stats

import (
	"math"
	"testing"
)

// TestConnorPairs checks Connor's (1987) paired sample size against the
// published example of powerandsamplesize.com, "Compare Paired Proportions:
// McNemar's Z-test, 2-Sided Equality" (R code and output, citing Connor 1987,
// Biometrics 43:207, p. 209): p01 = 0.45, p10 = 0.05, α = 0.05, power 0.80 →
// ceiling(n) = 23. By hand, ψ = 0.5, d = 0.4:
//
//	n = (1.959964·√0.5 + 0.841621·√(0.5 − 0.16))² / 0.16
//	  = (1.385904 + 0.490745)² / 0.16 = 22.0113 (mpmath: 22.0113244274)
func TestConnorPairs(t *testing.T) {
	n := ConnorPairs(0.4, 0.5, 0.05, 0.80)
	if math.Ceil(n) != 23 || !near(n, 22.0113244274, 1e-9) {
		t.Errorf("ConnorPairs = %.6f, want 22.0113244274 (ceiling 23)", n)
	}
	if m := ConnorPairs(-0.4, 0.5, 0.05, 0.80); m != n {
		t.Errorf("sign of d changed n: %g vs %g", m, n)
	}
	for _, bad := range [][4]float64{{0, 0.5, 0.05, 0.8}, {0.6, 0.5, 0.05, 0.8}, {0.1, 1.2, 0.05, 0.8}, {0.1, 0.5, 0, 0.8}, {0.1, 0.5, 0.05, 1}} {
		if v := ConnorPairs(bad[0], bad[1], bad[2], bad[3]); !math.IsNaN(v) {
			t.Errorf("ConnorPairs%v = %g, want NaN", bad, v)
		}
	}
}

// TestPairedSampleSize checks the design-effect scaling on the same textbook
// design (baseline p_A = 0.3, so p10 = 0.05 ≤ p_A and p01 = 0.45 ≤ 1 − p_A):
//   - m = 1 seed, any ICC: DE = 1, 23 clusters = 23 pairs (the textbook value);
//   - m = 5, ICC = 0.1: DE = 1 + 4·0.1 = 1.4, n·DE = 30.8159, ⌈30.8159/5⌉ = 7
//     clusters, 35 pairs;
//   - m = 10, ICC = 0.05: DE = 1.45 (Kish), n·DE = 31.9164 → 4 clusters;
//   - deterministic arms (ICC = 1): DE = m, so 5 or 50 seeds need as many
//     clusters as one.
//
// With the t correction (clusters G: Connor's n with t quantiles on G − 1
// df, solved by mpmath: G = 25 with n_t(25) = 23.9861 for m = 1; 9 with
// n_t(9) = 28.8610 for m = 5, ICC 0.1; 6 with n_t(6) = 34.6290 for m = 10,
// ICC 0.05).
func TestPairedSampleSize(t *testing.T) {
	base := PairedDesign{Baseline: 0.3, Diff: 0.4, Discordance: 0.5, Alpha: 0.05, Power: 0.8}
	tests := []struct {
		seeds          int
		icc            float64
		de             float64
		normal, g, prs int
	}{
		{1, 0.3, 1, 23, 25, 25},
		{5, 0.1, 1.4, 7, 9, 45},
		{10, 0.05, 1.45, 4, 6, 60},
		{5, 1, 5, 23, 25, 125},
		{50, 1, 50, 23, 25, 1250},
	}
	for _, tt := range tests {
		d := base
		d.Seeds, d.ICC = tt.seeds, tt.icc
		plan, err := PairedSampleSize(d)
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if !near(plan.DesignEffect, tt.de, 1e-12) || plan.NormalClusters != tt.normal || plan.Clusters != tt.g || plan.Pairs != tt.prs ||
			!near(plan.IndependentPairs, 22.0113244274, 1e-9) {
			t.Errorf("seeds %d icc %g: %+v, want DE %g, %d clusters (%d normal), %d pairs", tt.seeds, tt.icc, plan, tt.de, tt.g, tt.normal, tt.prs)
		}
	}

	// Unknown discordance: independent arms, ψ = p_A(1−p_B) + p_B(1−p_A).
	// p_A = 0.5, d = 0.1: ψ = 0.5·0.4 + 0.6·0.5 = 0.5, same as given explicitly.
	auto, err := PairedSampleSize(PairedDesign{Baseline: 0.5, Diff: 0.1, Seeds: 1, Alpha: 0.05, Power: 0.8})
	explicit, err2 := PairedSampleSize(PairedDesign{Baseline: 0.5, Diff: 0.1, Discordance: 0.5, Seeds: 1, Alpha: 0.05, Power: 0.8})
	if err != nil || err2 != nil || auto != explicit {
		t.Errorf("independence default: %+v %v vs %+v %v", auto, err, explicit, err2)
	}

	for name, d := range map[string]PairedDesign{
		"rate above 1":       {Baseline: 0.8, Diff: 0.3, Discordance: 0.5, Seeds: 1, Alpha: 0.05, Power: 0.8},
		"zero diff":          {Baseline: 0.5, Diff: 0, Discordance: 0.5, Seeds: 1, Alpha: 0.05, Power: 0.8},
		"discordance < |d|":  {Baseline: 0.5, Diff: 0.3, Discordance: 0.2, Seeds: 1, Alpha: 0.05, Power: 0.8},
		"p10 above baseline": {Baseline: 0.02, Diff: 0.4, Discordance: 0.5, Seeds: 1, Alpha: 0.05, Power: 0.8},
		"no seeds":           {Baseline: 0.3, Diff: 0.4, Discordance: 0.5, Seeds: 0, Alpha: 0.05, Power: 0.8},
		"ICC above 1":        {Baseline: 0.3, Diff: 0.4, Discordance: 0.5, Seeds: 2, ICC: 1.5, Alpha: 0.05, Power: 0.8},
		"no power":           {Baseline: 0.3, Diff: 0.4, Discordance: 0.5, Seeds: 2, Alpha: 0.05},
	} {
		if _, err := PairedSampleSize(d); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
