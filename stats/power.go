package stats

import (
	"errors"
	"fmt"
	"math"
)

// PairedDesign describes a planned paired comparison of a candidate arm B
// against a baseline arm A. The unit of evidence is the cluster the decision
// counts: a case (scenario, variant) by default, a scenario with
// --generalize; seeds are repeated measures of their cluster.
type PairedDesign struct {
	Baseline float64 // p_A, the baseline arm's success rate, in [0, 1]
	Diff     float64 // d = p_B − p_A, the difference to detect (either sign, nonzero)
	// Discordance is ψ = P(A ≠ B), the share of pairs where exactly one arm
	// succeeds. It must satisfy |d| ≤ ψ ≤ 1. Zero means "unknown": the arms
	// are then taken as independent within a pair,
	// ψ = p_A(1 − p_B) + p_B(1 − p_A), which is conservative when the arms
	// are positively correlated (the usual case on the same scenario).
	Discordance float64
	// ICC is the correlation of the paired outcomes between the seeds of
	// one cluster, in [0, 1]. Deterministic arms repeat one outcome on every
	// seed: their ICC is 1, and more seeds buy nothing.
	ICC   float64
	Seeds int     // m, seeds (pairs) per cluster, ≥ 1
	Alpha float64 // two-sided significance level, e.g. 0.05
	Power float64 // target power, e.g. 0.80
}

// PairedPlan is the sample size that [PairedSampleSize] recommends.
type PairedPlan struct {
	// IndependentPairs is Connor's n for independent pairs, unrounded.
	IndependentPairs float64
	DesignEffect     float64 // 1 + (m − 1)·ICC
	// NormalClusters is the large-sample answer ⌈IndependentPairs·DE/m⌉.
	NormalClusters int
	// Clusters is what the clustered decision needs: the smallest G with
	// G·m/DE ≥ n_t(G), where n_t is Connor's formula with the normal
	// quantiles replaced by Student's t on G − 1 degrees of freedom (the
	// reference of the decision's interval). Never below NormalClusters.
	Clusters int
	Pairs    int // Clusters · m, the trials per arm
}

// ConnorPairs returns the number of independent pairs needed by the
// two-sided McNemar test at level alpha to reach the given power (Connor
// 1987, Biometrics 43:207–211):
//
//	n = ( z_{1−α/2} √ψ + z_{power} √(ψ − d²) )² / d²
//
// with ψ the discordance P(A ≠ B) and d = p01 − p10 the difference of the
// discordant probabilities (= p_B − p_A). The result is not rounded. It is
// NaN unless 0 < |d| ≤ ψ ≤ 1 and alpha, power lie in (0, 1).
func ConnorPairs(diff, discordance, alpha, power float64) float64 {
	if !(diff != 0 && math.Abs(diff) <= discordance && discordance <= 1) ||
		!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) {
		return math.NaN()
	}
	za := -NormalQuantile(alpha / 2)
	zb := NormalQuantile(power)
	s := za*math.Sqrt(discordance) + zb*math.Sqrt(discordance-diff*diff)
	return s * s / (diff * diff)
}

// PairedSampleSize returns how many clusters (cases, or scenarios when the
// decision generalizes) and pairs detect the difference d of a paired design
// at the given power:
//
//	n   = ConnorPairs(d, ψ, α, power)   pairs if all pairs were independent
//	DE  = 1 + (m − 1)·ICC               Kish design effect of m seeds/cluster
//	G   = smallest G ≥ ⌈n·DE/m⌉ with G·m/DE ≥ n_t(G)   (t on G − 1 df)
//	pairs = G·m.
//
// The design effect assumes equal numbers of seeds per cluster. With
// deterministic arms (ICC = 1) the answer in clusters does not depend on m. It returns
// an error for an impossible design: p_B = p_A + d outside [0, 1], a
// discordance below |d| or above 1, or discordant cells larger than the
// margins allow (p10 = (ψ − d)/2 > p_A or p01 = (ψ + d)/2 > 1 − p_A).
func PairedSampleSize(d PairedDesign) (PairedPlan, error) {
	pA, pB := d.Baseline, d.Baseline+d.Diff
	switch {
	case !(pA >= 0 && pA <= 1) || !(pB >= 0 && pB <= 1):
		return PairedPlan{}, fmt.Errorf("stats: baseline %g and difference %g give rates outside [0, 1]", pA, d.Diff)
	case d.Diff == 0:
		return PairedPlan{}, errors.New("stats: difference to detect must be nonzero")
	case !(d.ICC >= 0 && d.ICC <= 1):
		return PairedPlan{}, fmt.Errorf("stats: ICC %g outside [0, 1]", d.ICC)
	case d.Seeds < 1:
		return PairedPlan{}, fmt.Errorf("stats: seeds per scenario %d < 1", d.Seeds)
	case !(d.Alpha > 0 && d.Alpha < 1) || !(d.Power > 0 && d.Power < 1):
		return PairedPlan{}, fmt.Errorf("stats: alpha %g and power %g must lie in (0, 1)", d.Alpha, d.Power)
	}
	psi := d.Discordance
	if psi == 0 {
		psi = pA*(1-pB) + pB*(1-pA)
	}
	p10, p01 := (psi-d.Diff)/2, (psi+d.Diff)/2
	if !(math.Abs(d.Diff) <= psi && psi <= 1) || p10 > pA || p01 > 1-pA {
		return PairedPlan{}, fmt.Errorf("stats: discordance %g impossible with baseline %g and difference %g", psi, pA, d.Diff)
	}
	n := ConnorPairs(d.Diff, psi, d.Alpha, d.Power)
	m := float64(d.Seeds)
	de := 1 + (m-1)*d.ICC
	normal := int(math.Ceil(n * de / m))
	g := max(normal, 2)
	for ; g < 1<<20; g++ {
		df := float64(g - 1)
		ta, tb := StudentTQuantile(1-d.Alpha/2, df), StudentTQuantile(d.Power, df)
		s := ta*math.Sqrt(psi) + tb*math.Sqrt(psi-d.Diff*d.Diff)
		if float64(g)*m/de >= s*s/(d.Diff*d.Diff) {
			break
		}
	}
	return PairedPlan{IndependentPairs: n, DesignEffect: de, NormalClusters: normal, Clusters: g, Pairs: g * d.Seeds}, nil
}
