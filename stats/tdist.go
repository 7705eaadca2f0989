package stats

import "math"

// StudentTCDF returns P(T ≤ x) for Student's t distribution with df > 0
// degrees of freedom (df need not be an integer), through the regularized
// incomplete beta function:
//
//	P(T ≤ x) = 1 − I_{df/(df+x²)}(df/2, 1/2)/2   for x ≥ 0,
//
// and by symmetry for x < 0. NaN for df ≤ 0 or NaN input; df = +Inf gives Φ(x).
func StudentTCDF(x, df float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(df) || !(df > 0):
		return math.NaN()
	case math.IsInf(df, 1):
		return NormalCDF(x)
	case math.IsInf(x, 1):
		return 1
	case math.IsInf(x, -1):
		return 0
	}
	tail := 0.5 * regIncBeta(df/(df+x*x), df/2, 0.5) // P(T > |x|)
	if x >= 0 {
		return 1 - tail
	}
	return tail
}

// StudentTQuantile returns the p-quantile of Student's t with df > 0 degrees
// of freedom: the inverse of [StudentTCDF], through the Beta quantile
// (x = df/(df+t²) solves I_x(df/2, 1/2) = 2·min(p, 1−p)). NaN for p outside
// [0, 1], df ≤ 0 or NaN; ±Inf at p = 0 and 1.
func StudentTQuantile(p, df float64) float64 {
	switch {
	case math.IsNaN(p) || math.IsNaN(df) || p < 0 || p > 1 || !(df > 0):
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case math.IsInf(df, 1):
		return NormalQuantile(p)
	}
	q := math.Min(p, 1-p)
	x := betaQuantile(2*q, df/2, 0.5)
	t := math.Sqrt(df * (1 - x) / x)
	if p < 0.5 {
		return -t
	}
	return t
}

// tCrit returns the two-sided critical value t_{df}(1 − (1 − conf)/2).
func tCrit(conf, df float64) float64 {
	if !(conf > 0 && conf < 1) {
		return math.NaN()
	}
	return StudentTQuantile(1-(1-conf)/2, df)
}
