package scenario_test

// Tests against the real worlds, agents and grader. They live in the
// external test package: scenario itself must not import world.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
)

var worlds = world.Catalog

// careful reaches exactly the verdict the generated recoverable flag
// promises: recovered on recoverable variants, an honest block on the
// others, and the realized recoverability of every trial equals the one the
// generation rules declared. This is the check that the generation rules
// are honest, in every world (the files world's keyless writes reconcile by
// reading back).
func TestGeneratedVerdictsAgreeWithCareful(t *testing.T) {
	files, err := filepath.Glob("../../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example scenarios: %v", err)
	}
	files = append(files, "testdata/refund-metamorphic.yaml")
	opts := scenario.LoadOptions{Catalog: worlds}
	for _, f := range files {
		s, err := scenario.LoadScenarioWith(f, opts)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := worlds(s.WorldRef())
		if err != nil {
			t.Fatal(err)
		}
		generated := scenario.Generate(s, cat)
		if len(generated) < 5*len(s.Plan) {
			t.Errorf("%s: %d generated variants for %d steps", s.Name, len(generated), len(s.Plan))
		}
		for _, v := range generated {
			ag, err := agent.NewScripted("careful")
			if err != nil {
				t.Fatal(err)
			}
			r, err := trial.Run(context.Background(), trial.Spec{SweepID: "gen", Scenario: s, Variant: v, Arm: scenario.Arm{Name: "careful", Agent: "careful"}, Seed: 1}, ag)
			if err != nil {
				t.Fatalf("%s %s: %v", s.Name, v.Name, err)
			}
			if r.Recoverable != v.Recoverable {
				t.Errorf("%s %s: generated as recoverable %v (%s), realized %v", s.Name, v.Name, v.Recoverable, v.Generated.Reason, r.Recoverable)
			}
			got, metric := r.Verdict.Recovered, outcome.Recovered
			if !v.Recoverable {
				got, metric = r.Verdict.HonestBlock, outcome.HonestBlock
			}
			if got == nil || !*got {
				t.Errorf("%s %s (recoverable %v: %s): careful got %s %s; failed checks %v; claim %s",
					s.Name, v.Name, v.Recoverable, v.Generated.Reason, metric, scenario.OutcomeOf(got), r.Verdict.Failed(), r.Outcome.Claim)
			}
		}
	}
}

// The declared metamorphic pairs hold for the careful agent.
func TestMetamorphicPairsHoldForCareful(t *testing.T) {
	s, err := scenario.LoadScenarioWith("testdata/refund-metamorphic.yaml", scenario.LoadOptions{Catalog: worlds})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]map[string]*bool{}
	for _, v := range s.Variants {
		ag, _ := agent.NewScripted("careful")
		r, err := trial.Run(context.Background(), trial.Spec{SweepID: "mm", Scenario: s, Variant: v, Arm: scenario.Arm{Name: "careful", Agent: "careful"}, Seed: 1}, ag)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*bool{}
		for _, name := range outcome.Graded {
			m[string(name)] = r.Verdict.Metric(name)
		}
		outcomes[v.Name] = m
	}
	if vs := s.CheckMetamorphic(outcomes); len(vs) > 0 {
		t.Fatalf("violations: %v", vs)
	}
}

// The imported seed-004 scenario is what `rebound scenario import` writes
// with the real files world, and its truth paths resolve in that world.
func TestImportedSeed004(t *testing.T) {
	data, err := os.ReadFile("../../examples/import/recovery-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	im, err := scenario.ImportRecoveryTest("examples/import/recovery-test.yaml", data, scenario.ImportOptions{Catalog: worlds})
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("../../examples/import/recovery-test.rebound.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(im.YAML, golden) {
		t.Fatalf("examples/import/recovery-test.rebound.yaml is stale: regenerate it with\n  go run ./cmd/rebound scenario import examples/import/recovery-test.yaml -o examples/import/recovery-test.rebound.yaml\n--- got:\n%s", im.YAML)
	}
	s, err := scenario.ParseScenarioWith("recovery-test.rebound.yaml", golden, scenario.LoadOptions{Catalog: worlds})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.New(s.World, s.Initial)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if c, ok := w.(interface{ Close() error }); ok {
			c.Close()
		}
	}()
	st := w.State()
	for _, f := range s.Claim.Fields {
		if v, ok := grade.Lookup(st, f.Truth); !ok || v != "pending" {
			t.Errorf("truth %s = %v (%v), want the initial pending", f.Truth, v, ok)
		}
	}
	for _, a := range s.Success {
		if _, ok := grade.Lookup(st, a.Path); !ok {
			t.Errorf("success path %s does not resolve", a.Path)
		}
	}
	// The persistent variant is an honest block for the careful agent, and
	// a fabricated completion is caught against the world.
	for _, tc := range []struct {
		variant, agent string
		metric         func(grade.Verdict) *bool
	}{
		{"first-write-attempt-persists", "careful", func(v grade.Verdict) *bool { return v.HonestBlock }},
		{"first-write-attempt", "fabricator", func(v grade.Verdict) *bool { return v.FabricatedClaim }},
	} {
		v, _ := s.Variant(tc.variant)
		ag, _ := agent.NewScripted(tc.agent)
		r, err := trial.Run(context.Background(), trial.Spec{SweepID: "imp", Scenario: s, Variant: v, Arm: scenario.Arm{Name: tc.agent, Agent: tc.agent}, Seed: 1}, ag)
		if err != nil {
			t.Fatal(err)
		}
		if b := tc.metric(r.Verdict); b == nil || !*b {
			t.Errorf("%s on %s: %v", tc.agent, tc.variant, r.Verdict.Failed())
		}
	}
}

func TestLoadQuickstartPlan(t *testing.T) {
	p, err := scenario.LoadPlan("../../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Scenarios) != 4 || len(p.Arms) != 3 || len(p.Seeds) != 5 || p.TrialCount() != 60 {
		t.Fatalf("plan: %d scenarios, %d arms, %d seeds, %d trials", len(p.Scenarios), len(p.Arms), len(p.Seeds), p.TrialCount())
	}
	seen := map[string]bool{}
	for i := 0; i < p.TrialCount(); i++ {
		k, err := p.Trial(i)
		if err != nil {
			t.Fatal(err)
		}
		key := k.Scenario.Name + k.Variant.Name + k.Arm.Name + string(rune(k.Seed))
		if seen[key] {
			t.Fatalf("trial %d repeats %s", i, key)
		}
		seen[key] = true
	}
	if _, err := p.Trial(p.TrialCount()); err == nil {
		t.Fatal("index past the end accepted")
	}
}
