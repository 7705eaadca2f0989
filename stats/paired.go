package stats

import "math"

// PairedObs is one matched pair: the outcomes of the baseline arm A and the
// candidate arm B on the same (scenario, variant, seed). Cluster is the
// scenario. Outcomes are 0/1 for rates or any real values for a mean
// difference.
type PairedObs struct {
	Cluster string
	A, B    float64
}

// Table2x2 is the paired 2×2 table of binary outcomes of arm A (rows) against
// arm B (columns):
//
//	       B=1   B=0
//	A=1    N11   N12
//	A=0    N21   N22
//
// N12 counts pairs where only the baseline A succeeded, N21 pairs where only
// the candidate B succeeded. The paired difference of proportions is
//
//	δ = p_B − p_A = (N11 + N21)/N − (N11 + N12)/N = (N21 − N12)/N.
//
// Fagerland et al. (2014) and Newcombe (1998) report π1+ − π+1 =
// (n12 − n21)/N for the same layout, that is A − B: their intervals are the
// negation of the ones returned here. PropCIs' b and c are N12 and N21, and
// its (c − b)/n is δ.
type Table2x2 struct {
	N11, N12, N21, N22 int
}

// N returns the number of pairs.
func (t Table2x2) N() int { return t.N11 + t.N12 + t.N21 + t.N22 }

func (t Table2x2) valid() bool {
	return t.N11 >= 0 && t.N12 >= 0 && t.N21 >= 0 && t.N22 >= 0
}

// Diff returns δ = (N21 − N12)/N, candidate minus baseline, or NaN for an
// empty or invalid table.
func (t Table2x2) Diff() float64 {
	if !t.valid() || t.N() == 0 {
		return math.NaN()
	}
	return float64(t.N21-t.N12) / float64(t.N())
}

// McNemarExact returns the exact (conditional) two-sided McNemar p-value and
// its mid-p version. Conditional on the m = N12 + N21 discordant pairs, N12
// is Binomial(m, 1/2) under equal marginals. With k = min(N12, N21):
//
//	p    = min(1, 2·P(X ≤ k))
//	midP = P(more extreme split) + P(equally extreme split)/2
//	     = 2·P(X ≤ k) − P(X = k)   when N12 ≠ N21 (exact p minus the
//	                               probability of the observed split)
//	     = 1 − P(X = k)/2          when N12 = N21 (p = 1)
//
// as defined by Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol
// 13:91, and their contingencytables package. With no discordant pairs there
// is nothing to test and both values are 1 (contingencytables' formula would
// give a mid-p of 1/2 there). An invalid table gives NaN.
func McNemarExact(t Table2x2) (p, midP float64) {
	if !t.valid() {
		return math.NaN(), math.NaN()
	}
	m := t.N12 + t.N21
	if m == 0 {
		return 1, 1
	}
	tail, point := binomHalfLowerTail(min(t.N12, t.N21), m)
	if t.N12 == t.N21 {
		return 1, 1 - point/2
	}
	return math.Min(1, 2*tail), 2*tail - point
}

// pairedMargins returns N, p_A = (N11+N12)/N and p_B = (N11+N21)/N.
func (t Table2x2) pairedMargins() (n, pA, pB float64) {
	n = float64(t.N())
	return n, float64(t.N11+t.N12) / n, float64(t.N11+t.N21) / n
}

// pairedPrecheck validates the table and the level. It returns the critical
// value and ok = false with the result to return when the table is invalid
// (NaN limits) or empty ([−1, 1]).
func pairedPrecheck(t Table2x2, conf float64) (z float64, iv Interval, ok bool) {
	z = zCrit(conf)
	switch {
	case !t.valid() || math.IsNaN(z):
		return z, nanInterval(), false
	case t.N() == 0:
		return z, Interval{-1, 1}, false
	}
	return z, Interval{}, true
}

// NewcombePaired returns Newcombe's (1998, Stat Med 17:2635) method 10
// interval for δ = p_B − p_A: the square-and-add (MOVER) combination of the
// Wilson intervals [l_B, u_B] of p_B = (N11+N21)/N and [l_A, u_A] of
// p_A = (N11+N12)/N with a correlation correction φ:
//
//	Lo = δ − √( (p_B − l_B)² − 2φ(p_B − l_B)(u_A − p_A) + (u_A − p_A)² )
//	Hi = δ + √( (u_B − p_B)² − 2φ(u_B − p_B)(p_A − l_A) + (p_A − l_A)² )
//
// with A = (N11+N12)(N21+N22)(N11+N21)(N12+N22), B = N11·N22 − N12·N21,
// C = B − N/2 if B > N/2, C = 0 if 0 ≤ B ≤ N/2, C = B if B < 0, and
// φ = C/√A (φ = 0 when A = 0). An empty table gives [−1, 1].
func NewcombePaired(t Table2x2, conf float64) Interval {
	z, iv, ok := pairedPrecheck(t, conf)
	if !ok {
		return iv
	}
	n, pA, pB := t.pairedMargins()
	wA := wilson(float64(t.N11+t.N12), n, z)
	wB := wilson(float64(t.N11+t.N21), n, z)
	a := float64(t.N11+t.N12) * float64(t.N21+t.N22) * float64(t.N11+t.N21) * float64(t.N12+t.N22)
	b := float64(t.N11)*float64(t.N22) - float64(t.N12)*float64(t.N21)
	var c float64
	switch {
	case b > n/2:
		c = b - n/2
	case b < 0:
		c = b
	}
	phi := 0.0
	if a > 0 {
		phi = c / math.Sqrt(a)
	}
	d := pB - pA
	dl1, dl2 := pB-wB.Lo, wA.Hi-pA
	du1, du2 := wB.Hi-pB, pA-wA.Lo
	lo := d - math.Sqrt(math.Max(0, dl1*dl1-2*phi*dl1*dl2+dl2*dl2))
	hi := d + math.Sqrt(math.Max(0, du1*du1-2*phi*du1*du2+du2*du2))
	return Interval{math.Max(-1, lo), math.Min(1, hi)}
}

// tangoScore is Tango's score statistic Z(δ) of [TangoPaired] for
// b = N12, c = N21 and n = N. A zero or negative variance, reached only at the
// ends of [−1, 1], gives ±Inf with the sign of the numerator.
func tangoScore(delta, b, c, n float64) float64 {
	w := -b - c + (2*n-c+b)*delta
	// The discriminant is a perfect square at some δ (e.g. N21 = 0), where
	// rounding can push it a hair below zero.
	disc := math.Max(0, w*w+8*n*b*delta*(1-delta))
	p12 := (math.Sqrt(disc) - w) / (4 * n)
	num := c - b - n*delta
	v := n * (2*p12 + delta*(1-delta))
	if v <= 0 {
		switch {
		case num > 0:
			return math.Inf(1)
		case num < 0:
			return math.Inf(-1)
		}
		return 0
	}
	return num / math.Sqrt(v)
}

// TangoPaired returns Tango's asymptotic score interval (Tango 1998, Stat
// Med 17:891) for δ = p_B − p_A = (N21 − N12)/N, the set {δ : |Z(δ)| ≤ z} of
// the score statistic, written with b = N12, c = N21:
//
//	Z(δ) = (c − b − Nδ) / √( N (2 p̃12 + δ(1 − δ)) )
//	p̃12 = ( √(W² + 8 N b δ(1 − δ)) − W ) / (4N),  W = −b − c + (2N − c + b) δ
//
// p̃12 is the closed-form maximum likelihood estimate of P(A=1, B=0) under
// the restriction p21 − p12 = δ (the larger root of
// 2N p² + W p − b δ(1 − δ) = 0). Z decreases in δ and is 0 at the estimate,
// so each limit is found by bisection to machine precision: the lower limit
// solves Z(δ) = z on [−1, δ̂], the upper Z(δ) = −z on [δ̂, 1]. This is the
// interval recommended for paired proportions by Fagerland, Lydersen & Laake
// (2014), Stat Med 33:2850. An empty table gives [−1, 1].
func TangoPaired(t Table2x2, conf float64) Interval {
	z, iv, ok := pairedPrecheck(t, conf)
	if !ok {
		return iv
	}
	b, c, n := float64(t.N12), float64(t.N21), float64(t.N())
	est := (c - b) / n
	// root returns the δ in (lo, hi) where Z(δ) crosses target, given that
	// Z(δ) − target is positive near lo and negative near hi.
	root := func(lo, hi, target float64) float64 {
		for range 200 {
			mid := lo + (hi-lo)/2
			if mid == lo || mid == hi {
				break
			}
			if tangoScore(mid, b, c, n) > target {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo + (hi-lo)/2
	}
	iv = Interval{-1, 1}
	if est > -1 {
		iv.Lo = root(-1, est, z)
	}
	if est < 1 {
		iv.Hi = root(est, 1, -z)
	}
	return iv
}

// WaldPaired returns the Wald interval for δ = (N21 − N12)/N,
//
//	δ ± z · √( (N12 + N21) − (N21 − N12)²/N ) / N,
//
// clipped to [−1, 1]. It is known to undercover for small N or δ near ±1;
// it is provided for comparison with other tools (PropCIs diffpropci.Wald.mp).
// An empty table gives [−1, 1].
func WaldPaired(t Table2x2, conf float64) Interval {
	z, iv, ok := pairedPrecheck(t, conf)
	if !ok {
		return iv
	}
	return pairedWald(float64(t.N12), float64(t.N21), float64(t.N()), z)
}

// AgrestiMinPaired returns the Agresti & Min (2005, Stat Med 24:729) adjusted
// Wald interval: the Wald interval of [WaldPaired] after adding 1/2 to each
// of the four cells (so N12 + 1/2, N21 + 1/2 and N + 2), clipped to [−1, 1]. As in
// PropCIs diffpropci.mp, the estimate it is centred on is the adjusted
// (N21 − N12)/(N + 2), not δ. An empty table gives [−1, 1].
func AgrestiMinPaired(t Table2x2, conf float64) Interval {
	z, iv, ok := pairedPrecheck(t, conf)
	if !ok {
		return iv
	}
	return pairedWald(float64(t.N12)+0.5, float64(t.N21)+0.5, float64(t.N())+2, z)
}

// pairedWald is the Wald interval for (c − b)/n with b = N12, c = N21.
func pairedWald(b, c, n, z float64) Interval {
	d := (c - b) / n
	se := math.Sqrt(math.Max(0, (b+c)-(c-b)*(c-b)/n)) / n
	return Interval{math.Max(-1, d-z*se), math.Min(1, d+z*se)}
}

// PairedResult summarizes a paired comparison of arm B (candidate) against
// arm A (baseline). Differences are B − A.
type PairedResult struct {
	N        int // pairs
	Clusters int // distinct clusters (scenarios)

	MeanA, MeanB float64
	// Diff is the mean paired difference mean(B − A), SE its clustered
	// standard error (see [ClusteredMean]) and CI = Diff ± z·SE, clipped to
	// [−1, 1] when all outcomes lie in [0, 1].
	Diff, SE float64
	CI       Interval
	// Correlation is Pearson's r between A and B across pairs (the φ
	// coefficient for 0/1 outcomes); NaN when either arm is constant.
	// A positive correlation is what makes pairing pay off.
	Correlation float64

	// Binary reports whether every A and B is 0 or 1. The fields below are
	// filled only then. They treat pairs as independent; with several seeds
	// per scenario prefer the clustered CI above, or check the intervals
	// against it.
	Binary                bool
	Table                 Table2x2
	McNemarP, McNemarMidP float64
	Newcombe, Tango       Interval
	Wald, AgrestiMin      Interval
}

// Paired compares two arms on matched pairs. The mean difference B − A gets
// the clustered standard error of Miller (2024) applied to d_i = B_i − A_i
// (cluster = scenario; opt chooses the small-sample factor), and, for 0/1
// outcomes, the 2×2 table with the McNemar exact test and the Newcombe,
// Tango, Wald and Agresti–Min intervals for p_B − p_A.
//
// Empty input gives NaN estimates. Any NaN or infinite outcome gives NaN
// estimates and Binary = false.
func Paired(obs []PairedObs, conf float64, opt SEOption) PairedResult {
	z := zCrit(conf)
	res := PairedResult{N: len(obs), Binary: true}
	idx := newClusterIndexer()
	var dsum []float64
	var dcnt []float64
	var sumA, sumB float64
	unit := true
	for _, o := range obs {
		c := idx.of(o.Cluster)
		if c == len(dsum) {
			dsum = append(dsum, 0)
			dcnt = append(dcnt, 0)
		}
		dsum[c] += o.B - o.A
		dcnt[c]++
		sumA += o.A
		sumB += o.B
		unit = unit && o.A >= 0 && o.A <= 1 && o.B >= 0 && o.B <= 1
		switch {
		case !res.Binary:
		case o.A == 1 && o.B == 1:
			res.Table.N11++
		case o.A == 1 && o.B == 0:
			res.Table.N12++
		case o.A == 0 && o.B == 1:
			res.Table.N21++
		case o.A == 0 && o.B == 0:
			res.Table.N22++
		default:
			res.Binary = false
		}
	}
	res.Clusters = idx.count()
	n := float64(len(obs))
	if len(obs) == 0 || !isFinite(sumA) || !isFinite(sumB) {
		nan := math.NaN()
		res.MeanA, res.MeanB, res.Diff, res.SE, res.Correlation = nan, nan, nan, nan, nan
		res.CI = nanInterval()
		res.Binary = false
		res.Table = Table2x2{}
		return res
	}
	res.MeanA, res.MeanB = sumA/n, sumB/n
	res.Diff = (sumB - sumA) / n
	ss := 0.0
	for c := range dsum {
		r := dsum[c] - dcnt[c]*res.Diff
		ss += r * r
	}
	res.SE = math.Sqrt(opt.factor(res.Clusters)*ss) / n
	res.CI = normalCI(res.Diff, res.SE, z, unit, -1, 1)

	var sab, saa, sbb float64
	for _, o := range obs {
		da, db := o.A-res.MeanA, o.B-res.MeanB
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	res.Correlation = math.NaN()
	if saa > 0 && sbb > 0 {
		res.Correlation = sab / math.Sqrt(saa*sbb)
	}

	if res.Binary {
		res.McNemarP, res.McNemarMidP = McNemarExact(res.Table)
		res.Newcombe = NewcombePaired(res.Table, conf)
		res.Tango = TangoPaired(res.Table, conf)
		res.Wald = WaldPaired(res.Table, conf)
		res.AgrestiMin = AgrestiMinPaired(res.Table, conf)
	} else {
		res.Table = Table2x2{}
	}
	return res
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
