package stats

import (
	"math"
	"math/rand/v2"
)

// The estimators of this file take per-cluster sufficient statistics
// instead of one value per observation: the clustered variances, the
// sign-flip test and the cluster bootstrap only ever use cluster totals
// (plus a few sums over observations for the iid comparisons), so a database
// can compute them where the data live and send one row per cluster. Each
// equals its per-observation counterpart (named in its doc) up to the order
// of floating-point summation; the tests check that.

// ClusterCount is one cluster's tested observations of a 0/1 metric: N
// tested, K successes.
type ClusterCount struct{ N, K int }

// RateFromClusterCounts is [RateFromOutcomes] from per-cluster counts.
// Clusters with N = 0 are ignored (they hold no outcome).
func RateFromClusterCounts(metric string, clusters []ClusterCount, conf float64, opt SEOption) Rate {
	var n, k, c int
	for _, cl := range clusters {
		if cl.N > 0 {
			n += cl.N
			k += cl.K
			c++
		}
	}
	r := NewRate(metric, k, n, conf)
	if n == 0 {
		return r
	}
	// ClusteredMean of 0/1 outcomes: Σ_c (K_c − N_c·p̂)² / n².
	mean := float64(k) / float64(n)
	ss := 0.0
	for _, cl := range clusters {
		if cl.N > 0 {
			e := float64(cl.K) - float64(cl.N)*mean
			ss += e * e
		}
	}
	r.Clusters = c
	r.SE = math.Sqrt(opt.factor(c)*ss) / float64(n)
	p, nf := r.Estimate, float64(n)
	if (p == 0 || p == 1) && r.Clusters < r.N {
		cf := float64(r.Clusters)
		r.ClusteredCI = wilson(p*cf, cf, zCrit(conf))
	}
	if p > 0 && p < 1 {
		r.DesignEffect = r.SE * r.SE / (p * (1 - p) / nf)
		r.ClusteredCI = nanInterval()
		if !math.IsNaN(r.DesignEffect) {
			de := math.Max(1, r.DesignEffect)
			r.ClusteredCI = wilson(p*nf/de, nf/de, zCrit(conf))
		}
	}
	return r
}

// WeightedClusterTotal is one cluster of a consequence-weighted rate: the
// totals Σw and Σw·y of its observations and SumWW = Σw² over them (Kish's
// effective sample size needs it). Obs counts the observations; a cluster
// with none is ignored.
type WeightedClusterTotal struct {
	Obs                int
	SumW, SumWY, SumWW float64
}

// WeightedRateIntervalFromTotals is [WeightedRateInterval] from per-cluster
// totals of 0/1 outcomes.
func WeightedRateIntervalFromTotals(clusters []WeightedClusterTotal, conf float64, opt SEOption, designEffect float64) WeightedInterval {
	z := zCrit(conf)
	est := Estimate{}
	var totWY, totW, totWW float64
	valid := true
	for _, c := range clusters {
		if c.Obs == 0 {
			continue
		}
		est.N += c.Obs
		est.Clusters++
		valid = valid && c.SumW >= 0 && c.SumWW >= 0
		totWY += c.SumWY
		totW += c.SumW
		totWW += c.SumWW
	}
	w := WeightedInterval{Floor: nanInterval(), Shown: nanInterval()}
	if !valid || !(totW > 0) || !isFinite(totW) || !isFinite(totWY) {
		est.Value, est.SE, est.CI = math.NaN(), math.NaN(), nanInterval()
		w.Estimate = est
		return w
	}
	r := totWY / totW
	ss, scc := 0.0, 0.0
	for _, c := range clusters {
		if c.Obs == 0 {
			continue
		}
		e := c.SumWY - r*c.SumW
		ss += e * e
		scc += c.SumW * c.SumW
	}
	est.Value = r
	est.SE = math.Sqrt(opt.factor(est.Clusters)*ss) / totW
	est.CI = normalCI(r, est.SE, z, true, 0, 1)
	w.Estimate = est

	w.KishN = totW * totW / totWW
	n := w.KishN / math.Max(1, designEffect)
	if math.IsNaN(designEffect) {
		n = math.Min(w.KishN, totW*totW/scc)
	}
	return w.floored(n, z)
}

// PairedClusterTotal is one cluster of a weighted paired comparison: over
// its N pairs (a, b, w), d = b − a, the totals
//
//	SumW = Σw, SumWA = Σw·a, SumWB = Σw·b, SumWD = Σw·d,
//	SumW2 = Σw², SumW2D = Σw²·d, SumW2D2 = Σw²·d²
//
// (the last three give the iid variance of the design effect). A cluster
// with N = 0 is ignored.
type PairedClusterTotal struct {
	N                         int
	SumW, SumWA, SumWB, SumWD float64
	SumW2, SumW2D, SumW2D2    float64
}

// Add accumulates another cluster's totals (merging clusters).
func (t *PairedClusterTotal) Add(o PairedClusterTotal) {
	t.N += o.N
	t.SumW += o.SumW
	t.SumWA += o.SumWA
	t.SumWB += o.SumWB
	t.SumWD += o.SumWD
	t.SumW2 += o.SumW2
	t.SumW2D += o.SumW2D
	t.SumW2D2 += o.SumW2D2
}

// PairedClusteredFromTotals is [PairedClustered] from per-cluster totals,
// the clusters in the order PairedClustered would meet them (first
// appearance), which the Monte Carlo fallback of the sign-flip test depends
// on.
func PairedClusteredFromTotals(clusters []PairedClusterTotal, conf float64, seed uint64) ClusteredDiff {
	nan := math.NaN()
	res := ClusteredDiff{Diff: nan, MeanA: nan, MeanB: nan, SE: nan, CI: nanInterval(), TP: nan,
		P: nan, MidP: nan, DesignEffect: nan, EffectiveN: nan}
	var totW, totWA, totWB, totW2, totW2D, totW2D2 float64
	swd := make([]float64, 0, len(clusters))
	valid := true
	for _, c := range clusters {
		if c.N == 0 {
			continue
		}
		res.N += c.N
		res.Clusters++
		valid = valid && c.SumW >= 0 && isFinite(c.SumW) && isFinite(c.SumWA) && isFinite(c.SumWB) && isFinite(c.SumWD)
		swd = append(swd, c.SumWD)
		totW += c.SumW
		totWA += c.SumWA
		totWB += c.SumWB
		totW2 += c.SumW2
		totW2D += c.SumW2D
		totW2D2 += c.SumW2D2
	}
	res.DF = res.Clusters - 1
	if res.N == 0 {
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

	var ssC float64
	for _, c := range clusters {
		if c.N == 0 {
			continue
		}
		e := c.SumWD - res.Diff*c.SumW
		ssC += e * e
	}
	// Σ_i (w_i (d_i − Δ))² = Σw²d² − 2Δ Σw²d + Δ² Σw², never negative.
	ssI := math.Max(0, totW2D2-2*res.Diff*totW2D+res.Diff*res.Diff*totW2)
	return clusteredDiffSE(res, ssC, ssI, float64(res.N), totW, conf)
}

// BootstrapRatioTotals is the cluster bootstrap of a ratio Σnum/Σden from
// per-cluster totals: [BootstrapPairedDiff] with num = Σ(b − a) and den =
// the cluster's pair count, [BootstrapWeightedPairedDiff] with num = Σw(b − a)
// and den = Σw. It draws the same clusters as [ClusterBootstrap] with the
// same seed, so it gives the same interval up to floating-point summation
// order, in O(clusters) memory whatever the number of observations.
func BootstrapRatioTotals(num, den []float64, reps int, conf float64, seed uint64) BootstrapResult {
	res := BootstrapResult{Estimate: math.NaN(), SE: math.NaN(), CI: nanInterval()}
	if len(num) == 0 || len(num) != len(den) {
		return res
	}
	var sn, sd float64
	for c := range num {
		sn += num[c]
		sd += den[c]
	}
	res.Estimate = sn / sd
	if reps < 2 || !(conf > 0 && conf < 1) {
		return res
	}
	nc := len(num)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	values := make([]float64, 0, reps)
	for range reps {
		var n, d float64
		for range nc {
			k := rng.IntN(nc)
			n += num[k]
			d += den[k]
		}
		if v := n / d; isFinite(v) {
			values = append(values, v)
		}
	}
	return fromReplicates(res, values, conf)
}
