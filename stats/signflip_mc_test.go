package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// signFlipMonteCarloReference is the plain form of signFlipMonteCarlo's
// draws (one branch per total): the branch-free loop must count exactly
// the same sums.
func signFlipMonteCarloReference(v []float64, seed uint64) (p, midP float64) {
	obs, scale := 0.0, 0.0
	for _, x := range v {
		obs += x
		scale += math.Abs(x)
	}
	target, tol := math.Abs(obs), 1e-12*scale
	rng := rand.New(rand.NewPCG(seed, 0x5ca1ab1e))
	more, equal := 0, 1
	for range MonteCarloFlips {
		s := 0.0
		bits, left := uint64(0), 0
		for _, x := range v {
			if left == 0 {
				bits, left = rng.Uint64(), 64
			}
			if bits&1 == 1 {
				s -= x
			} else {
				s += x
			}
			bits >>= 1
			left--
		}
		switch d := math.Abs(s); {
		case d > target+tol:
			more++
		case d >= target-tol:
			equal++
		}
	}
	total := float64(MonteCarloFlips + 1)
	return float64(more+equal) / total, (float64(more) + float64(equal)/2) / total
}

func TestSignFlipMonteCarloMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 63, 64, 65, 128, 129, 301} {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64()*1.5 + 0.05
			if i%5 == 0 {
				v[i] = float64(r.IntN(5) - 2) // ties and zeros
			}
		}
		for seed := uint64(1); seed <= 3; seed++ {
			p, mid := signFlipMonteCarlo(v, seed)
			wp, wmid := signFlipMonteCarloReference(v, seed)
			if p != wp || mid != wmid {
				t.Fatalf("n=%d seed=%d: p %v mid %v, reference %v %v", n, seed, p, mid, wp, wmid)
			}
		}
	}
}
