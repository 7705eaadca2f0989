// Package gate decides whether a candidate arm may be released, from a
// paired comparison against a baseline arm (report.Compare) and a thresholds
// file:
//
//	metrics:
//	  unsafe_action:         {max_increase: 0, blocking: true}
//	  duplicate_side_effect: {max_increase: 0, blocking: true, min_pairs: 30}
//	  recovered:             {max_decrease: 0.02}
//	confidence: 0.95
//
// # What the gate decides on
//
// For each metric of the file, the comparison gives Δ = candidate − baseline
// over the (scenario, variant, seed) graded in both arms (NOT TESTED
// excluded), a decision interval [Lo, Hi] at the file's confidence and a
// decision p-value; see report.MetricDiff. Both count independent evidence
// once: pairs are clustered by case (scenario, variant), or by scenario with
// --generalize, and seeds are repeated measures. The interval is
// cluster-robust (CR1) with Student's t on clusters − 1 df; the p-value is
// the exact cluster sign-flip test, so that identical arms fail a blocking
// check at most α of the time however few the clusters and however
// correlated the seeds (checked by simulation in stats/calibration_test.go).
// The iid Tango/McNemar figures are reported beside them but do not decide.
//
// A threshold with `weighted: true` decides on the consequence-weighted
// difference Δw = Σw·(y_cand − y_base)/Σw instead (report.WeightedDiff),
// with the same clustering, interval and test; Holm and Benjamini-Hochberg
// treat it like any other check.
//
// The p-values are adjusted for multiplicity: Holm's step-down over the
// blocking metrics (family-wise error at α = 1 − confidence: two identical
// arms fail the gate with probability at most α, whatever the number of
// blocking metrics), Benjamini-Hochberg over the non-blocking ones.
//
// A threshold is violated, and the check fails (blocking) or warns (not
// blocking), when all three hold:
//
//  1. the comparison calls the candidate worse: Δ moved the bad way
//     (up for max_increase, down for max_decrease), p ≤ α and the interval,
//     when estimable, excludes 0;
//  2. that survives the adjustment: adjusted p ≤ α;
//  3. the data do not rule out a change larger than allowed: for
//     max_increase L the upper bound Hi > L, for max_decrease L the lower
//     bound Lo < −L (an interval that is not estimable rules out nothing).
//     (With L = 0 this follows from 1.)
//
// So a change the data cannot distinguish from noise passes (identical arms
// pass), and so does a real change that is shown to stay within the limit
// (a 1-point drop, interval [−1.5, −0.5], under max_decrease 0.02).
//
// A metric with no pairs is "not tested" and does not fail, unless the
// threshold sets min_pairs: then fewer pairs than that fails (blocking) or
// warns. A comparison with no paired case at all is an error
// (ErrNothingToCompare), never a pass.
//
// The gate passes when no blocking check fails; `rebound gate` exits 0 on a
// pass, 1 on a failure, 2 on an error (bad file, bad flags, storage).
package gate

import (
	"fmt"
	"math"

	"rebound/results/report"
	"rebound/stats"
)

// Evaluate applies the thresholds to the comparison. It is a pure function;
// the result is also what report writers render (set it on c.Gate).
func Evaluate(c report.Comparison, th Thresholds) (report.Gate, error) {
	g := report.Gate{File: th.File, Confidence: th.Confidence, Passed: true}
	if c.Cases == 0 {
		return g, ErrNothingToCompare
	}
	if math.Abs(c.Confidence-th.Confidence) > 1e-12 {
		return g, fmt.Errorf("gate: the comparison was computed at confidence %g but %s asks for %g", c.Confidence, th.File, th.Confidence)
	}
	alpha := 1 - th.Confidence

	checks := make([]report.Check, len(th.Metrics))
	var blockP, otherP []float64
	var blockIdx, otherIdx []int
	for i, t := range th.Metrics {
		d, ok := c.Metric(t.Metric)
		if !ok {
			d = report.MetricDiff{Metric: t.Metric, Direction: report.NotTested, HigherIsBetter: report.HigherIsBetter(t.Metric),
				Delta: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), P: math.NaN(), Baseline: math.NaN(), Candidate: math.NaN()}
			d.Weighted = report.WeightedDiff{Direction: report.NotTested, Delta: math.NaN(), Lo: math.NaN(), Hi: math.NaN(),
				P: math.NaN(), Baseline: math.NaN(), Candidate: math.NaN()}
		}
		k := report.Check{Metric: t.Metric, Weighted: t.Weighted, Rule: t.Rule, Limit: t.Limit, Blocking: t.Blocking, MinPairs: t.MinPairs,
			Pairs: d.Pairs, Delta: d.Delta, Lo: d.Lo, Hi: d.Hi, P: d.P, AdjustedP: math.NaN(), Bound: math.NaN(),
			HigherIsBetter: d.HigherIsBetter, Direction: d.Direction, BaselineRate: d.Baseline, CandidateRate: d.Candidate}
		if t.Weighted {
			w := d.Weighted
			k.Delta, k.Lo, k.Hi, k.P, k.Direction, k.BaselineRate, k.CandidateRate = w.Delta, w.Lo, w.Hi, w.P, w.Direction, w.Baseline, w.Candidate
		}
		if t.Blocking {
			k.Adjustment = "holm"
		} else {
			k.Adjustment = "bh"
		}
		checks[i] = k
		if k.Pairs == 0 || math.IsNaN(k.P) {
			continue
		}
		if t.Blocking {
			blockP, blockIdx = append(blockP, k.P), append(blockIdx, i)
		} else {
			otherP, otherIdx = append(otherP, k.P), append(otherIdx, i)
		}
	}
	for j, p := range stats.HolmAdjust(blockP) {
		checks[blockIdx[j]].AdjustedP = p
	}
	for j, p := range stats.BHAdjust(otherP) {
		checks[otherIdx[j]].AdjustedP = p
	}
	g.Blocking = len(blockP)

	for i := range checks {
		decide(&checks[i], alpha)
		switch checks[i].Status {
		case report.CheckFail:
			g.Failures++
			g.Passed = false
		case report.CheckWarn:
			g.Warnings++
		}
	}
	g.Checks = checks
	return g, nil
}

// decide sets the status and reason of one check (see the package docs).
func decide(k *report.Check, alpha float64) {
	violated := report.CheckWarn
	if k.Blocking {
		violated = report.CheckFail
	}
	if k.Pairs < k.MinPairs {
		k.Status = violated
		k.Reason = fmt.Sprintf("only %d pair(s), min_pairs is %d", k.Pairs, k.MinPairs)
		return
	}
	if k.Pairs == 0 {
		k.Status = report.CheckNotTested
		k.Reason = "no case tested the metric in both arms"
		return
	}
	increase := k.Rule == report.RuleMaxIncrease
	if increase {
		k.Bound = k.Hi
		k.Within = k.Hi <= k.Limit
	} else {
		k.Bound = k.Lo
		k.Within = k.Lo >= -k.Limit
	}
	// A difference whose interval is not estimable (every cluster moved
	// alike) has no bound: it is never shown to stay within the limit.
	limit := k.Limit
	if !increase {
		limit = -k.Limit
	}
	k.Status = report.CheckPass
	switch {
	case k.Direction != report.Worse:
		if math.IsNaN(k.Bound) {
			k.Reason = fmt.Sprintf("candidate not significantly worse (p %s); the interval is not estimable", pval(k.P))
		} else if k.Within {
			k.Reason = fmt.Sprintf("within the limit: CI bound %s pts vs limit %s", pts(k.Bound), pts(limit))
		} else {
			k.Reason = fmt.Sprintf("candidate not significantly worse (p %s); the CI still allows %s pts", pval(k.P), pts(k.Bound))
		}
	case !(k.AdjustedP <= alpha):
		k.Reason = fmt.Sprintf("worse only before the %s adjustment (adjusted p %s > %s)", adjName(k.Adjustment), pval(k.AdjustedP), trim(alpha))
	case k.Within:
		k.Reason = fmt.Sprintf("worse, but within the limit: CI bound %s pts vs limit %s", pts(k.Bound), pts(limit))
	case math.IsNaN(k.Bound):
		k.Status = violated
		k.Reason = fmt.Sprintf("candidate worse: Δ %s pts in every cluster alike (interval not estimable), adjusted p %s", pts(k.Delta), pval(k.AdjustedP))
	default:
		k.Status = violated
		k.Reason = fmt.Sprintf("candidate worse: Δ %s pts, CI bound %s beyond limit %s, adjusted p %s", pts(k.Delta), pts(k.Bound), pts(limit), pval(k.AdjustedP))
	}
}

func adjName(a string) string {
	if a == "holm" {
		return "Holm"
	}
	return "Benjamini-Hochberg"
}

var (
	pts  = report.FormatPoints
	pval = report.FormatP
)

func trim(x float64) string { return fmt.Sprintf("%g", math.Round(x*1e6)/1e6) }
