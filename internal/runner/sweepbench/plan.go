package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/strictyaml"
)

// Scaled is a plan rewritten to run more trials.
type Scaled struct {
	Path   string // the rewritten plan
	Seeds  int
	Trials int
}

// ScalePlan writes into dir a copy of the plan at src with its seeds raised
// to the fewest that give at least trials trials, and its scenario paths
// made absolute (they are relative to the plan). Everything else, shard size
// and concurrency included, stays as the plan says. A plan with an explicit
// seed list, LLM or command arms, prompts or a judge is refused: only
// scripted plans scale without side effects.
func ScalePlan(src string, trials int, dir string) (Scaled, error) {
	return scalePlan(src, "", trials, dir)
}

// ScaleScenario is ScalePlan with the plan's scenarios replaced by the one
// scenario file only (its arms, shard size and concurrency kept): a sweep
// whose every slice holds the same trials, so that the rates of its slices
// compare as they are. The copy is named after the plan, with "-one".
func ScaleScenario(src, only string, trials int, dir string) (Scaled, error) {
	abs, err := filepath.Abs(only)
	if err != nil {
		return Scaled{}, err
	}
	return scalePlan(src, abs, trials, dir)
}

func scalePlan(src, only string, trials int, dir string) (Scaled, error) {
	plan, err := loadPlanWith(src, only)
	if err != nil {
		return Scaled{}, err
	}
	if plan.Judge != nil {
		return Scaled{}, fmt.Errorf("%s: a plan with a judge would call a model per trial", src)
	}
	for _, arm := range plan.Arms {
		if _, err := scenarioScripted(arm); err != nil {
			return Scaled{}, fmt.Errorf("%s: arm %s: %w", src, arm.Name, err)
		}
	}
	perSeed := plan.TrialCount() / len(plan.Seeds)
	if only != "" {
		// The one scenario's variants times the arms.
		perSeed = len(plan.Scenarios[0].Variants) * len(plan.Arms)
	}
	if perSeed == 0 {
		return Scaled{}, fmt.Errorf("%s: the plan has no trials", src)
	}
	seeds := (trials + perSeed - 1) / perSeed

	raw, err := os.ReadFile(src)
	if err != nil {
		return Scaled{}, err
	}
	// Read as the loader reads it (strictyaml: encoding, one document,
	// aliases expanded), so the rewritten copy says what the plan says.
	doc, errs := strictyaml.Parse(src, raw)
	if len(errs) > 0 {
		return Scaled{}, errs
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Scaled{}, fmt.Errorf("%s: not a YAML mapping", src)
	}
	base, err := filepath.Abs(filepath.Dir(src))
	if err != nil {
		return Scaled{}, err
	}
	top := doc.Content[0]
	var sawScenarios, sawSeeds bool
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i], top.Content[i+1]
		switch key.Value {
		case "scenarios":
			if val.Kind != yaml.SequenceNode {
				return Scaled{}, fmt.Errorf("%s:%d: scenarios is not a list", src, val.Line)
			}
			for _, s := range val.Content {
				if !filepath.IsAbs(s.Value) {
					s.Value = filepath.Join(base, s.Value)
				}
			}
			if only != "" {
				val.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: only}}
			}
			sawScenarios = true
		case "seeds":
			if val.Kind != yaml.ScalarNode {
				return Scaled{}, fmt.Errorf("%s:%d: seeds is a list; sweepbench scales a seed count", src, val.Line)
			}
			*val = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(seeds)}
			sawSeeds = true
		}
	}
	if !sawScenarios || !sawSeeds {
		return Scaled{}, fmt.Errorf("%s: want top-level scenarios and seeds", src)
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return Scaled{}, err
	}
	path := filepath.Join(dir, filepath.Base(src))
	if only != "" {
		path = filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+"-one"+filepath.Ext(src))
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return Scaled{}, err
	}
	scaled, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		return Scaled{}, fmt.Errorf("scaled copy of %s: %w", src, err)
	}
	if scaled.TrialCount() != seeds*perSeed || scaled.ShardSize != plan.ShardSize || scaled.Concurrency != plan.Concurrency {
		return Scaled{}, fmt.Errorf("scaled copy of %s has %d trials (want %d), shard size %d, concurrency %d (want %d, %d)",
			src, scaled.TrialCount(), seeds*perSeed, scaled.ShardSize, scaled.Concurrency, plan.ShardSize, plan.Concurrency)
	}
	return Scaled{Path: path, Seeds: seeds, Trials: scaled.TrialCount()}, nil
}

// loadPlanWith loads the plan at src, or, with only set, the plan with its
// scenarios replaced by that one scenario file.
func loadPlanWith(src, only string) (*scenario.Resolved, error) {
	if only == "" {
		return scenario.LoadPlan(src, world.Catalog)
	}
	plan, err := scenario.LoadPlan(src, world.Catalog)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.LoadScenario(only, world.Catalog)
	if err != nil {
		return nil, err
	}
	one := *plan
	one.Scenarios = []*scenario.Scenario{sc}
	return &one, nil
}

// scenarioScripted checks that an arm runs a scripted reference agent.
func scenarioScripted(arm scenario.Arm) (string, error) {
	switch arm.Agent {
	case scenario.AgentLLM, scenario.AgentCommand:
		return "", fmt.Errorf("agent %s is not scripted", arm.Agent)
	}
	return arm.Agent, nil
}
