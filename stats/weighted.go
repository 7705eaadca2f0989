package stats

import "math"

// WeightedObs is one trial outcome Y with its consequence weight W ≥ 0 (from
// the scenario: a duplicate refund outweighs an extra read), in a cluster
// (scenario).
type WeightedObs struct {
	Cluster string
	Y, W    float64
}

// WeightedRate returns the consequence-weighted rate (a ratio estimator)
//
//	R = Σ w_i y_i / Σ w_i
//
// with its clustered linearization (Taylor series) standard error. The
// linearized residual of trial i is e_i = w_i (y_i − R); residuals are summed
// within each cluster, E_c = Σ_{i∈c} e_i (these sum to zero over clusters by
// construction of R), and
//
//	Var(R) = f · Σ_c E_c² / (Σ_i w_i)²
//
// with f = 1 for [MillerSE] (the default; with all weights 1 this is exactly
// [ClusteredMean]'s variance) and f = C/(C−1) for [InspectSE], the usual
// with-replacement small-sample factor for C sampled clusters.
//
// The interval is R ± z·SE, clipped to [0, 1] when every y lies in [0, 1].
// Empty input, Σw = 0, a negative or non-finite weight, or a non-finite y
// gives NaN.
func WeightedRate(obs []WeightedObs, conf float64, opt SEOption) Estimate {
	z := zCrit(conf)
	idx := newClusterIndexer()
	var swy, sw []float64
	var totWY, totW float64
	unit, valid := true, true
	for _, o := range obs {
		c := idx.of(o.Cluster)
		if c == len(sw) {
			swy = append(swy, 0)
			sw = append(sw, 0)
		}
		valid = valid && o.W >= 0 // NaN weights fail here too
		swy[c] += o.W * o.Y
		sw[c] += o.W
		totWY += o.W * o.Y
		totW += o.W
		unit = unit && o.Y >= 0 && o.Y <= 1
	}
	est := Estimate{N: len(obs), Clusters: idx.count()}
	// An infinite weight or a non-finite y makes a total non-finite.
	if !valid || !(totW > 0) || !isFinite(totW) || !isFinite(totWY) {
		est.Value, est.SE, est.CI = math.NaN(), math.NaN(), nanInterval()
		return est
	}
	r := totWY / totW
	ss := 0.0
	for c := range sw {
		e := swy[c] - r*sw[c] // E_c = Σ w_i y_i − R Σ w_i over the cluster
		ss += e * e
	}
	est.Value = r
	est.SE = math.Sqrt(opt.factor(est.Clusters)*ss) / totW
	est.CI = normalCI(r, est.SE, z, unit, 0, 1)
	return est
}

// WeightedInterval is a consequence-weighted rate with the interval reports
// show.
type WeightedInterval struct {
	Estimate // the linearization estimate of [WeightedRate]
	// KishN is Kish's effective sample size (Σw)²/Σw², the number of
	// equally weighted trials the weighted ones are worth.
	KishN float64
	// Floor is the Wilson interval of the weighted rate on KishN divided by
	// the unweighted clustered design effect (floored at 1): the narrowest
	// interval the weighted rate may claim, since weighting never adds
	// information. When that design effect is unknown (NaN: the rate is 0 or
	// 1, so the data say nothing about how correlated a cluster's trials
	// are) the worst case is assumed: Kish's effective number of clusters
	// (Σ_c W_c)²/Σ_c W_c², W_c a cluster's total weight, if smaller.
	Floor Interval
	// Shown is the union of CI and Floor; Floored says the floor widened it.
	Shown   Interval
	Floored bool
	// NotEstimable says why the linearization SE is undefined (fewer than
	// two clusters, or every cluster residual zero: all trials agree); CI
	// and SE are then NaN and Shown is the floor alone.
	NotEstimable string
}

// WeightedRateInterval is [WeightedRate] for 0/1 outcomes with the Wilson
// floor of [WeightedInterval]. designEffect is the unweighted rate's
// clustered design effect (below 1 counts as 1; NaN: unknown, the worst case).
func WeightedRateInterval(obs []WeightedObs, conf float64, opt SEOption, designEffect float64) WeightedInterval {
	w := WeightedInterval{Estimate: WeightedRate(obs, conf, opt), Floor: nanInterval(), Shown: nanInterval()}
	if math.IsNaN(w.Value) {
		return w
	}
	var sw, sww float64
	idx := newClusterIndexer()
	var wc []float64
	for _, o := range obs {
		sw += o.W
		sww += o.W * o.W
		c := idx.of(o.Cluster)
		if c == len(wc) {
			wc = append(wc, 0)
		}
		wc[c] += o.W
	}
	w.KishN = sw * sw / sww
	n := w.KishN / math.Max(1, designEffect)
	if math.IsNaN(designEffect) {
		var scc float64
		for _, x := range wc {
			scc += x * x
		}
		n = math.Min(w.KishN, sw*sw/scc)
	}
	return w.floored(n, zCrit(conf))
}

// floored completes w (Value, SE, CI and Clusters set) with its floor, the
// Wilson interval of w.Value on n effective trials, and the interval shown:
// the union of the two, or the floor alone when the clustered interval is
// not estimable (one cluster, or no variation).
func (w WeightedInterval) floored(n, z float64) WeightedInterval {
	w.Floor = wilson(w.Value*n, n, z)
	switch {
	case w.Clusters < 2:
		w.NotEstimable = OneCluster
	case !(w.SE > 0):
		w.NotEstimable = NoVariation
	}
	if w.NotEstimable != "" {
		w.SE, w.CI = math.NaN(), nanInterval()
		w.Shown, w.Floored = w.Floor, true
		return w
	}
	w.Shown = Interval{math.Min(w.CI.Lo, w.Floor.Lo), math.Max(w.CI.Hi, w.Floor.Hi)}
	w.Floored = w.Shown != w.CI
	return w
}
