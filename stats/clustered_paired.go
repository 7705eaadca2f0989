package stats

import "math"

// WeightedPair is one matched pair of a paired comparison: the outcomes of
// the baseline arm A and the candidate arm B on one (scenario, variant, seed),
// its consequence weight W ≥ 0, and the cluster it belongs to (the unit of
// independent evidence: a case, or a scenario). Use W = 1 for an unweighted
// comparison.
type WeightedPair struct {
	Cluster string
	A, B, W float64
}

// ClusteredDiff is a paired difference candidate − baseline that counts
// independent evidence once: observations of one cluster are repeated
// measures, not new evidence.
type ClusteredDiff struct {
	// Diff is Δ = Σ w_i (b_i − a_i) / Σ w_i; MeanA and MeanB the weighted
	// means of the two arms (Diff = MeanB − MeanA).
	Diff, MeanA, MeanB float64
	N                  int // pairs
	Clusters           int // distinct clusters G
	SumW               float64

	// SE is the cluster-robust (linearization) standard error with the CR1
	// small-sample factor G/(G−1):
	//
	//	E_c = Σ_{i∈c} w_i (d_i − Δ),   SE² = G/(G−1) · Σ_c E_c² / (Σ w)²
	//
	// and CI = Δ ± t_{G−1} · SE, Student's t on G − 1 degrees of freedom
	// (the reference distribution Stata and Cameron & Miller 2015 recommend
	// with few clusters). TP is the two-sided p-value of Δ/SE on t_{G−1}.
	// All are NaN when NotEstimable is set.
	SE float64
	DF int
	CI Interval
	TP float64
	// NotEstimable says why SE and CI are undefined: fewer than two clusters,
	// or every cluster residual zero (all pairs agree, or every pair moved by
	// the same amount), where the formula would give a zero SE and a point
	// interval, which would read as certainty. Empty when estimable.
	NotEstimable string

	// P and MidP are the two-sided p-values of the cluster sign-flip test
	// ([SignFlipTest]) of the cluster totals Σ_{i∈c} w_i (b_i − a_i): exact
	// under equal arms however few the clusters. PMethod is its method.
	P, MidP float64
	PMethod string

	// DesignEffect is the variance of Δ clustered (CR1) over its variance if
	// every pair were independent (with the matching n/(n−1) factor):
	// how many pairs one cluster's worth of evidence costs. EffectiveN = N/DE
	// is the number of independent pairs the data are worth. Both NaN when
	// either variance is zero or undefined.
	DesignEffect, EffectiveN float64
}

// notEstimable messages.
const (
	OneCluster     = "one cluster: no between-cluster variation to estimate"
	NoVariation    = "every cluster agrees with the estimate: no variation to estimate"
	NoObservations = "no pairs"
)

// PairedClustered compares arm B with arm A on matched, weighted pairs with
// seeds as repeated measures of their cluster (see [ClusteredDiff]). seed
// seeds the Monte Carlo fallback of the sign-flip test. Empty input, a
// negative or non-finite weight, zero total weight or a non-finite outcome
// gives NaN estimates.
func PairedClustered(obs []WeightedPair, conf float64, seed uint64) ClusteredDiff {
	nan := math.NaN()
	res := ClusteredDiff{N: len(obs), Diff: nan, MeanA: nan, MeanB: nan, SE: nan, CI: nanInterval(), TP: nan,
		P: nan, MidP: nan, DesignEffect: nan, EffectiveN: nan}
	idx := newClusterIndexer()
	var sw, swd []float64 // per cluster: Σw, Σw·d
	var totW, totWA, totWB float64
	valid := true
	for _, o := range obs {
		c := idx.of(o.Cluster)
		if c == len(sw) {
			sw = append(sw, 0)
			swd = append(swd, 0)
		}
		valid = valid && o.W >= 0 && isFinite(o.W) && isFinite(o.A) && isFinite(o.B)
		sw[c] += o.W
		swd[c] += o.W * (o.B - o.A)
		totW += o.W
		totWA += o.W * o.A
		totWB += o.W * o.B
	}
	res.Clusters = idx.count()
	res.DF = res.Clusters - 1
	if len(obs) == 0 {
		res.NotEstimable = NoObservations
		return res
	}
	if !valid || !(totW > 0) || !isFinite(totW) {
		return res
	}
	res.SumW = totW
	res.MeanA, res.MeanB = totWA/totW, totWB/totW
	res.Diff = (totWB - totWA) / totW
	sf := SignFlipTest(swd, seed)
	res.P, res.MidP, res.PMethod = sf.P, sf.MidP, sf.Method

	// Cluster residual totals and the iid variance of the same estimator.
	var ssC, ssI float64
	for c := range sw {
		e := swd[c] - res.Diff*sw[c]
		ssC += e * e
	}
	for _, o := range obs {
		e := o.W * (o.B - o.A - res.Diff)
		ssI += e * e
	}
	return clusteredDiffSE(res, ssC, ssI, float64(len(obs)), totW, conf)
}

// clusteredDiffSE finishes a clustered paired difference from the cluster
// residual sum of squares ssC, the iid one ssI, the n observations and the
// total weight: estimability, design effect, the cluster-robust SE, its t
// interval and p-value (g − 1 degrees of freedom). PairedClustered and
// PairedClusteredFromTotals share it, so both routes agree to rounding.
func clusteredDiffSE(res ClusteredDiff, ssC, ssI, n, totW, conf float64) ClusteredDiff {
	g := float64(res.Clusters)
	// Residuals below rounding noise of the totals are zero.
	tiny := 1e-24 * totW * totW
	switch {
	case res.Clusters < 2:
		res.NotEstimable = OneCluster
	case ssC <= tiny:
		res.NotEstimable = NoVariation
	}
	if ssC > tiny && ssI > tiny && n > 1 && res.Clusters > 1 {
		res.DesignEffect = (g / (g - 1) * ssC) / (n / (n - 1) * ssI)
		res.EffectiveN = n / res.DesignEffect
	}
	if res.NotEstimable != "" {
		return res
	}
	res.SE = math.Sqrt(g/(g-1)*ssC) / totW
	t := tCrit(conf, g-1)
	res.CI = Interval{res.Diff - t*res.SE, res.Diff + t*res.SE}
	res.TP = 2 * StudentTCDF(-math.Abs(res.Diff)/res.SE, g-1)
	return res
}

// ArmVariation says how often an arm's outcome varies across the seeds of a
// case: a deterministic agent repeats one outcome, so its seeds add no
// evidence about it.
type ArmVariation struct {
	Cases         int // cases with at least two seeds
	ConstantCases int // of those, cases where every seed gave the same outcome
}

// Constant reports whether the arm never varied across seeds (and at least
// one case had two seeds to vary).
func (v ArmVariation) Constant() bool { return v.Cases > 0 && v.ConstantCases == v.Cases }

// CaseOutcome is one arm's outcome on one seed of a case.
type CaseOutcome struct {
	Case string
	Y    float64
}

// Variation counts the cases (with at least two seeds) whose outcomes are all
// equal. Outcomes of one case need not be contiguous.
func Variation(obs []CaseOutcome) ArmVariation {
	type acc struct {
		n        int
		first    float64
		constant bool
	}
	idx := newClusterIndexer()
	var per []acc
	for _, o := range obs {
		c := idx.of(o.Case)
		if c == len(per) {
			per = append(per, acc{first: o.Y, constant: true})
		}
		per[c].n++
		per[c].constant = per[c].constant && o.Y == per[c].first
	}
	var v ArmVariation
	for _, a := range per {
		if a.n >= 2 {
			v.Cases++
			if a.constant {
				v.ConstantCases++
			}
		}
	}
	return v
}

// Significant is the paired decision at level alpha: the sign-flip p-value
// P ≤ alpha, and the interval excludes 0 when it is estimable (a difference
// with no estimable interval, e.g. every cluster moved the same way, rests
// on the exact test alone).
func (d ClusteredDiff) Significant(alpha float64) bool {
	if math.IsNaN(d.Diff) || d.Diff == 0 || !(d.P <= alpha) {
		return false
	}
	if d.NotEstimable != "" {
		return d.Clusters >= 2
	}
	return d.CI.Lo > 0 || d.CI.Hi < 0
}
