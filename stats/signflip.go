package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// SignFlipResult is the outcome of [SignFlipTest].
type SignFlipResult struct {
	// P is the two-sided p-value P(|T*| ≥ |T|) of the cluster sign-flip
	// (randomization) test, MidP the mid-p P(|T*| > |T|) + P(|T*| = |T|)/2.
	P, MidP float64
	// Method says how the null distribution was obtained: "exact" (every
	// one of the 2^G sign patterns, by convolution or enumeration),
	// "monte-carlo" (MonteCarloFlips seeded draws; P is then the valid
	// (1 + hits)/(1 + draws) estimate) or "normal" (its normal limit, used
	// only with many clusters none of which dominates).
	Method string
	// Nonzero is the number of clusters with a nonzero total: the only ones
	// that carry evidence (a cluster whose arms agree flips to itself).
	Nonzero int
}

// MonteCarloFlips is the number of random sign patterns [SignFlipTest] draws
// when the exact distribution is too large to compute.
const MonteCarloFlips = 20000

// signFlipBudget bounds the work (clusters × range of the sum) of the exact
// convolution and of the Monte Carlo draws.
const signFlipBudget = 2e7

// normalMinClusters and normalMaxShare say when the normal limit of the
// sign-flip distribution replaces the Monte Carlo draws: at least that many
// nonzero clusters, none carrying more than that share of Σ t_c² (Lindeberg's
// condition; the Berry-Esseen bound on the error of the tail is then below
// 0.56·Σ|t|³/(Σt²)^{3/2} ≤ 0.56·√0.01 = 0.056 relative, and in practice far
// less).
const (
	normalMinClusters = 500
	normalMaxShare    = 0.01
)

// SignFlipTest tests whether cluster totals t_c are symmetric about zero:
// under the null hypothesis that the two arms of a paired comparison are
// exchangeable within each cluster (equal arms), every total
// t_c = Σ_{i∈c} w_i (b_i − a_i) is as likely to be +t_c as −t_c, and the
// statistic T = Σ_c t_c has the randomization distribution of Σ_c s_c t_c over
// the 2^G sign vectors s ∈ {−1, +1}^G. The test is exact in finite samples
// whatever the number of clusters, the number of observations per cluster or
// their correlation (Fisher's randomization test; for one trial per cluster
// and 0/1 outcomes it is McNemar's exact test).
//
// The distribution is computed exactly when the totals are integers after
// scaling by a small common factor (unweighted 0/1 outcomes always are; so
// are whole-number weights, halves, thirds, ...) and the convolution fits in
// a work budget, or by enumeration for at most 16 nonzero totals. Otherwise,
// with at least 500 nonzero totals none of which dominates, its normal limit
// N(0, Σ t_c²) is used (the randomization distribution is a sum of many
// independent small terms); else [MonteCarloFlips] sign patterns drawn from a
// PCG stream seeded with seed.
// Zero totals are dropped (they do not change T). No nonzero total, or a
// non-finite one, gives P = MidP = 1 or NaN respectively.
func SignFlipTest(totals []float64, seed uint64) SignFlipResult {
	var v []float64
	for _, t := range totals {
		if !isFinite(t) {
			return SignFlipResult{P: math.NaN(), MidP: math.NaN(), Method: "exact"}
		}
		if t != 0 {
			v = append(v, t)
		}
	}
	res := SignFlipResult{P: 1, MidP: 1, Method: "exact", Nonzero: len(v)}
	if len(v) == 0 {
		return res
	}
	if ints, ok := integerize(v); ok {
		var k int64
		for _, x := range ints {
			k += absInt(x)
		}
		if float64(k)*float64(len(ints)) <= signFlipBudget {
			res.P, res.MidP = signFlipConvolution(ints)
			return res
		}
	}
	if len(v) <= 16 {
		res.P, res.MidP = signFlipEnumerate(v)
		return res
	}
	if len(v) >= normalMinClusters || float64(len(v))*MonteCarloFlips > 10*signFlipBudget {
		var obs, ss, mx float64
		for _, x := range v {
			obs += x
			ss += x * x
			mx = math.Max(mx, x*x)
		}
		if mx <= normalMaxShare*ss {
			res.Method = "normal"
			res.P = math.Min(1, 2*NormalCDF(-math.Abs(obs)/math.Sqrt(ss)))
			res.MidP = res.P
			return res
		}
	}
	res.Method = "monte-carlo"
	res.P, res.MidP = signFlipMonteCarlo(v, seed)
	return res
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// integerize finds a common scale that makes every value an integer (to
// 1e-9 relative) and divides the integers by their greatest common divisor.
func integerize(v []float64) ([]int64, bool) {
	maxAbs := 0.0
	for _, x := range v {
		maxAbs = math.Max(maxAbs, math.Abs(x))
	}
	for _, scale := range []float64{1, 2, 3, 4, 5, 6, 8, 10, 12, 20, 24, 60, 100, 120, 1000, 10000} {
		if maxAbs*scale > 1e12 {
			break
		}
		out := make([]int64, len(v))
		ok := true
		var g int64
		for i, x := range v {
			s := x * scale
			r := math.Round(s)
			if math.Abs(s-r) > 1e-9*math.Max(1, math.Abs(s)) {
				ok = false
				break
			}
			out[i] = int64(r)
			g = gcd(g, absInt(out[i]))
		}
		if !ok {
			continue
		}
		for i := range out {
			out[i] /= g
		}
		return out, true
	}
	return nil, false
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// signFlipConvolution computes the exact two-sided p and mid-p for integer
// totals. With K = Σ|t_c| and S the sum of |t_c| over the clusters whose sign
// is +, T* = 2S − K, and S has the distribution of a sum of independent
// terms that are |t_c| or 0 with probability 1/2 each: a subset-sum
// convolution over 0..K.
func signFlipConvolution(t []int64) (p, midP float64) {
	var k, obs int64
	abs := make([]int64, len(t))
	for i, x := range t {
		abs[i] = absInt(x)
		k += abs[i]
		obs += x
	}
	slices.Sort(abs)
	f := make([]float64, k+1)
	f[0] = 1
	var top int64
	for _, a := range abs {
		for s := top; s >= 0; s-- {
			f[s+a] += f[s] * 0.5
			f[s] *= 0.5
		}
		top += a
	}
	target := absInt(obs)
	var more, equal float64
	for s := int64(0); s <= k; s++ {
		switch d := absInt(2*s - k); {
		case d > target:
			more += f[s]
		case d == target:
			equal += f[s]
		}
	}
	return math.Min(1, more+equal), math.Min(1, more+equal/2)
}

// signFlipEnumerate visits all 2^n sign patterns of n ≤ 16 real totals.
// Sums within 1e-12 (relative) of |T| count as ties.
func signFlipEnumerate(v []float64) (p, midP float64) {
	obs, scale := 0.0, 0.0
	for _, x := range v {
		obs += x
		scale += math.Abs(x)
	}
	target, tol := math.Abs(obs), 1e-12*scale
	n := len(v)
	var more, equal int
	for mask := 0; mask < 1<<n; mask++ {
		s := 0.0
		for i, x := range v {
			if mask&(1<<i) != 0 {
				s -= x
			} else {
				s += x
			}
		}
		switch d := math.Abs(s); {
		case d > target+tol:
			more++
		case d >= target-tol:
			equal++
		}
	}
	total := float64(int(1) << n)
	return float64(more+equal) / total, (float64(more) + float64(equal)/2) / total
}

// signFlipMonteCarlo estimates the p-values from MonteCarloFlips seeded
// sign patterns; the observed pattern counts as one draw, so P is a valid
// p-value (never 0).
func signFlipMonteCarlo(v []float64, seed uint64) (p, midP float64) {
	obs, scale := 0.0, 0.0
	for _, x := range v {
		obs += x
		scale += math.Abs(x)
	}
	target, tol := math.Abs(obs), 1e-12*scale
	rng := rand.New(rand.NewPCG(seed, 0x5ca1ab1e))
	more, equal := 0, 1 // the observed pattern
	for range MonteCarloFlips {
		s := 0.0
		for i := 0; i < len(v); i += 64 {
			bits := rng.Uint64() // one random bit per total
			for _, x := range v[i:min(i+64, len(v))] {
				// Bit 1 flips the sign of x, without a branch (the bits are
				// random, so a branch is mispredicted half the time): s + (−x)
				// is exactly s − x.
				s += math.Float64frombits(math.Float64bits(x) ^ bits<<63)
				bits >>= 1
			}
		}
		switch d := math.Abs(s); {
		case d > target+tol:
			more++
		case d >= target-tol:
			equal++
		}
	}
	total := float64(MonteCarloFlips + 1)
	return float64(more+equal) / total, (float64(more) + float64(equal)/2) / total
}
