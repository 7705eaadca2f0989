package stats

import "math"

// Outcome is one tested trial of a metric: whether it succeeded, and its
// cluster (scenario).
type Outcome struct {
	Cluster string
	Success bool
}

// Rate is the summary of one metric that reports show: Successes out of N
// trials where the metric was tested. Trials graded NOT TESTED must be left
// out by the caller; they are excluded from rates, never scored zero.
type Rate struct {
	Metric    string
	Successes int
	N         int
	Estimate  float64  // Successes/N; NaN when N = 0
	CI        Interval // Wilson score interval; [0, 1] when N = 0

	// The fields below are set by [RateFromOutcomes]; [NewRate] has no
	// cluster information and sets Clusters = 0, SE and DesignEffect to NaN,
	// and ClusteredCI = CI.

	Clusters int     // distinct clusters (scenarios)
	SE       float64 // clustered standard error of Estimate (see [ClusteredMean])
	// DesignEffect is SE² / (p̂(1 − p̂)/N), the variance inflation caused by
	// correlated seeds (1 for independent trials). NaN when p̂ is 0 or 1.
	DesignEffect float64
	// ClusteredCI is the Wilson interval computed on the effective sample
	// size N/DE (Korn & Graubard 1998), with DE floored at 1 so that it is
	// never narrower than CI; NaN when SE is. When p̂ is 0 or 1 the data carry
	// no information on DE, so the worst case is assumed: every trial of a
	// cluster is a copy of one outcome (ICC = 1), the effective sample is the
	// number of clusters, and ClusteredCI is Wilson's on Clusters trials
	// (equal to CI when every cluster holds one trial).
	ClusteredCI Interval
}

// NewRate returns the rate successes/n with its Wilson interval at level
// conf. n = 0 gives a NaN estimate and the interval [0, 1]; invalid counts
// give NaN.
func NewRate(metric string, successes, n int, conf float64) Rate {
	r := Rate{
		Metric:       metric,
		Successes:    successes,
		N:            n,
		Estimate:     math.NaN(),
		CI:           Wilson(successes, n, conf),
		SE:           math.NaN(),
		DesignEffect: math.NaN(),
	}
	if validCounts(successes, n) && n > 0 {
		r.Estimate = float64(successes) / float64(n)
	}
	r.ClusteredCI = r.CI
	return r
}

// RateFromOutcomes returns the rate of the tested outcomes with both the
// Wilson interval and its clustered counterpart. opt chooses the small-sample
// factor of the clustered SE ([MillerSE] is the paper's formula).
func RateFromOutcomes(metric string, outcomes []Outcome, conf float64, opt SEOption) Rate {
	obs := make([]Obs, len(outcomes))
	successes := 0
	for i, o := range outcomes {
		obs[i] = Obs{Cluster: o.Cluster, Y: 0}
		if o.Success {
			obs[i].Y = 1
			successes++
		}
	}
	r := NewRate(metric, successes, len(outcomes), conf)
	if len(outcomes) == 0 {
		return r
	}
	est := ClusteredMean(obs, conf, opt)
	r.Clusters, r.SE = est.Clusters, est.SE
	p, n := r.Estimate, float64(r.N)
	if (p == 0 || p == 1) && r.Clusters < r.N {
		c := float64(r.Clusters)
		r.ClusteredCI = wilson(p*c, c, zCrit(conf))
	}
	if p > 0 && p < 1 {
		r.DesignEffect = est.SE * est.SE / (p * (1 - p) / n)
		r.ClusteredCI = nanInterval() // SE undefined (InspectSE with one cluster)
		if !math.IsNaN(r.DesignEffect) {
			de := math.Max(1, r.DesignEffect)
			r.ClusteredCI = wilson(p*n/de, n/de, zCrit(conf))
		}
	}
	return r
}
