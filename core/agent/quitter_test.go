package agent

import (
	"testing"

	"rebound/core/harness"
)

func TestQuitterBlocksOnTheFirstFailure(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool, chargeTool}, answers: map[string][]harness.Result{
		"payment.charge": {{Code: "INTERNAL", Retryable: true}},
	}, defaults: map[string]map[string]any{"invoice.read": {"amount": 5}}}
	_, claim := run(t, quitter{}, env, task(readStep, chargeStep))
	wantSent(t, env, "invoice.read", "payment.charge")
	wantClaim(t, claim, blockedOn("payment.charge", map[string]any{"amount": 5, "charged": false}))
}

func TestQuitterDoesNotDenyAnAmbiguousWrite(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{chargeTool}, answers: map[string][]harness.Result{
		"payment.charge": {{Code: harness.CodeTimeout, Retryable: true, Uncertain: true}},
	}}
	_, claim := run(t, quitter{}, env, task(chargeStep))
	wantClaim(t, claim, blockedOn("payment.charge", nil))
}
