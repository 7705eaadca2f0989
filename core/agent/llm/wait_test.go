package llm

import (
	"context"
	"encoding/json"
	"testing"

	"rebound/core/agent/llm/llmtest"
	"rebound/core/harness"
)

func TestMaxWaitMs(t *testing.T) {
	for _, c := range []struct {
		budget harness.Budget
		now    int64
		want   int64
	}{
		{harness.Budget{DeadlineMs: 60000}, 0, 60000 + WaitBeyondDeadlineMs},
		{harness.Budget{DeadlineMs: 60000}, 45000, 15000 + WaitBeyondDeadlineMs},
		{harness.Budget{DeadlineMs: 60000}, 90000, WaitBeyondDeadlineMs}, // already past the deadline
		{harness.Budget{}, 0, MaxWaitNoDeadlineMs},
		{harness.Budget{}, 1 << 40, MaxWaitNoDeadlineMs},
	} {
		if got := MaxWaitMs(c.budget, c.now); got != c.want {
			t.Errorf("MaxWaitMs(%+v, %d) = %d, want %d", c.budget, c.now, got, c.want)
		}
	}
	for _, c := range []struct {
		ms any
		ok bool
	}{
		{float64(0), true}, {float64(120000), true}, {float64(120001), false},
		{float64(1 << 53), false}, {float64(-1), false}, {1.5, false}, {"soon", false}, {nil, false},
	} {
		ms, refused := WaitArg(map[string]any{"ms": c.ms}, harness.Budget{DeadlineMs: 60000}, 0)
		if (refused == nil) != c.ok {
			t.Errorf("WaitArg(%v): %d, %+v", c.ms, ms, refused)
		}
		if refused != nil && (refused.OK || refused.Code != harness.CodeInvalidInput || refused.Retryable) {
			t.Errorf("WaitArg(%v) refused with %s", c.ms, refused.JSON())
		}
	}
}

// The LLM agent's wait is bounded like the tool server's: a jump far past
// the deadline is INVALID_INPUT and leaves the clock alone; the longest
// allowed wait (remaining deadline plus WaitBeyondDeadlineMs) goes through.
func TestLLMWaitIsBounded(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(llmtest.Call("call_1", "wait", map[string]any{"ms": 1 << 53})),
		llmtest.Calls(llmtest.Call("call_2", "wait", map[string]any{"ms": testTask.Budget.DeadlineMs + WaitBeyondDeadlineMs + 1})),
		llmtest.Calls(llmtest.Call("call_3", "wait", map[string]any{"ms": testTask.Budget.DeadlineMs + WaitBeyondDeadlineMs})),
		llmtest.Text("done"),
		llmtest.Text(`{"status":"blocked","blocked_on":"shop.charge","charged":false,"charge_id":null}`),
	)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	for i, want := range []bool{false, false, true} {
		var r harness.Result
		content := lastMessage(reqs[i+1].Chat).Content
		if err := json.Unmarshal([]byte(content), &r); err != nil || r.OK != want {
			t.Errorf("wait %d: %s", i+1, content)
		}
		if !want && r.Code != harness.CodeInvalidInput {
			t.Errorf("wait %d refused with %s", i+1, content)
		}
	}
	if got, want := env.Now(), testTask.Budget.DeadlineMs+WaitBeyondDeadlineMs; got != want {
		t.Errorf("clock at %d ms, want %d (only the bounded wait moves it)", got, want)
	}
}
