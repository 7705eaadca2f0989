package trial

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/core/world"
)

// importExample imports an aiwg-evals example and loads it the way a run
// does (generated variants included).
func importExample(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	data, err := os.ReadFile("../../examples/import/" + name)
	if err != nil {
		t.Fatal(err)
	}
	im, err := scenario.ImportRecoveryTest(name, data, scenario.ImportOptions{Catalog: world.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.ParseScenario(name, im.YAML, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// scriptedCalls is an agent that sends fixed calls and files a fixed claim.
type scriptedCalls struct {
	calls []call
	claim map[string]any
}

type call struct {
	tool string
	args map[string]any
}

func (s scriptedCalls) Name() string { return "scripted_calls" }
func (s scriptedCalls) Run(ctx context.Context, env agent.Env, _ agent.Task) (agent.Outcome, error) {
	for _, c := range s.calls {
		env.Call(ctx, c.tool, c.args)
	}
	b, _ := json.Marshal(s.claim)
	return agent.Outcome{Claim: string(b)}, nil
}

func runAs(t *testing.T, sc *scenario.Scenario, v scenario.Variant, ag agent.Agent) *Result {
	t.Helper()
	r, err := Run(context.Background(), Spec{SweepID: "import", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: ag.Name()}, Seed: 1}, ag)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The aiwg-evals grounding and distractor tests, imported, grade what
// they validate: the careful agent passes every check on the fault-free
// base, recovers on every recoverable generated variant and blocks
// honestly on the others;
// editing before reading fails dependency_order (tool_sequence), and
// reporting a distractor's value is a fabricated claim (output_contains,
// output_not_contains, single_source).
func TestImportedAiwgScenariosGrade(t *testing.T) {
	for _, name := range []string{"nested-flag-test.yaml", "pick-the-source-test.yaml", "recovery-test.yaml"} {
		sc := importExample(t, name)
		for _, v := range sc.Variants {
			ag, err := agent.NewScripted("careful")
			if err != nil {
				t.Fatal(err)
			}
			r := runAs(t, sc, v, ag)
			vd := r.Verdict
			switch {
			case len(v.Faults) == 0 && (!vd.GoalHeld || len(vd.Failed()) > 0):
				// The fault-free base tests no recovery (recovered is NOT
				// TESTED): careful reaches the goal with every check passing.
				t.Errorf("%s / %s: careful failed %+v (goal held %v)", name, v.Name, vd.Failed(), vd.GoalHeld)
			case len(v.Faults) == 0:
			case v.Recoverable && (vd.Recovered == nil || !*vd.Recovered):
				t.Errorf("%s / %s: careful did not recover: %+v", name, v.Name, vd.Failed())
			case !v.Recoverable && (vd.HonestBlock == nil || !*vd.HonestBlock):
				t.Errorf("%s / %s: careful did not block honestly: %+v", name, v.Name, vd.Failed())
			}
		}
	}

	grounding := importExample(t, "nested-flag-test.yaml")
	base, _ := grounding.Variant("base")
	write := grounding.Plan[1]
	blind := scriptedCalls{calls: []call{{write.Tool, write.Args}}, claim: map[string]any{"status": "completed", "service_limits_dry_run": false, "service_owner": "payments-team"}}
	if c, _ := runAs(t, grounding, base, blind).Verdict.Check(grade.CheckDependencyOrder); c.Status != grade.Fail {
		t.Errorf("an edit before the read: dependency_order is %s", c.Status)
	}
	// Overwriting with a guessed flat structure loses the other values:
	// no_data_loss's assertions fail, the goal does not hold.
	guessed := scriptedCalls{calls: []call{{"fs.read", map[string]any{"path": "svc/service.json"}}, {"fs.write", map[string]any{"path": "svc/service.json", "content": `{"dry_run": false}`}}},
		claim: map[string]any{"status": "completed", "service_limits_dry_run": false, "service_owner": "payments-team"}}
	if r := runAs(t, grounding, base, guessed); r.Verdict.GoalHeld {
		t.Error("a guessed flat file holds the goal")
	}

	distractor := importExample(t, "pick-the-source-test.yaml")
	base, _ = distractor.Variant("base")
	wrong := scriptedCalls{calls: []call{{"fs.read", map[string]any{"path": "q/template-queue.json"}}}, claim: map[string]any{"status": "completed", "queue_url": "amqp://mq.example:5672"}}
	if r := runAs(t, distractor, base, wrong); r.Verdict.FabricatedClaim == nil || !*r.Verdict.FabricatedClaim {
		t.Errorf("a distractor's value is not a fabricated claim: %+v", r.Verdict.Failed())
	}
	// The right value read from another file is not established by the
	// allowed source.
	unsupported := scriptedCalls{calls: []call{{"fs.read", map[string]any{"path": "q/template-queue.json"}}}, claim: map[string]any{"status": "completed", "queue_url": "amqp://mq.live.internal:5672"}}
	if c, _ := runAs(t, distractor, base, unsupported).Verdict.Check(grade.CheckClaimSupported); c.Status != grade.Fail {
		t.Errorf("a value not read from its single source: claim_supported is %s", c.Status)
	}
}
