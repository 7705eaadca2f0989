package toolserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/scenario"
	"rebound/core/toolserver"
	"rebound/core/trial"
)

// The budgets reach an external agent: the instructions state them, and
// trial_status answers what is left of them, from the harness's own counts,
// without being a tool call (never in the ledger, never faulted, no budget).
func TestTrialStatusReportsTheBudgets(t *testing.T) {
	sc := load(t, "charge-502-twice") // budget: 6 calls, 4 replans, 60000 ms
	v := variant(t, sc, "502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	drive := func(ctx context.Context, sess *mcp.ClientSession, _ *toolserver.Running) error {
		in := sess.InitializeResult().Instructions
		for _, want := range []string{"at most 6 tool calls", "deadline: 60000 ms", "at most 4 plan updates", "trial_status"} {
			if !strings.Contains(in, want) {
				t.Errorf("instructions lack %q:\n%s", want, in)
			}
		}
		status := func() map[string]any {
			res, body := callText(t, ctx, sess, toolserver.ToolStatus, map[string]any{})
			if res.IsError || body["ok"] != true {
				t.Fatalf("trial_status: %v", body)
			}
			return body["data"].(map[string]any)
		}
		// Called over and over, it never spends a call or moves the clock.
		for range 10 {
			status()
		}
		st := status()
		want := map[string]any{"calls_used": 0.0, "call_limit": 6.0, "calls_left": 6.0, "now_ms": 0.0, "deadline_ms": 60000.0,
			"time_left_ms": 60000.0, "replans_used": 0.0, "replan_limit": 4.0, "replans_left": 4.0, "cost_limit_usd": 0.0, "cost_left_usd": nil}
		for k, w := range want {
			if st[k] != w {
				t.Errorf("fresh trial_status %s = %v, want %v (%v)", k, st[k], w, st)
			}
		}
		args := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
		callText(t, ctx, sess, "payments__charge", args) // 502
		callText(t, ctx, sess, "wait", map[string]any{"ms": 1500})
		callText(t, ctx, sess, "update_plan", map[string]any{"summary": "retry the charge"})
		st = status()
		if st["calls_used"] != 1.0 || st["calls_left"] != 5.0 || st["replans_used"] != 1.0 || st["replans_left"] != 3.0 {
			t.Errorf("after a call and a plan update: %v", st)
		}
		now, _ := st["now_ms"].(float64)
		if now < 1500 || st["time_left_ms"] != 60000-now {
			t.Errorf("after wait(1500): now_ms %v, time_left_ms %v", st["now_ms"], st["time_left_ms"])
		}
		return nil
	}
	res, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Ledger.Attempts); n != 1 {
		t.Errorf("ledger has %d attempts, want 1: trial_status is not a tool call", n)
	}
}
