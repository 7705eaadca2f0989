package llm

import (
	"fmt"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/harness"
)

// The prompt states the call limit the harness enforces: the scenario's
// budget, or the harness default when the scenario sets none (it used to say
// "no fixed limit" there while the harness refused call 51).
func TestSystemMessageStatesTheEnforcedCallLimit(t *testing.T) {
	for _, tc := range []struct {
		calls int
		want  int
	}{{0, harness.DefaultToolCalls}, {7, 7}, {harness.MaxToolCalls + 5, harness.MaxToolCalls}} {
		task := agent.Task{Goal: "g", Budget: harness.Budget{ToolCalls: tc.calls}}
		msg := systemMessage("", task, nil)
		want := fmt.Sprintf("at most %d tool calls", tc.want)
		if !strings.Contains(msg, want) || strings.Contains(msg, "no fixed limit") {
			t.Errorf("budget.tool_calls=%d: prompt lacks %q:\n%s", tc.calls, want, msg)
		}
		if got := (harness.Budget{ToolCalls: tc.calls}).CallLimit(); got != tc.want {
			t.Errorf("budget.tool_calls=%d: the harness enforces %d, the prompt says %d", tc.calls, got, tc.want)
		}
	}
}
