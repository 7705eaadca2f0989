package stats

import (
	"math"
	"testing"
)

// Golden values: R's fisher.test(matrix(c(a, c, b, d), 2))$p.value, and the
// same by exact enumeration with integer binomials.
func TestFisherExact(t *testing.T) {
	cases := []struct {
		a, b, c, d int
		want       float64
	}{
		{3, 1, 1, 3, 0.4857142857142857}, // Fisher's tea-tasting lady
		{10, 2, 3, 15, 0.0005367241191434358},
		{0, 50, 10, 40, 0.0011868393451716574},
		{5, 95, 5, 95, 1},
		{0, 0, 0, 0, 1},
	}
	for _, tc := range cases {
		if got := FisherExact(tc.a, tc.b, tc.c, tc.d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("FisherExact(%d,%d,%d,%d) = %.12g, want %.12g", tc.a, tc.b, tc.c, tc.d, got, tc.want)
		}
	}
	// Symmetric in the rows and in the columns.
	if x, y := FisherExact(10, 2, 3, 15), FisherExact(3, 15, 10, 2); math.Abs(x-y) > 1e-12 {
		t.Errorf("row swap changed p: %v vs %v", x, y)
	}
}
