package stats

import (
	"math"
	"testing"
)

// near reports whether got is within tol of want (NaN matches NaN).
func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

func checkInterval(t *testing.T, name string, got, want Interval, tol float64) {
	t.Helper()
	if !near(got.Lo, want.Lo, tol) || !near(got.Hi, want.Hi, tol) {
		t.Errorf("%s = [%.12g, %.12g], want [%.12g, %.12g] (tol %g)", name, got.Lo, got.Hi, want.Lo, want.Hi, tol)
	}
}

// TestNormalQuantile checks Φ⁻¹ against reference values computed with
// mpmath at 40 significant digits as sqrt(2)*erfinv(2p − 1) (1.959963984540054
// for p = 0.975 is the textbook value), to a relative 1e-14.
func TestNormalQuantile(t *testing.T) {
	tests := []struct{ p, want float64 }{
		{0.5, 0},
		{0.975, 1.9599639845400542},
		{0.025, -1.9599639845400542},
		{0.995, 2.5758293035489008},
		{0.999, 3.0902323061678135},
		{0.9, 1.2815515655446004},
		{0.8, 0.8416212335729142},
		{0.6, 0.2533471031357998},
		{0.3, -0.5244005127080408},
		{0.02425, -1.9729610513118849}, // Acklam's region boundary
		{1e-10, -6.3613409024040562},
	}
	for _, tt := range tests {
		got := NormalQuantile(tt.p)
		if !near(got, tt.want, 1e-14*math.Max(1, math.Abs(tt.want))) {
			t.Errorf("NormalQuantile(%g) = %.17g, want %.17g", tt.p, got, tt.want)
		}
	}
	// Round trip deep in the tail, where only relative precision is meaningful.
	for _, p := range []float64{1e-300, 1e-100, 1e-20, 1e-5} {
		x := NormalQuantile(p)
		if back := NormalCDF(x); math.Abs(back-p) > 1e-12*p {
			t.Errorf("NormalCDF(NormalQuantile(%g)) = %g", p, back)
		}
	}
	if !math.IsInf(NormalQuantile(0), -1) || !math.IsInf(NormalQuantile(1), 1) ||
		!math.IsNaN(NormalQuantile(-0.1)) || !math.IsNaN(NormalQuantile(math.NaN())) {
		t.Error("NormalQuantile edge cases")
	}
}

// TestRegIncBeta checks the incomplete beta function against closed forms:
// for integers, I_x(a, b) = P(Binomial(a+b−1, x) ≥ a).
func TestRegIncBeta(t *testing.T) {
	tests := []struct{ x, a, b, want float64 }{
		{0.5, 2, 3, 11.0 / 16},                               // P(Bin(4,1/2) ≥ 2) = 11/16
		{0.3, 1, 1, 0.3},                                     // uniform
		{0.2, 1, 5, 1 - math.Pow(0.8, 5)},                    // 1 − (1−x)^b
		{0.7, 4, 1, math.Pow(0.7, 4)},                        // x^a
		{0.9, 3, 2, 4*math.Pow(0.9, 3) - 3*math.Pow(0.9, 4)}, // P(Bin(4,.9) ≥ 3)
		{0.25, 0.5, 0.5, 1.0 / 3},                            // arcsine law: (2/π) asin(√x) = 1/3
	}
	for _, tt := range tests {
		if got := regIncBeta(tt.x, tt.a, tt.b); !near(got, tt.want, 1e-14) {
			t.Errorf("I_%g(%g, %g) = %.17g, want %.17g", tt.x, tt.a, tt.b, got, tt.want)
		}
		if q := betaQuantile(tt.want, tt.a, tt.b); !near(q, tt.x, 1e-12) {
			t.Errorf("betaQuantile(%g; %g, %g) = %.17g, want %g", tt.want, tt.a, tt.b, q, tt.x)
		}
	}
}

// TestBinomHalfLowerTail checks the McNemar binomial tail against exact sums.
func TestBinomHalfLowerTail(t *testing.T) {
	tests := []struct {
		k, m             int
		wantTail, wantPt float64
	}{
		{1, 8, 9.0 / 256, 8.0 / 256},
		{6, 22, 110056.0 / 4194304, 74613.0 / 4194304},
		{0, 5, 1.0 / 32, 1.0 / 32},
		{2, 4, 11.0 / 16, 6.0 / 16},
	}
	for _, tt := range tests {
		tail, pt := binomHalfLowerTail(tt.k, tt.m)
		if !near(tail, tt.wantTail, 1e-14) || !near(pt, tt.wantPt, 1e-14) {
			t.Errorf("binomHalfLowerTail(%d, %d) = %.17g, %.17g; want %.17g, %.17g",
				tt.k, tt.m, tail, pt, tt.wantTail, tt.wantPt)
		}
	}
}

// TestProportionIntervals holds the published single-proportion vectors of
// /work/shared/reference/statistics.md. Sources:
//   - statsmodels test fixtures (values from R's binom package), 95%:
//     18/20, 4/20 and 0/30 for Wilson, Agresti–Coull and Clopper–Pearson;
//   - scipy.stats.binomtest documentation: 7/50 exact (Clopper–Pearson).
//
// The 16-digit values are asserted to 1e-11 (observed error ≤ 4e-13); the
// 0/30 upper limits are published to 8 decimals and asserted to 5e-9.
func TestProportionIntervals(t *testing.T) {
	tests := []struct {
		name string
		fn   func(int, int, float64) Interval
		x, n int
		want Interval
		tol  float64
	}{
		{"Wilson 18/20", Wilson, 18, 20, Interval{0.6989663547715128, 0.972133518786232}, 1e-11},
		{"AgrestiCoull 18/20", AgrestiCoull, 18, 20, Interval{0.6867561125596077, 0.984343760998137}, 1e-11},
		{"ClopperPearson 18/20", ClopperPearson, 18, 20, Interval{0.6830172859809176, 0.9876514728297052}, 1e-11},
		{"Wilson 4/20", Wilson, 4, 20, Interval{0.0806576625797981, 0.4160174322518935}, 1e-11},
		{"ClopperPearson 4/20", ClopperPearson, 4, 20, Interval{0.05733399705003284, 0.436614002996668}, 1e-11},
		{"Wilson 0/30", Wilson, 0, 30, Interval{0, 0.11351339}, 5e-9},
		{"ClopperPearson 0/30", ClopperPearson, 0, 30, Interval{0, 0.11570331}, 5e-9},
		{"ClopperPearson 7/50 (scipy)", ClopperPearson, 7, 50, Interval{0.05819170033997342, 0.26739600249700846}, 1e-11},
	}
	for _, tt := range tests {
		checkInterval(t, tt.name, tt.fn(tt.x, tt.n, 0.95), tt.want, tt.tol)
	}
}

// TestProportionEdges checks the documented edge behaviour and the symmetry
// interval(n−x) = 1 − interval(x) of all three methods.
func TestProportionEdges(t *testing.T) {
	methods := map[string]func(int, int, float64) Interval{
		"Wilson": Wilson, "AgrestiCoull": AgrestiCoull, "ClopperPearson": ClopperPearson,
	}
	for name, fn := range methods {
		if got := fn(0, 0, 0.95); got != (Interval{0, 1}) {
			t.Errorf("%s(0, 0) = %v, want [0, 1]", name, got)
		}
		for _, bad := range []struct {
			x, n int
			conf float64
		}{{-1, 5, 0.95}, {6, 5, 0.95}, {1, 5, 0}, {1, 5, 1}, {1, 5, math.NaN()}} {
			if got := fn(bad.x, bad.n, bad.conf); !math.IsNaN(got.Lo) || !math.IsNaN(got.Hi) {
				t.Errorf("%s(%d, %d, %g) = %v, want NaN", name, bad.x, bad.n, bad.conf, got)
			}
		}
		for _, n := range []int{1, 2, 7, 30, 1000} {
			for _, x := range []int{0, 1, n / 3, n / 2, n - 1, n} {
				if x < 0 || x > n {
					continue
				}
				iv, mirror := fn(x, n, 0.9), fn(n-x, n, 0.9)
				if iv.Lo < 0 || iv.Hi > 1 || iv.Lo > iv.Hi {
					t.Errorf("%s(%d, %d) = %v out of order or range", name, x, n, iv)
				}
				if !near(iv.Lo, 1-mirror.Hi, 1e-12) || !near(iv.Hi, 1-mirror.Lo, 1e-12) {
					t.Errorf("%s(%d, %d) = %v not symmetric with %v", name, x, n, iv, mirror)
				}
			}
		}
	}
	// Exact edges: x = 0 has lower limit 0, x = n has upper limit 1.
	if iv := Wilson(0, 10, 0.95); iv.Lo != 0 {
		t.Errorf("Wilson(0,10).Lo = %g", iv.Lo)
	}
	if iv := Wilson(10, 10, 0.95); iv.Hi != 1 {
		t.Errorf("Wilson(10,10).Hi = %g", iv.Hi)
	}
	// Clopper–Pearson at the edges has the closed form (α/2)^(1/n).
	if iv := ClopperPearson(10, 10, 0.95); !near(iv.Lo, math.Pow(0.025, 0.1), 1e-13) {
		t.Errorf("ClopperPearson(10,10).Lo = %.17g", iv.Lo)
	}
	// Large n stays accurate: the exact interval approaches Wilson's.
	cp, w := ClopperPearson(300000, 1000000, 0.95), Wilson(300000, 1000000, 0.95)
	if !near(cp.Lo, w.Lo, 2e-5) || !near(cp.Hi, w.Hi, 2e-5) {
		t.Errorf("large n: CP %v vs Wilson %v", cp, w)
	}
}
