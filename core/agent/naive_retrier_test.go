package agent

import (
	"slices"
	"testing"

	"rebound/core/harness"
)

func TestNaiveRetrierRepeatsTheIdenticalCallWithoutWaiting(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool}, answers: map[string][]harness.Result{
		"invoice.read": {{Code: harness.CodeRateLimited, Retryable: true, RetryAfterMs: 2000}, {Code: "INTERNAL"}},
	}, defaults: map[string]map[string]any{"invoice.read": {"amount": 5}}}
	_, claim := run(t, naiveRetrier{}, env, task(readStep))
	wantSent(t, env, "invoice.read", "invoice.read", "invoice.read")
	if len(env.slept) != 0 {
		t.Errorf("slept %v: the naive retrier never waits", env.slept)
	}
	if len(env.replans) != 2 {
		t.Errorf("replans %q, want one per retry", env.replans)
	}
	wantClaim(t, claim, done(map[string]any{"amount": 5}))
}

func TestNaiveRetrierFilesNoClaimWhenTheBudgetRunsOut(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool}, limit: 4, answers: map[string][]harness.Result{
		"invoice.read": slices.Repeat([]harness.Result{{Code: "INTERNAL", Retryable: true}}, 10),
	}}
	out, claim := run(t, naiveRetrier{}, env, task(readStep))
	if claim != nil || out.Answer == "" {
		t.Errorf("outcome %+v, want no claim and an answer", out)
	}
	if len(env.calls) != 4 {
		t.Errorf("%d calls, want all 4 the budget allows", len(env.calls))
	}
}
