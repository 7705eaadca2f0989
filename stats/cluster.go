package stats

import "math"

// Obs is one observation of a metric in a cluster (cluster = scenario; the
// observations of a cluster are its seeds and variants).
type Obs struct {
	Cluster string
	Y       float64
}

// SEOption selects the small-sample factor of clustered variances.
type SEOption int

const (
	// MillerSE is the default: the clustered variance of Miller (2024),
	// arXiv:2411.00640, Appendix A, with no small-sample factor,
	//
	//	Var = Σ_c (Σ_{i∈c} r_i)² / n²,
	//
	// where r_i is the residual of observation i and n the number of
	// observations (for a weighted rate, n² becomes (Σw)²).
	MillerSE SEOption = iota
	// InspectSE multiplies the MillerSE variance by C/(C−1), C the number of
	// clusters, as Inspect AI's stderr(cluster=...) does. With one cluster the
	// factor is undefined and the SE is NaN.
	InspectSE
)

// factor returns the multiplier of the clustered variance for c clusters.
func (o SEOption) factor(c int) float64 {
	switch o {
	case MillerSE:
		return 1
	case InspectSE:
		if c < 2 {
			return math.NaN()
		}
		return float64(c) / float64(c-1)
	}
	return math.NaN()
}

// Estimate is a point estimate with a clustered standard error and a
// normal-approximation interval.
type Estimate struct {
	Value    float64  // point estimate; NaN when undefined
	SE       float64  // clustered standard error
	CI       Interval // Value ± z·SE, clipped as documented by the producer
	N        int      // observations used
	Clusters int      // distinct clusters C
}

// clusterIndexer maps cluster keys to dense indices 0, 1, … in order of first
// appearance. It remembers the previous key, so data sorted or grouped by
// cluster costs one string comparison per row instead of a map lookup.
type clusterIndexer struct {
	index   map[string]int
	lastKey string
	last    int
}

func newClusterIndexer() *clusterIndexer {
	return &clusterIndexer{index: make(map[string]int), last: -1}
}

func (ci *clusterIndexer) of(key string) int {
	if ci.last >= 0 && key == ci.lastKey {
		return ci.last
	}
	i, ok := ci.index[key]
	if !ok {
		i = len(ci.index)
		ci.index[key] = i
	}
	ci.lastKey, ci.last = key, i
	return i
}

func (ci *clusterIndexer) count() int { return len(ci.index) }

// normalCI returns v ± z·se, clipped to [lo, hi] when clip is set.
func normalCI(v, se, z float64, clip bool, lo, hi float64) Interval {
	iv := Interval{v - z*se, v + z*se}
	if clip {
		iv.Lo = math.Max(lo, iv.Lo)
		iv.Hi = math.Min(hi, iv.Hi)
	}
	return iv
}

// ClusteredMean returns the mean of obs with its clustered standard error
// (Miller 2024, Appendix A):
//
//	ȳ = Σ y_i / n,   SE² = f · Σ_c ( Σ_{i∈c} (y_i − ȳ) )² / n²
//
// where f = 1 for [MillerSE] (the paper's formula, the default) and
// f = C/(C−1) for [InspectSE]. With every observation in its own cluster and
// f = 1 this is the plug-in SE √(Σ(y_i − ȳ)²)/n.
//
// The interval is the normal approximation ȳ ± z·SE; like any clustered
// sandwich estimate it needs a moderate number of clusters (a few dozen
// scenarios) and is optimistic with only a handful. When every y lies in
// [0, 1] (a rate) it is clipped to [0, 1]. For 0/1 outcomes at 0 or 1 the SE
// is 0 and the interval degenerates; report a Wilson interval for rates
// ([Rate]). Empty input gives NaN; any NaN or infinite y gives NaN.
func ClusteredMean(obs []Obs, conf float64, opt SEOption) Estimate {
	z := zCrit(conf)
	idx := newClusterIndexer()
	var sums, counts []float64
	total := 0.0
	unit := true
	for _, o := range obs {
		c := idx.of(o.Cluster)
		if c == len(sums) {
			sums = append(sums, 0)
			counts = append(counts, 0)
		}
		sums[c] += o.Y
		counts[c]++
		total += o.Y
		unit = unit && o.Y >= 0 && o.Y <= 1
	}
	est := Estimate{N: len(obs), Clusters: idx.count()}
	if len(obs) == 0 || math.IsNaN(total) || math.IsInf(total, 0) {
		est.Value, est.SE, est.CI = math.NaN(), math.NaN(), nanInterval()
		return est
	}
	n := float64(len(obs))
	mean := total / n
	// Σ_{i∈c}(y_i − ȳ) = S_c − n_c·ȳ.
	ss := 0.0
	for c := range sums {
		r := sums[c] - counts[c]*mean
		ss += r * r
	}
	est.Value = mean
	est.SE = math.Sqrt(opt.factor(est.Clusters)*ss) / n
	est.CI = normalCI(mean, est.SE, z, unit, 0, 1)
	return est
}
