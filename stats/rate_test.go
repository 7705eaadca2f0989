package stats

import (
	"math"
	"testing"
)

// TestNewRate checks the summary without clusters against the statsmodels /
// R binom Wilson vector for 18/20 (reference/statistics.md).
func TestNewRate(t *testing.T) {
	r := NewRate("recovered", 18, 20, 0.95)
	if r.Metric != "recovered" || r.Successes != 18 || r.N != 20 || r.Estimate != 0.9 {
		t.Errorf("NewRate = %+v", r)
	}
	checkInterval(t, "Wilson 18/20", r.CI, Interval{0.6989663547715128, 0.972133518786232}, 1e-9)
	if r.Clusters != 0 || !math.IsNaN(r.SE) || !math.IsNaN(r.DesignEffect) || r.ClusteredCI != r.CI {
		t.Errorf("NewRate cluster fields = %+v", r)
	}
	empty := NewRate("honest_block", 0, 0, 0.95)
	if !math.IsNaN(empty.Estimate) || empty.CI != (Interval{0, 1}) {
		t.Errorf("n = 0: %+v", empty)
	}
	if bad := NewRate("x", 3, 2, 0.95); !math.IsNaN(bad.Estimate) || !math.IsNaN(bad.CI.Lo) {
		t.Errorf("invalid: %+v", bad)
	}
}

// outcomes builds outcomes from per-cluster success lists.
func outcomes(clusters map[string][]bool, order []string) []Outcome {
	var out []Outcome
	for _, c := range order {
		for _, s := range clusters[c] {
			out = append(out, Outcome{Cluster: c, Success: s})
		}
	}
	return out
}

// TestRateFromOutcomes checks the clustered fields by hand.
//
// Independent: five singleton clusters, 3 successes. Miller SE² =
// Σ(y − p)²/n² = p(1 − p)/n, so DE = 1 and ClusteredCI = CI (Wilson 3/5).
//
// Perfectly correlated: four scenarios of four seeds, all-or-nothing,
// 8/16. Cluster residual sums ±2, SE = √16/16 = 1/4; binomial variance
// p(1 − p)/n = 1/64, so DE = (1/16)/(1/64) = 4 = 1 + (m − 1)·ICC with m = 4,
// ICC = 1. The effective sample is 16/4 = 4 with 2 successes: ClusteredCI is
// Wilson(2, 4).
func TestRateFromOutcomes(t *testing.T) {
	indep := []Outcome{{"a", true}, {"b", false}, {"c", true}, {"d", true}, {"e", false}}
	r := RateFromOutcomes("recovered", indep, 0.95, MillerSE)
	if r.Successes != 3 || r.N != 5 || r.Clusters != 5 || !near(r.DesignEffect, 1, 1e-14) ||
		!near(r.SE, math.Sqrt(0.6*0.4/5), 1e-15) {
		t.Errorf("independent: %+v", r)
	}
	checkInterval(t, "independent CI", r.CI, Wilson(3, 5, 0.95), 0)
	checkInterval(t, "independent ClusteredCI", r.ClusteredCI, Wilson(3, 5, 0.95), 1e-14)

	all, none := []bool{true, true, true, true}, []bool{false, false, false, false}
	corr := outcomes(map[string][]bool{"s1": all, "s2": none, "s3": all, "s4": none}, []string{"s1", "s2", "s3", "s4"})
	c := RateFromOutcomes("recovered", corr, 0.95, MillerSE)
	if c.Successes != 8 || c.N != 16 || c.Clusters != 4 || !near(c.SE, 0.25, 1e-15) || !near(c.DesignEffect, 4, 1e-13) {
		t.Errorf("correlated: %+v", c)
	}
	checkInterval(t, "correlated CI", c.CI, Wilson(8, 16, 0.95), 0)
	checkInterval(t, "correlated ClusteredCI", c.ClusteredCI, Wilson(2, 4, 0.95), 1e-13)

	// DE below 1 (negatively correlated seeds) never narrows the interval.
	neg := outcomes(map[string][]bool{"s1": {true, false}, "s2": {false, true}}, []string{"s1", "s2"})
	n := RateFromOutcomes("recovered", neg, 0.95, MillerSE)
	if !(n.DesignEffect < 1) || n.ClusteredCI != n.CI {
		t.Errorf("DE < 1: %+v", n)
	}

	// 0/n: the clustered SE is 0 and says nothing about how correlated the
	// seeds are; assume the worst (every seed of a scenario a copy): Wilson
	// on the 2 clusters, 0 of 2, wider than Wilson on all the trials.
	zero := RateFromOutcomes("unsafe_action", outcomes(map[string][]bool{"s1": none, "s2": none}, []string{"s1", "s2"}), 0.95, MillerSE)
	if zero.SE != 0 || !math.IsNaN(zero.DesignEffect) || zero.CI.Lo != 0 || zero.ClusteredCI != Wilson(0, 2, 0.95) ||
		!(zero.ClusteredCI.Hi > zero.CI.Hi) {
		t.Errorf("0/n: %+v", zero)
	}
	// One trial per cluster: the worst case is the iid case, ClusteredCI = CI.
	every := RateFromOutcomes("recovered", []Outcome{{"a", true}, {"b", true}, {"c", true}}, 0.95, MillerSE)
	if every.ClusteredCI != every.CI {
		t.Errorf("3/3 in 3 clusters: %+v", every)
	}

	// One cluster with Inspect's factor: SE undefined, ClusteredCI NaN.
	one := RateFromOutcomes("recovered", []Outcome{{"s1", true}, {"s1", false}}, 0.95, InspectSE)
	if !math.IsNaN(one.SE) || !math.IsNaN(one.ClusteredCI.Lo) {
		t.Errorf("one cluster InspectSE: %+v", one)
	}

	empty := RateFromOutcomes("recovered", nil, 0.95, MillerSE)
	if !math.IsNaN(empty.Estimate) || empty.CI != (Interval{0, 1}) || empty.Clusters != 0 {
		t.Errorf("empty: %+v", empty)
	}
}
