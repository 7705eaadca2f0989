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
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// A plan whose projected cost (recorded trials of the same model) exceeds
// its max_usd is refused at registration, for good, and the sweep is never
// stored; under the cap it registers.
func TestRegisterSweepRefusesOverMaxUSD(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadPlan("../examples/plans/prompt-matrix.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	// History: earlier trials of llama3.1:8b on the plan's first scenario,
	// $0.50 each (recorded cost: the plan sets no prices).
	var hist []record.Trial
	for _, id := range []string{"h1", "h2", "h3"} {
		hist = append(hist, record.Trial{SweepID: "earlier", TrialID: id, Scenario: plan.Scenarios[0].Name, Variant: "v", Arm: "x",
			Agent: "llm:llama3.1:8b:recovery-v1@0123456789abcdef", Seed: 1, FaultClasses: []string{}, Weight: 1, CostUSD: 0.5,
			Verdicts: "{}", FaultSchedule: "{}"})
	}
	if err := st.WriteTrials(ctx, hist, nil); err != nil {
		t.Fatal(err)
	}
	llamaArms := 0
	for _, a := range plan.Arms {
		if a.LLM != nil && a.LLM.Model == "llama3.1:8b" {
			llamaArms++
		}
	}
	projected := 0.5 * float64(llamaArms*plan.TrialCount()/len(plan.Arms))
	a := &Activities{Store: st, RedactionKey: []byte("0123456789abcdef0123456789abcdef")}
	register := func(id string, maxUSD float64) error {
		plan.MaxUSD = maxUSD
		b, _ := json.Marshal(plan)
		return a.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: id, PlanJSON: string(b), Trials: plan.TrialCount()})
	}
	err = register("over", projected/2)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrOverBudget {
		t.Fatalf("err = %v, want a non-retryable %s", err, workflows.ErrOverBudget)
	}
	if !strings.Contains(err.Error(), "max_usd") || !strings.Contains(err.Error(), "projected cost") {
		t.Errorf("error does not explain itself: %v", err)
	}
	if _, err := st.Sweep(ctx, "over"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("the refused sweep was stored: %v", err)
	}
	if err := register("under", projected*2); err != nil {
		t.Fatalf("under the cap: %v", err)
	}
	if sw, err := st.Sweep(ctx, "under"); err != nil || sw.Status != sweepstatus.Running {
		t.Errorf("sweep under the cap: %+v, %v", sw, err)
	}
}
