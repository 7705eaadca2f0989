package stats

import "math"

// Interval is a closed confidence interval [Lo, Hi].
type Interval struct{ Lo, Hi float64 }

// Contains reports whether x lies in [Lo, Hi].
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

func nanInterval() Interval { return Interval{math.NaN(), math.NaN()} }

// validCounts reports whether 0 ≤ successes ≤ n.
func validCounts(successes, n int) bool { return successes >= 0 && successes <= n }

// Wilson returns the Wilson score interval for a binomial proportion
// (Wilson 1927), the interval rebound reports for a single rate:
//
//	(x + z²/2)/(n + z²) ± z/(n + z²) · √(x(n − x)/n + z²/4)
//
// with x = successes and z = Φ⁻¹(1 − (1 − conf)/2). At x = 0 the lower limit is
// exactly 0 and at x = n the upper limit is exactly 1. With n = 0 there is no
// information and the interval is [0, 1]. Invalid input gives NaN limits.
func Wilson(successes, n int, conf float64) Interval {
	z := zCrit(conf)
	if !validCounts(successes, n) || math.IsNaN(z) {
		return nanInterval()
	}
	if n == 0 {
		return Interval{0, 1}
	}
	return wilson(float64(successes), float64(n), z)
}

// wilson is Wilson's interval for real-valued x ≤ n (n > 0), used directly by
// the paired intervals and, with an effective sample size, by [Rate].
func wilson(x, n, z float64) Interval {
	z2 := z * z
	denom := n + z2
	center := (x + z2/2) / denom
	half := z / denom * math.Sqrt(x*(n-x)/n+z2/4)
	iv := Interval{math.Max(0, center-half), math.Min(1, center+half)}
	if x == 0 {
		iv.Lo = 0
	}
	if x == n {
		iv.Hi = 1
	}
	return iv
}

// AgrestiCoull returns the Agresti–Coull ("add z²/2 successes and failures")
// interval (Agresti & Coull 1998):
//
//	ñ = n + z²,  p̃ = (x + z²/2)/ñ,  p̃ ± z √(p̃(1 − p̃)/ñ)
//
// clipped to [0, 1]. n = 0 gives [0, 1]; invalid input gives NaN limits.
func AgrestiCoull(successes, n int, conf float64) Interval {
	z := zCrit(conf)
	if !validCounts(successes, n) || math.IsNaN(z) {
		return nanInterval()
	}
	if n == 0 {
		return Interval{0, 1}
	}
	nt := float64(n) + z*z
	pt := (float64(successes) + z*z/2) / nt
	half := z * math.Sqrt(pt*(1-pt)/nt)
	return Interval{math.Max(0, pt-half), math.Min(1, pt+half)}
}

// ClopperPearson returns the exact (Clopper & Pearson 1934) interval, the
// inversion of two one-sided binomial tests at level α/2 each, α = 1 − conf:
//
//	Lo = B⁻¹(α/2; x, n − x + 1)     (0 when x = 0)
//	Hi = B⁻¹(1 − α/2; x + 1, n − x)  (1 when x = n)
//
// where B⁻¹(p; a, b) is the Beta(a, b) quantile, computed here by Newton
// iteration on the regularized incomplete beta function. The upper limit is
// evaluated as 1 − B⁻¹(α/2; n − x, x + 1) for precision. n = 0 gives [0, 1];
// invalid input gives NaN limits.
func ClopperPearson(successes, n int, conf float64) Interval {
	if !validCounts(successes, n) || !(conf > 0 && conf < 1) {
		return nanInterval()
	}
	if n == 0 {
		return Interval{0, 1}
	}
	alpha := 1 - conf
	x, nf := float64(successes), float64(n)
	iv := Interval{0, 1}
	if successes > 0 {
		iv.Lo = betaQuantile(alpha/2, x, nf-x+1)
	}
	if successes < n {
		iv.Hi = 1 - betaQuantile(alpha/2, nf-x, x+1)
	}
	return iv
}
