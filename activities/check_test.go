package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/workflows"
)

// A plan that cannot run fails the sweep at registration with a
// non-retryable error naming every problem, instead of ten retries later.
func TestRegisterSweepRefusesUnrunnablePlansForGood(t *testing.T) {
	plan, err := scenario.LoadPlan("../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	plan.Arms = append(plan.Arms, scenario.Arm{Name: "ghost", Agent: "nobody"})
	sc := *plan.Scenarios[0]
	sc.World, sc.Initial, sc.File = "files", map[string]any{"files": map[string]any{"../escape": "x"}}, "escape.yaml"
	// What lint refuses, run refuses: a plan that cannot reach the goal
	// even without faults.
	unreachable := *plan.Scenarios[0]
	unreachable.File = "unreachable.yaml"
	unreachable.Success = append(append([]scenario.Assertion(nil), unreachable.Success...), scenario.Assertion{Path: "no.such.path", Equals: "never"})
	plan.Scenarios = append(plan.Scenarios, &sc, &unreachable)
	b, _ := json.Marshal(plan)
	a := &Activities{RedactionKey: []byte("0123456789abcdef0123456789abcdef")}
	err = a.RegisterSweep(context.Background(), workflows.RegisterSweepInput{SweepID: "s", PlanJSON: string(b), Trials: plan.TrialCount()})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrInvalidPlan {
		t.Fatalf("err = %v, want a non-retryable %s", err, workflows.ErrInvalidPlan)
	}
	for _, want := range []string{`arm ghost: agent "nobody"`, "escape.yaml: initial: world files refuses the initial state",
		"unreachable.yaml: plan: the reference plan does not reach the goal even without faults"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	// Without a redaction key nothing runs either.
	if err := (&Activities{}).RegisterSweep(context.Background(), workflows.RegisterSweepInput{SweepID: "s", PlanJSON: string(b), Trials: plan.TrialCount()}); !errors.As(err, &ae) || !ae.NonRetryable() {
		t.Fatalf("no key: %v", err)
	}
}
