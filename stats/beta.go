package stats

import "math"

// lbeta returns ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b) for a, b > 0.
func lbeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// regIncBeta returns the regularized incomplete beta function
//
//	I_x(a, b) = (1/B(a, b)) ∫₀ˣ t^(a−1) (1−t)^(b−1) dt,  a, b > 0, 0 ≤ x ≤ 1.
//
// It evaluates the classical continued fraction
//
//	I_x(a, b) = x^a (1−x)^b / (a B(a, b)) · 1/(1 + d₁/(1 + d₂/(1 + …)))
//	d₂ₘ₊₁ = −(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),  d₂ₘ = m(b−m) x / ((a+2m−1)(a+2m))
//
// with the modified Lentz algorithm. The fraction converges fast for
// x < (a+1)/(a+b+2); above that the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) is
// used.
func regIncBeta(x, a, b float64) float64 {
	switch {
	case math.IsNaN(x) || !(a > 0) || !(b > 0):
		return math.NaN()
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(1-x, b, a)
	}
	front := math.Exp(a*math.Log(x) + b*math.Log1p(-x) - lbeta(a, b))
	return front / (a * betaContinuedFraction(x, a, b))
}

// betaContinuedFraction returns 1 + d₁/(1 + d₂/(1 + …)) for regIncBeta.
func betaContinuedFraction(x, a, b float64) float64 {
	const (
		tiny    = 1e-300
		eps     = 1e-16
		maxIter = 100000 // the fraction needs O(√max(a, b)) terms
	)
	f, c, d := 1.0, 1.0, 0.0
	for j := 1; j <= maxIter; j++ {
		m := float64(j / 2)
		var dj float64
		if j%2 == 1 {
			dj = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		} else {
			dj = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		}
		d = 1 + dj*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + dj/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := c * d
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return f
}

// betaQuantile returns x such that I_x(a, b) = p: the p-quantile of the
// Beta(a, b) distribution. It runs Newton's method on I_x(a, b) − p, whose
// derivative is the Beta density, inside a bracket [lo, hi] that shrinks at
// every step; a Newton step that leaves the bracket is replaced by bisection,
// so the iteration always converges.
func betaQuantile(p, a, b float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1 || !(a > 0) || !(b > 0):
		return math.NaN()
	case p == 0:
		return 0
	case p == 1:
		return 1
	}
	lb := lbeta(a, b)
	lo, hi := 0.0, 1.0
	x := a / (a + b)
	for range 1000 {
		f := regIncBeta(x, a, b) - p
		if f == 0 {
			return x
		}
		if f < 0 {
			lo = x
		} else {
			hi = x
		}
		dens := math.Exp((a-1)*math.Log(x) + (b-1)*math.Log1p(-x) - lb)
		next := x - f/dens
		if math.IsInf(dens, 0) || !(next > lo && next < hi) {
			next = lo + (hi-lo)/2
		}
		if math.Abs(next-x) <= 1e-15*x || hi-lo <= 1e-15*hi {
			return next
		}
		x = next
	}
	return x
}

// binomHalfLowerTail returns P(X ≤ k) and P(X = k) for X ~ Binomial(m, 1/2)
// and 0 ≤ k ≤ m/2. It sums the probability mass from k downwards with the
// ratio P(X = i−1)/P(X = i) = i/(m−i+1), starting from
// P(X = k) = exp(ln C(m, k) − m ln 2), and stops once the terms no longer
// change the sum, so it costs O(k) at worst and far less for large m.
func binomHalfLowerTail(k, m int) (tail, point float64) {
	lm, _ := math.Lgamma(float64(m) + 1)
	lk, _ := math.Lgamma(float64(k) + 1)
	lr, _ := math.Lgamma(float64(m-k) + 1)
	point = math.Exp(lm - lk - lr - float64(m)*math.Ln2)
	tail = point
	term := point
	for i := k; i > 0; i-- {
		term *= float64(i) / float64(m-i+1)
		tail += term
		if term < tail*1e-17 {
			break
		}
	}
	return tail, point
}
