package stats

import (
	"fmt"
	"math/rand/v2"
)

// synthetic returns clusters × per paired trials and the matching weighted
// trials of the candidate arm. Each scenario has its own baseline rate,
// uniform in [0.2, 0.8], so seeds of one scenario are correlated; the
// candidate's rate is 0.05 higher; both arms of a pair share one uniform draw,
// so they are positively correlated, as two agents on the same case are.
// Weights are 1, 2 or 5 at random. Rows are grouped by scenario.
func synthetic(clusters, per int, seed uint64) ([]PairedObs, []WeightedObs) {
	rng := rand.New(rand.NewPCG(seed, 1))
	paired := make([]PairedObs, 0, clusters*per)
	weighted := make([]WeightedObs, 0, clusters*per)
	weights := [3]float64{1, 2, 5}
	for c := range clusters {
		key := fmt.Sprintf("scenario-%04d", c)
		pA := 0.2 + 0.6*rng.Float64()
		pB := pA + 0.05
		for range per {
			u := rng.Float64()
			var a, b float64
			if u < pA {
				a = 1
			}
			if u < pB {
				b = 1
			}
			paired = append(paired, PairedObs{Cluster: key, A: a, B: b})
			weighted = append(weighted, WeightedObs{Cluster: key, Y: b, W: weights[rng.IntN(3)]})
		}
	}
	return paired, weighted
}
