package stats

import "math"

// Kappa is Cohen's kappa of two raters' pass/fail answers on the same
// items, with its large-sample interval.
type Kappa struct {
	N int // items both raters answered
	// Agreement is the observed agreement po; Expected the agreement
	// expected by chance from the two marginals, pe.
	Agreement, Expected float64
	// Kappa is (po − pe)/(1 − pe); NaN when N = 0 or pe = 1 (both raters
	// gave one and the same answer to every item: agreement is perfect but
	// uninformative).
	Kappa float64
	// SE is the large-sample standard error of Fleiss, Cohen and Everitt
	// (1969), valid for any kappa (not only under κ = 0); Interval is
	// kappa ± z·SE, clipped to [−1, 1]. NaN when Kappa is.
	SE       float64
	Interval Interval
}

// CohenKappa computes Cohen's kappa of a 2×2 table of two raters (A, B):
// both pass, A pass and B fail, A fail and B pass, both fail; with a
// two-sided interval at confidence conf. The standard error is Fleiss,
// Cohen and Everitt's (1969) (Fleiss, Levin and Paik, Statistical Methods
// for Rates and Proportions, 3rd ed., 2003, eq. 18.15):
//
//	Var(κ) = [Σᵢ pᵢᵢ(1 − (pᵢ. + p.ᵢ)(1 − κ))² + (1 − κ)² Σᵢ≠ⱼ pᵢⱼ(p.ᵢ + pⱼ.)² − (κ − pe(1 − κ))²] / (n(1 − pe)²)
//
// With few items or answers far from balanced the normal interval is
// rough; it is reported with N so a reader can judge.
func CohenKappa(bothPass, aPassOnly, bPassOnly, bothFail int, conf float64) Kappa {
	k := Kappa{N: bothPass + aPassOnly + bPassOnly + bothFail, Kappa: math.NaN(), SE: math.NaN(), Interval: nanInterval()}
	if k.N == 0 || bothPass < 0 || aPassOnly < 0 || bPassOnly < 0 || bothFail < 0 {
		k.Agreement, k.Expected = math.NaN(), math.NaN()
		return k
	}
	n := float64(k.N)
	// p[i][j]: rater A said i, rater B said j (0 pass, 1 fail).
	p := [2][2]float64{{float64(bothPass) / n, float64(aPassOnly) / n}, {float64(bPassOnly) / n, float64(bothFail) / n}}
	row := [2]float64{p[0][0] + p[0][1], p[1][0] + p[1][1]} // A's marginals
	col := [2]float64{p[0][0] + p[1][0], p[0][1] + p[1][1]} // B's marginals
	k.Agreement = p[0][0] + p[1][1]
	k.Expected = row[0]*col[0] + row[1]*col[1]
	if k.Expected >= 1 {
		return k
	}
	k.Kappa = (k.Agreement - k.Expected) / (1 - k.Expected)
	q := 1 - k.Kappa
	v := 0.0
	for i := 0; i < 2; i++ {
		t := 1 - (row[i]+col[i])*q
		v += p[i][i] * t * t
	}
	off := p[0][1]*(col[0]+row[1])*(col[0]+row[1]) + p[1][0]*(col[1]+row[0])*(col[1]+row[0])
	v += q * q * off
	c := k.Kappa - k.Expected*q
	v -= c * c
	v /= n * (1 - k.Expected) * (1 - k.Expected)
	k.SE = math.Sqrt(math.Max(v, 0))
	z := zCrit(conf)
	k.Interval = Interval{Lo: math.Max(-1, k.Kappa-z*k.SE), Hi: math.Min(1, k.Kappa+z*k.SE)}
	return k
}
