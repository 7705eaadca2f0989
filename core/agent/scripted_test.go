package agent

import (
	"slices"
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

func claimFieldOf(name, typ string) scenario.ClaimField {
	return scenario.ClaimField{Name: name, Type: typ}
}

func TestScriptedAgentsAreRegisteredUnderTheirNames(t *testing.T) {
	want := []string{"blind_resubmitter", "careful", "corrupt_data_truster", "fabricator", "lazy_blocker", "naive_retrier", "privilege_escalator", "quitter"}
	if got := ScriptedNames(); !slices.Equal(got, want) {
		t.Fatalf("ScriptedNames() = %v, want %v", got, want)
	}
	for _, name := range want {
		ag, err := NewScripted(name)
		if err != nil {
			t.Fatal(err)
		}
		if ag.Name() != name {
			t.Errorf("NewScripted(%q).Name() = %q", name, ag.Name())
		}
	}
	if _, err := NewScripted("reckless"); err == nil {
		t.Error("an unknown name was accepted")
	}
}

func TestReferencePoliciesAreCarefulThenItsEconomicalTwin(t *testing.T) {
	var names []string
	for _, ag := range ReferencePolicies() {
		names = append(names, ag.Name())
	}
	if want := []string{"careful", "careful_economical"}; !slices.Equal(names, want) {
		t.Errorf("ReferencePolicies() = %v, want %v", names, want)
	}
}

// A run's state belongs to the run: the same agent value runs twice alike
// (its call count, rate limits and failing calls start anew).
func TestCarefulRunsKeepNoStateBetweenRuns(t *testing.T) {
	var ag Agent = careful{}
	for i := range 2 {
		env := &fakeEnv{tools: []harness.Tool{readTool}, answers: map[string][]harness.Result{
			"invoice.read": slices.Repeat([]harness.Result{{Code: harness.CodeRateLimited, Retryable: true, RetryAfterMs: 700}}, 10),
		}}
		tk := task(readStep)
		tk.Budget.ToolCalls = 2
		run(t, ag, env, tk)
		if len(env.calls) != 2 || !slices.Equal(env.slept, []int64{700, 1000}) {
			t.Errorf("run %d: %d calls, slept %v; want 2 calls and the waits 700, 1000 ms", i+1, len(env.calls), env.slept)
		}
	}
}
