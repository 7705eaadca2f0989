package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/results/record"
)

// memSource is a Source over records in memory.
type memSource struct {
	sweeps map[string]record.Sweep
	trials map[string]record.Trial
	calls  map[string][]record.ToolCall
}

func (m memSource) Trial(_ context.Context, id string) (record.Trial, []record.ToolCall, error) {
	t, ok := m.trials[id]
	if !ok {
		return t, nil, fmt.Errorf("trial %s: %w", id, record.ErrNotFound)
	}
	return t, m.calls[id], nil
}

func (m memSource) Sweep(_ context.Context, id string) (record.Sweep, error) {
	sw, ok := m.sweeps[id]
	if !ok {
		return sw, fmt.Errorf("sweep %s: %w", id, record.ErrNotFound)
	}
	return sw, nil
}

var _ Source = memSource{}

func storedTrial(t *testing.T) memSource {
	t.Helper()
	plan, err := json.Marshal(scenario.Resolved{Name: "p", Scenarios: []*scenario.Scenario{{Name: "refund", Goal: "refund the invoice", Tools: []string{"payments.refund", "payments.refundStatus"}}}})
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	verdict, err := json.Marshal(grade.Verdict{Recovered: &no, DuplicateSideEffect: &yes})
	if err != nil {
		t.Fatal(err)
	}
	return memSource{
		sweeps: map[string]record.Sweep{"s": {SweepID: "s", PlanJSON: string(plan)}},
		trials: map[string]record.Trial{"t1": {SweepID: "s", TrialID: "t1", Scenario: "refund", Variant: "timeout", Arm: "a", Seed: 3,
			Agent: "careful", ScenarioHash: "h", CatalogVersion: "c", FaultSchedule: `{"1":"timeout"}`, Claim: `{"status":"completed"}`,
			Verdicts: string(verdict)}},
		calls: map[string][]record.ToolCall{"t1": {
			{CallIndex: 1, Tool: "payments.refund", Args: `{"invoice_id":"inv_1"}`, FaultClass: "timeout", Code: "TIMEOUT", Retryable: true, Committed: true, AtMS: 5},
			{CallIndex: 2, Tool: "payments.refund", Args: `{"invoice_id":"inv_1"}`, OK: true, Committed: true, AtMS: 900},
		}},
	}
}

func TestArtifactFromStoredRecords(t *testing.T) {
	src := storedTrial(t)
	a, err := Artifact(context.Background(), src, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Goal != "refund the invoice" || !slices.Equal(a.AllowedTools, []string{"payments.refund", "payments.refundStatus"}) {
		t.Errorf("goal %q, tools %v: want the plan's scenario", a.Goal, a.AllowedTools)
	}
	if len(a.Calls) != 2 || a.Calls[0].Fault != "timeout" || a.Calls[0].Code != "TIMEOUT" || !a.Calls[0].Committed || a.Calls[1].AtMs != 900 || !a.Calls[1].OK {
		t.Errorf("calls = %+v, want the stored tool calls in order", a.Calls)
	}
	if a.Reproduce["sweep"] != "s" || a.Reproduce["agent"] != "careful" || a.Reproduce["scenario_hash"] != "h" {
		t.Errorf("reproduce = %v", a.Reproduce)
	}
	if got := a.Outcomes[string(outcome.DuplicateSideEffect)]; got == nil || !*got {
		t.Errorf("outcomes = %v, want the stored verdict's duplicate side effect", a.Outcomes)
	}
}

func TestArtifactErrors(t *testing.T) {
	ctx := context.Background()
	src := storedTrial(t)
	if _, err := Artifact(ctx, src, "gone"); !errors.Is(err, record.ErrNotFound) || !strings.Contains(err.Error(), "rebound trials SWEEP_ID") {
		t.Errorf("an unknown trial: %v, want record.ErrNotFound and how to find one", err)
	}
	tr := src.trials["t1"]
	tr.Verdicts = "{not json"
	src.trials["t1"] = tr
	if _, err := Artifact(ctx, src, "t1"); err == nil || !strings.Contains(err.Error(), "stored verdicts are unreadable") {
		t.Errorf("unreadable verdicts: %v", err)
	}
	// The sweep's plan is optional: without it the artifact has no goal,
	// and is still built.
	tr.Verdicts = "{}"
	src.trials["t1"] = tr
	delete(src.sweeps, "s")
	if a, err := Artifact(ctx, src, "t1"); err != nil || a.Goal != "" || len(a.Calls) != 2 {
		t.Errorf("without the sweep: %+v, %v", a, err)
	}
}
