package grade

import (
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// Binding ties each call to the step it serves: by arguments first, then
// by plan order; a call sharing none of a step's arguments serves none.
func TestBind(t *testing.T) {
	cases := []struct {
		name  string
		calls []call
		want  []string // step id (role) per call; "-" off plan
	}{
		{"clean path", cleanPath, []string{"read-a", "refund-a", "read-b", "refund-b"}},
		{"B before A, by arguments", []call{
			{tool: "inv.get", args: a("B"), res: okData()},
			{tool: "inv.get", args: a("A"), res: okData()},
		}, []string{"read-b", "read-a"}},
		{"another record is off plan", []call{
			{tool: "inv.get", args: a("C"), res: okData()},
		}, []string{"-"}},
		{"a resend with a fresh key serves the same step", []call{
			{tool: "inv.get", args: a("A"), res: okData()},
			{tool: "inv.refund", args: refund("A", "ka"), res: ambiguous()},
			{tool: "inv.refund", args: refund("A", "other"), res: okData()},
		}, []string{"read-a", "refund-a", "refund-a"}},
		{"a status call reconciles the pending write, then serves the plan's confirmation", []call{
			{tool: "inv.get", args: a("B"), res: okData()},
			{tool: "inv.refund", args: refund("B", "kb"), res: ambiguous()},
			{tool: "inv.status", args: status("kb"), res: okData("status", "completed")},
		}, []string{"read-b", "refund-b", "refund-b (reconcile)"}},
		{"a fallback serves its step", []call{
			{tool: "inv.get", args: a("A"), res: okData()},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed("FORBIDDEN", false)},
			{tool: "inv.replica", args: a("B"), res: staleData()},
		}, []string{"read-a", "refund-a", "read-b", "read-b (fallback)"}},
		{"the forbidden tool is off plan", []call{
			{tool: "admin.sql", args: map[string]any{"sql": "x"}, res: okData()},
		}, []string{"-"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := ledger(tc.calls...)
			got := bind(twoInvoices(), testTools, l.Attempts)
			for i, b := range got {
				s := "-"
				if b.Step >= 0 {
					s = b.StepID
					if b.Role != RolePrimary {
						s += " (" + string(b.Role) + ")"
					}
				}
				if s != tc.want[i] {
					t.Errorf("call %d bound to %s, want %s (%+v)", i+1, s, tc.want[i], b)
				}
			}
		})
	}
	// The reconciliation answer also serves the optional confirmation step.
	l := ledger(
		call{tool: "inv.get", args: a("B"), res: okData()},
		call{tool: "inv.refund", args: refund("B", "kb"), res: ambiguous()},
		call{tool: "inv.status", args: status("kb"), res: okData("status", "completed")},
	)
	if b := bind(twoInvoices(), testTools, l.Attempts)[2]; b.Also != 4 {
		t.Errorf("reconciliation answer also serves step %d, want 4 (confirm-b)", b.Also)
	}
}

// A plan that reads the same thing before and after a write: a re-read
// after a stale first answer is a retry of the first read, not the read
// after the write, which is not reached before the write.
func TestBindRereadBeforeTheWrite(t *testing.T) {
	sc := twoInvoices()
	sc.Plan = []scenario.Step{
		{ID: "before", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}},
		{ID: "refund", Tool: "inv.refund", Args: refund("A", "ka"), Sets: map[string]any{"refunded_a": true}},
		{ID: "after", Tool: "inv.get", Args: a("A")},
	}
	l := ledger(
		call{tool: "inv.get", args: a("A"), res: staleData("amount", 100)},
		call{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 500},
		call{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
		call{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
	)
	got := bind(sc, testTools, l.Attempts)
	want := []string{"before", "before", "refund", "after"}
	for i, b := range got {
		if b.StepID != want[i] {
			t.Errorf("call %d bound to %q, want %q", i+1, b.StepID, want[i])
		}
	}
	// A corrupt answer to a keyless write is settled by reading it back:
	// the read-back reconciles the write, it is not a re-read of a step.
	sc2 := &scenario.Scenario{Plan: []scenario.Step{
		{ID: "read", Tool: "fs.read", Args: map[string]any{"path": "f"}},
		{ID: "write", Tool: "fs.write", Args: map[string]any{"path": "f", "content": "x"}},
	}}
	l2 := ledger(
		call{tool: "fs.read", args: map[string]any{"path": "f"}, res: okData("content", "old")},
		call{tool: "fs.write", args: map[string]any{"path": "f", "content": "x"}, res: okData("parse_error", "x"), corrupt: true},
		call{tool: "fs.read", args: map[string]any{"path": "f"}, res: okData("path", "f", "content", "x")},
	)
	if b := bind(sc2, testTools, l2.Attempts)[2]; b.StepID != "write" || b.Role != RoleReconcile {
		t.Errorf("read-back bound to %s (%s), want the write's reconciliation", b.StepID, b.Role)
	}
	// A read of another file while a keyless write waits for its read-back
	// says nothing about the write: it serves its own step.
	sc3 := &scenario.Scenario{Plan: []scenario.Step{
		{ID: "write", Tool: "fs.write", Args: map[string]any{"path": "f", "content": "x"}},
		{ID: "read-g", Tool: "fs.read", Args: map[string]any{"path": "g"}},
	}}
	l3 := ledger(
		call{tool: "fs.write", args: map[string]any{"path": "f", "content": "x"}, res: ambiguous()},
		call{tool: "fs.read", args: map[string]any{"path": "g"}, res: failed("TIMEOUT", true)},
		call{tool: "fs.read", args: map[string]any{"path": "f"}, res: okData("path", "f", "content", "x")},
	)
	got3 := bind(sc3, testTools, l3.Attempts)
	if b := got3[1]; b.StepID != "read-g" || b.Role != RolePrimary {
		t.Errorf("read of another file bound to %s (%s), want read-g (primary)", b.StepID, b.Role)
	}
	if b := got3[2]; b.StepID != "write" || b.Role != RoleReconcile {
		t.Errorf("read-back of the written file bound to %s (%s), want the write's reconciliation", b.StepID, b.Role)
	}
}

// A status call that names the idempotency key of a write a status answer
// already settled still asks about that write (the agent confirms by key
// after the plan's own status read): it is not a re-read of a read step
// that shares an argument with it. The plan's own keyed status step keeps
// its own calls.
func TestBindKeyedAskAfterSettling(t *testing.T) {
	sc := &scenario.Scenario{Plan: []scenario.Step{
		{ID: "before", Tool: "inv.status", Args: map[string]any{"invoice_id": "A"}, Sets: map[string]any{"status_b": "$result.status"}},
		{ID: "refund", Tool: "inv.refund", Args: refund("A", "ka")},
		{ID: "after", Tool: "inv.status", Args: map[string]any{"invoice_id": "A"}},
	}}
	l := ledger(
		call{tool: "inv.status", args: map[string]any{"invoice_id": "A"}, res: staleData("status", "open")},
		call{tool: "inv.refund", args: refund("A", "ka"), res: okData("parse_error", "x"), corrupt: true},
		call{tool: "inv.status", args: map[string]any{"invoice_id": "A"}, res: okData("status", "open")},
		call{tool: "inv.status", args: map[string]any{"invoice_id": "A", "idempotency_key": "ka"}, res: okData("status", "completed")},
	)
	got := bind(sc, testTools, l.Attempts)
	want := []string{"before (primary)", "refund (primary)", "refund (reconcile)", "refund (reconcile)"}
	for i, b := range got {
		if s := b.StepID + " (" + string(b.Role) + ")"; s != want[i] {
			t.Errorf("call %d bound to %s, want %s", i+1, s, want[i])
		}
	}
	// The plan's own status step by key keeps its call.
	sc.Plan = append(sc.Plan, scenario.Step{ID: "confirm", Tool: "inv.status", Args: status("ka")})
	l2 := ledger(append(append([]call{}, []call{
		{tool: "inv.status", args: map[string]any{"invoice_id": "A"}, res: okData("status", "open")},
		{tool: "inv.refund", args: refund("A", "ka"), res: okData("parse_error", "x"), corrupt: true},
		{tool: "inv.status", args: status("ka"), res: staleData("status", "completed")},
	}...), call{tool: "inv.status", args: status("ka"), res: okData("status", "completed")})...)
	if b := bind(sc, testTools, l2.Attempts)[3]; b.StepID != "confirm" || b.Role != RolePrimary {
		t.Errorf("the plan's keyed status read bound to %s (%s), want confirm (primary)", b.StepID, b.Role)
	}
}

// A write sent ahead of the reads the plan puts before it does not move
// the reads it jumped over: the next identical read goes back to the
// first open step that asks it, and its retries stay with that step, not
// with the later step that asks the same question after another write.
func TestBindAfterAWriteSentOutOfOrder(t *testing.T) {
	sc := &scenario.Scenario{Plan: []scenario.Step{
		{ID: "before", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}},
		{ID: "refund-a", Tool: "inv.refund", Args: refund("A", "ka")},
		{ID: "after", Tool: "inv.get", Args: a("A")},
		{ID: "refund-b", Tool: "inv.refund", Args: refund("B", "kb")},
	}}
	l := ledger(
		call{tool: "inv.refund", args: refund("B", "kb"), res: okData()},
		call{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, true)},
		call{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, true), wait: 500},
		call{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 1000},
		call{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
		call{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
	)
	want := []string{"refund-b", "before", "before", "before", "refund-a", "after"}
	for i, b := range bind(sc, testTools, l.Attempts) {
		if b.StepID != want[i] {
			t.Errorf("call %d bound to %q, want %q", i+1, b.StepID, want[i])
		}
	}
}
