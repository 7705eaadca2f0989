package stats

import "math"

// NormalCDF returns Φ(x), the standard normal distribution function,
// computed as erfc(−x/√2)/2 so that the lower tail keeps full relative
// precision.
func NormalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// Coefficients of Acklam's rational approximation to the normal quantile
// (P. J. Acklam, "An algorithm for computing the inverse normal cumulative
// distribution function", 2003; relative error below 1.15e-9).
var (
	acklamA = [6]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
		1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	acklamB = [5]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
		6.680131188771972e+01, -1.328068155288572e+01}
	acklamC = [6]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
		-2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	acklamD = [4]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
		3.754408661907416e+00}
)

// NormalQuantile returns Φ⁻¹(p), the standard normal quantile.
//
// It starts from Acklam's rational approximation and applies Halley
// refinement steps on Φ(x) − p (Halley's method converges cubically, so two
// steps take the 1e-9 starting error to machine precision). The computation is
// done in the lower tail (p ≤ 1/2) and reflected, so tiny and near-one
// probabilities keep their precision. NormalQuantile(0) = −Inf,
// NormalQuantile(1) = +Inf, and p outside [0, 1] or NaN gives NaN.
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p > 0.5:
		// 1 − p is exact here (Sterbenz), and Φ⁻¹(p) = −Φ⁻¹(1 − p).
		return -NormalQuantile(1 - p)
	}
	var x float64
	if p < 0.02425 {
		q := math.Sqrt(-2 * math.Log(p))
		c, d := acklamC, acklamD
		x = (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) /
			((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	} else {
		q := p - 0.5
		r := q * q
		a, b := acklamA, acklamB
		x = (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q /
			(((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	}
	for range 2 {
		// Halley step for f(x) = Φ(x) − p: u = f/f', x −= u/(1 + x·u/2).
		pdf := math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi)
		if pdf == 0 {
			break // beyond the range where Φ is representable; keep the start
		}
		u := (NormalCDF(x) - p) / pdf
		x -= u / (1 + 0.5*x*u)
	}
	return x
}

// zCrit returns the two-sided normal critical value z = Φ⁻¹(1 − α/2) for a
// confidence level conf = 1 − α, or NaN when conf is outside (0, 1).
func zCrit(conf float64) float64 {
	if !(conf > 0 && conf < 1) {
		return math.NaN()
	}
	return -NormalQuantile((1 - conf) / 2)
}
