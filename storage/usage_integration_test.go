package storage

import (
	"context"
	"fmt"
	"testing"

	"rebound/results/record"
)

// Scenario names are free text a user wrote: Usage matches names with a
// quote, a backslash, a tab or a bracket exactly, and no other (an
// Array(String) parameter failed on a quote on the embedded engine and
// doubled a backslash, matching nothing).
func TestUsageMatchesScenarioNamesExactly(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	names := []string{`it's`, `back\slash`, "tab\there", `['x']`, `plain`, `back\\slash`}
	var trials []record.Trial
	for i, n := range names {
		for k := range i + 1 { // name i has i+1 trials
			trials = append(trials, record.Trial{SweepID: "usage-names", TrialID: fmt.Sprintf("u%d-%d", i, k), Scenario: n, ScenarioHash: "h",
				Variant: "v1", Arm: "a", Agent: "careful", Seed: uint64(k), Weight: 1, ActivityAttempt: 1, CostUSD: 0.01})
		}
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		got, err := st.Usage(ctx, record.UsageSelect{Agent: "careful", Scenarios: []string{n}, Limit: 100})
		if err != nil {
			t.Fatalf("Usage of scenario %q: %v", n, err)
		}
		if len(got) != i+1 {
			t.Errorf("Usage of scenario %q: %d trials, want %d", n, len(got), i+1)
		}
	}
	got, err := st.Usage(ctx, record.UsageSelect{Agent: "careful", Scenarios: names[:2], Limit: 100})
	if err != nil || len(got) != 3 {
		t.Errorf("Usage of %q: %d trials (%v), want 3", names[:2], len(got), err)
	}
}
