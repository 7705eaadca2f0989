package llm

import (
	"context"
	"strings"
	"testing"

	"rebound/core/agent/llm/llmtest"
	"rebound/core/bounds"
	"rebound/core/harness"
)

// planEnv is the trial runner's view of the harness: plan updates are
// answered (harness.PlanUpdater).
type planEnv struct{ testEnv }

func (e planEnv) UpdatePlan(summary string) harness.Result { return e.d.UpdatePlan(summary) }

// A plan update over the harness's cap reaches the model as the harness's
// INVALID_INPUT, not as a success; one within it is counted as before.
func TestOversizedPlanUpdateIsAnsweredToTheModel(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(
			llmtest.Call("call_a", "update_plan", map[string]any{"summary": strings.Repeat("p", bounds.PlanSummary)}),
			llmtest.Call("call_b", "update_plan", map[string]any{"summary": "read, then charge"}),
		),
		llmtest.Text("Nothing to do."),
		llmtest.Text(`{"status":"blocked","blocked_on":"shop.charge","charged":null,"charge_id":null}`),
	)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), planEnv{env}, testTask); err != nil {
		t.Fatal(err)
	}
	tms := toolMessages(srv.Requests()[1].Chat)
	if len(tms) != 2 || !strings.Contains(tms[0].Content, `"code":"INVALID_INPUT"`) || !strings.Contains(tms[0].Content, "cap of 65536 bytes") {
		t.Fatalf("tool messages = %+v", tms)
	}
	if !strings.Contains(tms[1].Content, `"plan_updates":1`) {
		t.Fatalf("the plan update within the cap: %s", tms[1].Content)
	}
	if l := env.d.Ledger(); len(l.Replans) != 2 || !l.Replans[0].Refused || l.Replans[1].Refused {
		t.Fatalf("replans = %+v", l.Replans)
	}
}
