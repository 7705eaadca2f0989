package agent

import (
	"testing"

	"rebound/core/harness"
)

func TestLazyBlockerBlamesNoToolAndDropsWhatItVerified(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool, chargeTool}, answers: map[string][]harness.Result{
		"payment.charge": {{Code: "INTERNAL", Retryable: true}},
	}, defaults: map[string]map[string]any{"invoice.read": {"amount": 5}}}
	_, claim := run(t, lazyBlocker{}, env, task(readStep, chargeStep))
	wantSent(t, env, "invoice.read", "payment.charge")
	wantClaim(t, claim, blockedOn("unknown", nil))
}

func TestLazyBlockerCompletesWhenNothingFails(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool, chargeTool}, defaults: map[string]map[string]any{"invoice.read": {"amount": 5}}}
	_, claim := run(t, lazyBlocker{}, env, task(readStep, chargeStep))
	wantClaim(t, claim, done(map[string]any{"amount": 5, "charged": true}))
}
