package activities

import (
	"errors"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/internal/redact"
)

// A trial is stored as unsealed exactly when its process ran with
// sandbox: none; sealed processes and built-in agents (no process) are not.
func TestRowsMarkUnsealedProcesses(t *testing.T) {
	red, _ := redact.New(nil, []byte("k"))
	for _, tt := range []struct {
		name string
		p    *agent.Process
		want bool
	}{
		{"built-in agent", nil, false},
		{"sealed", &agent.Process{Command: []string{"./agent"}, Sandbox: agent.SandboxSealed}, false},
		{"sandbox none", &agent.Process{Command: []string{"./agent"}, Sandbox: agent.SandboxNone}, true},
		{"no sandbox recorded", &agent.Process{Command: []string{"./agent"}}, false},
	} {
		r, _ := refundTrial(t, "careful")
		r.Outcome.Process = tt.p
		if tr, _ := Rows(r, red); tr.Unsealed != tt.want {
			t.Errorf("%s: Unsealed = %v, want %v", tt.name, tr.Unsealed, tt.want)
		}
	}
}

// A trial lost to attrition never reports its process's sandbox; the arm
// does: a command arm with sandbox: none is unsealed, any other is not.
func TestAttritionRowMarksUnsealedArms(t *testing.T) {
	red, _ := redact.New(nil, []byte("k"))
	_, spec := refundTrial(t, "careful")
	for _, tt := range []struct {
		name string
		arm  scenario.Arm
		want bool
	}{
		{"built-in agent", scenario.Arm{Name: "a", Agent: "careful"}, false},
		{"sealed command arm (default)", scenario.Arm{Name: "a", Agent: scenario.AgentCommand, Command: []string{"./agent"}}, false},
		{"sealed command arm", scenario.Arm{Name: "a", Agent: scenario.AgentCommand, Command: []string{"./agent"}, Sandbox: agent.SandboxSealed}, false},
		{"command arm, sandbox none", scenario.Arm{Name: "a", Agent: scenario.AgentCommand, Command: []string{"./agent"}, Sandbox: agent.SandboxNone}, true},
		{"sandbox none on a built-in agent", scenario.Arm{Name: "a", Agent: "careful", Sandbox: agent.SandboxNone}, false},
	} {
		spec.Arm = tt.arm
		if row := AttritionRow(spec, "cmd", errors.New("exit 75"), red); row.Unsealed != tt.want {
			t.Errorf("%s: Unsealed = %v, want %v", tt.name, row.Unsealed, tt.want)
		}
	}
}
