package report

import (
	"context"
	"encoding/json"

	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/results/record"
)

// LoadPairs checks the metamorphic pairs the sweep's scenarios declare
// against its stored trials, per arm (scenario.CheckPairs): a pair holds
// for an arm on a seed when both of its variants ran and every expected
// outcome came true. Only the trials of scenarios that declare pairs are
// read; trials lost to attrition are not graded and are left out. Empty
// when no scenario declares a pair.
//
// Every trial of such a scenario is read (Source.EachTrial by scenario),
// its outcomes only: a plan with pairs on every scenario reads the
// outcome columns of the whole sweep once. (Whole rows, as before issue
// 35, were 2.9 s of CPU of the report at the end of a 60,760-trial
// library sweep: verdicts, evidence and claims decoded for nothing.)
func LoadPairs(ctx context.Context, src Source, sweepID string) ([]scenario.PairResult, error) {
	sw, err := storedSweep(ctx, src, sweepID)
	if err != nil {
		return nil, err
	}
	// Only the scenarios' names and pairs are read from the stored plan;
	// a plan that does not say (an old or a hand-made row) has none.
	var plan struct {
		Scenarios []struct {
			Name        string                     `json:"name"`
			Metamorphic []scenario.MetamorphicPair `json:"metamorphic"`
		} `json:"scenarios"`
	}
	if json.Unmarshal([]byte(sw.PlanJSON), &plan) != nil {
		return nil, nil
	}
	var out []scenario.PairResult
	for _, p := range plan.Scenarios {
		sc := &scenario.Scenario{Name: p.Name, Metamorphic: p.Metamorphic}
		if len(sc.Metamorphic) == 0 {
			continue
		}
		variants := map[string]bool{}
		for _, p := range sc.Metamorphic {
			variants[p.Base], variants[p.Flipped] = true, true
		}
		var trials []scenario.PairTrial
		err := src.EachTrial(ctx, sweepID, record.TrialSelect{Scenario: sc.Name, Outcomes: true}, func(t record.Trial) error {
			if t.Attrition || !variants[t.Variant] {
				return nil
			}
			o := map[string]*bool{}
			for _, m := range outcome.Graded {
				o[string(m)] = t.Outcome(m)
			}
			trials = append(trials, scenario.PairTrial{Variant: t.Variant, Arm: t.Arm, Seed: t.Seed, Outcomes: o})
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, sc.CheckPairs(trials)...)
	}
	return out, nil
}
