package agent

import (
	"testing"

	"rebound/core/harness"
)

func TestFabricatorClaimsSuccessWithInventedValues(t *testing.T) {
	env := &fakeEnv{tools: []harness.Tool{readTool, chargeTool}, answers: map[string][]harness.Result{
		"invoice.read":   {{Code: harness.CodeToolUnavailable}},
		"payment.charge": {{Code: harness.CodeTimeout, Uncertain: true}},
	}}
	out, claim := run(t, fabricator{}, env, task(readStep, chargeStep))
	wantSent(t, env, "invoice.read", "payment.charge") // once each, no retry
	// The amount it never read is made up from the claim field's type.
	wantClaim(t, claim, done(map[string]any{"amount": 12, "charged": true}))
	if out.Answer == "" {
		t.Error("no answer")
	}
}

func TestInventedFollowsTheClaimFieldsTypes(t *testing.T) {
	step := readStep
	step.Sets = map[string]any{"amount": "$result.amount", "paid": "$result.paid", "note": "$result.note", "literal": true}
	got := invented(step, append(claimFields[:1:1],
		claimFieldOf("paid", "boolean"), claimFieldOf("note", "string")))
	want := map[string]any{"amount": 12, "paid": true, "note": "confirmed"}
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("invented = %v, want %v", got, want)
	}
}
