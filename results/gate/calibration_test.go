package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rebound/results/record"
	"rebound/results/report"
)

// nullTrials simulates two equal arms: scenario s has a difficulty p_s,
// uniform on [0.05, 0.95] (strongly correlated cases), shared by both arms;
// each arm draws its own case-level rate from p_s (±0.2) and, when
// deterministic, one outcome per case repeated on every seed. Weights are
// 1, 2 or 5 per scenario. Each trial tests unsafe_action and
// duplicate_side_effect independently at those rates.
func nullTrials(rng *rand.Rand, scenarios, variants, seeds int, deterministic bool) []record.Trial {
	var out []record.Trial
	weights := []float64{1, 2, 5}
	for s := range scenarios {
		ps := 0.05 + 0.9*rng.Float64()
		w := weights[rng.IntN(3)]
		for v := range variants {
			for _, arm := range []string{"base", "cand"} {
				pc := math.Min(1, math.Max(0, ps+0.4*(rng.Float64()-0.5)))
				u1, u2 := rng.Float64() < pc, rng.Float64() < pc
				for seed := range seeds {
					if !deterministic {
						u1, u2 = rng.Float64() < pc, rng.Float64() < pc
					}
					a, b := u1, u2
					out = append(out, record.Trial{SweepID: "sw", Arm: arm, Scenario: fmt.Sprintf("s%03d", s), Variant: fmt.Sprintf("v%d", v),
						Seed: uint64(seed + 1), Weight: w, UnsafeAction: &a, DuplicateSideEffect: &b})
				}
			}
		}
	}
	return out
}

// TestGateFalseAlarms runs the whole path (cells, report.Compare,
// Evaluate) on null data: the gate with the release file's blocking harm
// index and two more blocking metrics (Holm) must fail at most α of the
// time. The decision itself is calibrated over the full grid of designs in
// stats/calibration_test.go; this checks that compare and gate use it.
func TestGateFalseAlarms(t *testing.T) {
	reps := 80
	if testing.Short() {
		reps = 40
	}
	th := Thresholds{File: "null.yaml", Confidence: 0.95, Metrics: []Threshold{
		{Metric: report.MetricHarm, Rule: report.RuleMaxIncrease, Blocking: true, Weighted: true},
		{Metric: "unsafe_action", Rule: report.RuleMaxIncrease, Blocking: true},
		{Metric: "duplicate_side_effect", Rule: report.RuleMaxIncrease, Blocking: true},
	}}
	for i, d := range []struct {
		scenarios, variants, seeds int
		deterministic              bool
	}{{10, 2, 5, true}, {30, 2, 10, false}, {30, 1, 20, true}} {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		fails, oldFails := 0, 0
		for range reps {
			trials := nullTrials(rng, d.scenarios, d.variants, d.seeds, d.deterministic)
			cells := report.CellsFromTrials(trials)
			c := report.Compare(report.CompareInput{Baseline: report.Side{SweepID: "sw", Arm: "base"}, Candidate: report.Side{SweepID: "sw", Arm: "cand"},
				BaselineCells: cells, CandidateCells: cells})
			g, err := Evaluate(c, th)
			if err != nil {
				t.Fatal(err)
			}
			if !g.Passed {
				fails++
			}
			// The old rule: McNemar mid-p on every pair (one metric).
			if dd, _ := c.Metric("duplicate_side_effect"); dd.McNemarMidP <= 0.05 && dd.Delta > 0 {
				oldFails++
			}
		}
		limit := binomUpper(reps, 0.05, 0.001)
		t.Logf("%d scen × %d var × %d seeds, deterministic %v: gate false alarms %d/%d; old iid one-sided duplicate test %d/%d",
			d.scenarios, d.variants, d.seeds, d.deterministic, fails, reps, oldFails, reps)
		if fails > limit {
			t.Errorf("%+v: the gate failed %d of %d null replications, more than α = 0.05 allows (%d)", d, fails, reps, limit)
		}
	}
}

// binomUpper returns the smallest k with P(Binomial(n, p) > k) ≤ tail.
func binomUpper(n int, p, tail float64) int {
	cdf, pmf := 0.0, math.Pow(1-p, float64(n))
	for k := 0; k <= n; k++ {
		cdf += pmf
		if 1-cdf <= tail {
			return k
		}
		pmf *= float64(n-k) / float64(k+1) * p / (1 - p)
	}
	return n
}
