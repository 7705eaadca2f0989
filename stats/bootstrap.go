package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// BootstrapResult is the outcome of a cluster bootstrap.
type BootstrapResult struct {
	Estimate float64  // the statistic on the original data
	SE       float64  // standard deviation of the replicates (n − 1 divisor)
	CI       Interval // percentile interval of the replicates
	Reps     int      // replicates with a finite statistic (those used)
}

// ClusterBootstrap is a seeded nonparametric cluster bootstrap. Each of reps
// replicates draws C clusters with replacement from the C clusters of data
// (cluster keys from the cluster function, in order of first appearance),
// concatenates all their rows, and evaluates stat on the result. Resampling
// whole clusters (scenarios) keeps the correlation between seeds of one
// scenario, which a row-level bootstrap would destroy.
//
// The interval is the percentile interval: the α/2 and 1 − α/2 sample
// quantiles of the replicates (linear interpolation between order
// statistics, R's type 7), α = 1 − conf. Replicates where stat is NaN or
// infinite (e.g. a weighted rate whose resample has zero total weight) are
// dropped and not counted in Reps.
//
// The random stream is math/rand/v2's PCG seeded with (seed, a fixed
// constant), so the same data, stat, reps and seed give the same result on
// every platform. Empty data, reps < 2 or conf outside (0, 1) gives NaN SE
// and interval.
func ClusterBootstrap[T any](data []T, cluster func(T) string, stat func([]T) float64,
	reps int, conf float64, seed uint64) BootstrapResult {
	res := BootstrapResult{Estimate: math.NaN(), SE: math.NaN(), CI: nanInterval()}
	if len(data) == 0 {
		return res
	}
	res.Estimate = stat(data)
	if reps < 2 || !(conf > 0 && conf < 1) {
		return res
	}

	// Group rows by cluster into one contiguous buffer: cluster k occupies
	// grouped[start[k]:start[k+1]].
	idx := newClusterIndexer()
	of := make([]int, len(data))
	var size []int
	for i, row := range data {
		c := idx.of(cluster(row))
		if c == len(size) {
			size = append(size, 0)
		}
		size[c]++
		of[i] = c
	}
	nc := len(size)
	start := make([]int, nc+1)
	for c, s := range size {
		start[c+1] = start[c] + s
	}
	grouped := make([]T, len(data))
	fill := slices.Clone(start[:nc])
	for i, row := range data {
		grouped[fill[of[i]]] = row
		fill[of[i]]++
	}

	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	sample := make([]T, 0, 2*len(data))
	values := make([]float64, 0, reps)
	for range reps {
		sample = sample[:0]
		for range nc {
			k := rng.IntN(nc)
			sample = append(sample, grouped[start[k]:start[k+1]]...)
		}
		if v := stat(sample); isFinite(v) {
			values = append(values, v)
		}
	}
	return fromReplicates(res, values, conf)
}

// quantileSorted returns the p-quantile of sorted x by linear interpolation
// between order statistics (Hyndman & Fan type 7, R's default):
// h = (n − 1)p, Q = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
// fromReplicates completes res from the finite replicate values of a
// bootstrap: their count, their standard deviation as the SE, and the
// percentile interval at conf. Fewer than two replicates leave SE and CI as
// they were (NaN). values is sorted in place.
func fromReplicates(res BootstrapResult, values []float64, conf float64) BootstrapResult {
	res.Reps = len(values)
	if len(values) < 2 {
		return res
	}
	slices.Sort(values)
	mean := 0.0
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	ss := 0.0
	for _, v := range values {
		ss += (v - mean) * (v - mean)
	}
	res.SE = math.Sqrt(ss / float64(len(values)-1))
	alpha := 1 - conf
	res.CI = Interval{quantileSorted(values, alpha/2), quantileSorted(values, 1-alpha/2)}
	return res
}

func quantileSorted(x []float64, p float64) float64 {
	h := float64(len(x)-1) * p
	lo := int(math.Floor(h))
	if lo >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}

// BootstrapMean is [ClusterBootstrap] of the mean of obs, the cross-check of
// [ClusteredMean].
func BootstrapMean(obs []Obs, reps int, conf float64, seed uint64) BootstrapResult {
	return ClusterBootstrap(obs, func(o Obs) string { return o.Cluster }, func(s []Obs) float64 {
		sum := 0.0
		for _, o := range s {
			sum += o.Y
		}
		return sum / float64(len(s))
	}, reps, conf, seed)
}

// BootstrapPairedDiff is [ClusterBootstrap] of the mean paired difference
// mean(B − A), the cross-check of [Paired]'s Diff and CI.
func BootstrapPairedDiff(obs []PairedObs, reps int, conf float64, seed uint64) BootstrapResult {
	return ClusterBootstrap(obs, func(o PairedObs) string { return o.Cluster }, func(s []PairedObs) float64 {
		sum := 0.0
		for _, o := range s {
			sum += o.B - o.A
		}
		return sum / float64(len(s))
	}, reps, conf, seed)
}

// BootstrapWeightedRate is [ClusterBootstrap] of Σwy/Σw, the cross-check of
// [WeightedRate]. Replicates with zero total weight are dropped.
func BootstrapWeightedRate(obs []WeightedObs, reps int, conf float64, seed uint64) BootstrapResult {
	return ClusterBootstrap(obs, func(o WeightedObs) string { return o.Cluster }, func(s []WeightedObs) float64 {
		var swy, sw float64
		for _, o := range s {
			swy += o.W * o.Y
			sw += o.W
		}
		return swy / sw
	}, reps, conf, seed)
}

// BootstrapWeightedPairedDiff is [ClusterBootstrap] of the weighted paired
// difference Σw(B − A)/Σw, the cross-check of [PairedClustered]'s interval.
// Replicates with zero total weight are dropped.
func BootstrapWeightedPairedDiff(obs []WeightedPair, reps int, conf float64, seed uint64) BootstrapResult {
	return ClusterBootstrap(obs, func(o WeightedPair) string { return o.Cluster }, func(s []WeightedPair) float64 {
		var swd, sw float64
		for _, o := range s {
			swd += o.W * (o.B - o.A)
			sw += o.W
		}
		return swd / sw
	}, reps, conf, seed)
}
