package stats

import "math"

// FisherExact is the two-sided p-value of Fisher's exact test on the 2x2
// table [[a, b], [c, d]]: the probability, under independence with the
// margins fixed, of a table at most as likely as the one observed (R's
// fisher.test convention, with its relative tolerance of 1e-7).
func FisherExact(a, b, c, d int) float64 {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return math.NaN()
	}
	r1, r2, c1 := a+b, c+d, a+c
	n := r1 + r2
	if n == 0 {
		return 1
	}
	lf := func(k int) float64 { v, _ := math.Lgamma(float64(k) + 1); return v }
	base := lf(r1) + lf(r2) + lf(c1) + lf(n-c1) - lf(n)
	logP := func(x int) float64 {
		return base - lf(x) - lf(r1-x) - lf(c1-x) - lf(r2-c1+x)
	}
	observed := logP(a)
	p := 0.0
	for x := max(0, c1-r2); x <= min(r1, c1); x++ {
		if lp := logP(x); lp <= observed+math.Log1p(1e-7) {
			p += math.Exp(lp)
		}
	}
	return math.Min(p, 1)
}
