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
// Every trial of a pair's variants is read, its outcomes only: in one
// statement when the source can (storage.Store's PairOutcomes), else
// scenario by scenario (Source.EachTrial); a plan with pairs on every
// scenario reads the outcome columns of those variants once. (Whole rows, as before issue
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
		Scenarios []pairScenario `json:"scenarios"`
	}
	if json.Unmarshal([]byte(sw.PlanJSON), &plan) != nil {
		return nil, nil
	}
	each, err := pairTrialReader(ctx, src, sweepID, plan.Scenarios)
	if err != nil {
		return nil, err
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
		err := each(sc.Name, func(t record.Trial) error {
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

// pairScenario is what LoadPairs reads of a stored plan's scenario.
type pairScenario struct {
	Name        string                     `json:"name"`
	Metamorphic []scenario.MetamorphicPair `json:"metamorphic"`
}

// pairOutcomesSource reads, in one statement, the outcomes of the trials
// of some variants of some scenarios (storage.Store does: PairOutcomes).
type pairOutcomesSource interface {
	PairOutcomes(ctx context.Context, sweepID string, variants map[string][]string) ([]record.Trial, error)
}

// pairTrialReader returns how LoadPairs reads a scenario's trials: from
// one PairOutcomes read of every pair's variants when src has it (one
// statement instead of one per arm and scenario: 400 of them were 6 s of a
// 60,720-trial sweep's report on a loaded machine), else EachTrial with
// outcomes only.
func pairTrialReader(ctx context.Context, src Source, sweepID string, scenarios []pairScenario) (func(name string, fn func(record.Trial) error) error, error) {
	po, ok := src.(pairOutcomesSource)
	if !ok {
		return func(name string, fn func(record.Trial) error) error {
			return src.EachTrial(ctx, sweepID, record.TrialSelect{Scenario: name, Outcomes: true}, fn)
		}, nil
	}
	variants := map[string][]string{}
	for _, sc := range scenarios {
		for _, p := range sc.Metamorphic {
			variants[sc.Name] = append(variants[sc.Name], p.Base, p.Flipped)
		}
	}
	byScenario := map[string][]record.Trial{}
	if len(variants) > 0 {
		trials, err := po.PairOutcomes(ctx, sweepID, variants)
		if err != nil {
			return nil, err
		}
		for _, t := range trials {
			byScenario[t.Scenario] = append(byScenario[t.Scenario], t)
		}
	}
	return func(name string, fn func(record.Trial) error) error {
		for _, t := range byScenario[name] {
			if err := fn(t); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
