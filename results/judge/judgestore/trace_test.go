package judgestore

import (
	"encoding/json"
	"strings"
	"testing"

	"rebound/core/harness"
	"rebound/results/judge"
	"rebound/results/record"
)

func TestTraceFromStored(t *testing.T) {
	tr := record.Trial{SweepID: "s", TrialID: "t", Claim: `{"status":"completed","charged":true}`, Answer: "Charged after two retries."}
	res1, _ := json.Marshal(harness.Result{Code: "BAD_GATEWAY", Retryable: true, Message: "502 Bad Gateway", RetryAfterMs: 250})
	res2, _ := json.Marshal(harness.Result{OK: true, Data: map[string]any{"status": "captured"}})
	calls := []record.ToolCall{
		{CallIndex: 1, Tool: "payments.charge", Args: `{"order_id":"A-1"}`, FaultClass: "transient", Code: "BAD_GATEWAY", Retryable: true, RetryAfterMS: 250, AtMS: 0, Result: string(res1)},
		{CallIndex: 2, Tool: "payments.charge", Args: `{"order_id":"A-1"}`, OK: true, Committed: true, AtMS: 1400, Result: string(res2)},
	}
	got := TraceFromStored("Charge A-1", tr, calls)
	if got.Goal != "Charge A-1" || got.Answer != tr.Answer || got.Claim != tr.Claim || len(got.Calls) != 2 {
		t.Fatalf("%+v", got)
	}
	c1, c2 := got.Calls[0], got.Calls[1]
	if c1.OK || c1.Retryable == nil || !*c1.Retryable || c1.RetryAfterMs != 250 || c1.Message != "502 Bad Gateway" || c1.Fault != "transient" || c1.Data != nil {
		t.Fatalf("failed call %+v", c1)
	}
	if !c2.OK || c2.Retryable != nil || !c2.Committed || c2.AtMs != 1400 || string(c2.Data) != `{"status":"captured"}` {
		t.Fatalf("ok call %+v", c2)
	}
	in := judge.Input{Scenario: "charge", Trace: got}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	doc, _ := in.Document()
	if !strings.Contains(string(doc), `"retryable":true,"retry_after_ms":250,"message":"502 Bad Gateway"`) {
		t.Fatalf("document %s", doc)
	}
}
