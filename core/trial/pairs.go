package trial

import (
	"context"
	"fmt"

	"rebound/core/agent"
	metric "rebound/core/outcome"
	"rebound/core/scenario"
)

// CheckPairs runs the variants of every declared metamorphic pair of sc
// with each scripted agent of agents on each seed, and checks the pairs
// against the verdicts (scenario.CheckPairs): the result per pair and
// agent, and how many trials ran. An unknown agent is an error.
func CheckPairs(ctx context.Context, sc *scenario.Scenario, agents []string, seeds []uint64) ([]scenario.PairResult, int, error) {
	variants := map[string]bool{}
	for _, p := range sc.Metamorphic {
		variants[p.Base], variants[p.Flipped] = true, true
	}
	var trials []scenario.PairTrial
	for _, name := range agents {
		for _, v := range sc.Variants {
			if !variants[v.Name] {
				continue
			}
			for _, seed := range seeds {
				if err := ctx.Err(); err != nil {
					return nil, len(trials), err
				}
				ag, err := agent.NewScripted(name)
				if err != nil {
					return nil, len(trials), err
				}
				r, err := Run(ctx, Spec{SweepID: "scenario-check", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: name, Agent: name}, Seed: seed}, ag)
				if err != nil {
					return nil, len(trials), fmt.Errorf("%s / %s, agent %s, seed %d: %w", sc.Name, v.Name, name, seed, err)
				}
				o := map[string]*bool{}
				for _, m := range metric.Graded {
					o[string(m)] = r.Verdict.Metric(m)
				}
				trials = append(trials, scenario.PairTrial{Variant: v.Name, Arm: name, Seed: seed, Outcomes: o})
			}
		}
	}
	return sc.CheckPairs(trials), len(trials), nil
}
