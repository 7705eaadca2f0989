package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"rebound/core/bounds"
)

// big is a world whose one read returns as many bytes as asked for.
type big struct{ invoked int }

func (b *big) Tools() []Tool {
	return []Tool{{Name: "b.read", Effect: EffectRead, LatencyMs: 10, DeadlineMs: 100, CostUSD: 0.01}}
}

func (b *big) Invoke(_ string, args map[string]any, _ Effects) (map[string]any, *ToolError) {
	b.invoked++
	n, _ := args["n"].(float64)
	return map[string]any{"blob": strings.Repeat("x", int(n)), "small": "kept"}, nil
}

func (b *big) State() map[string]any { return map[string]any{"invoked": b.invoked} }

func newBigDispatcher(t *testing.T, faults []Fault, budget Budget) (*Dispatcher, *big) {
	t.Helper()
	w := &big{}
	s, err := NewSchedule(faults, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatcher(Config{World: w, Schedule: s, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return d, w
}

// A call over a size cap is answered INVALID_INPUT by the harness, with
// the size and the cap; it never reaches the world, consumes no scheduled
// fault and is recorded with a marker instead of its value.
func TestOversizedCallIsRefusedAndMarked(t *testing.T) {
	huge := strings.Repeat("\x00", bounds.CallArgs) // six bytes each as JSON
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"arguments", "b.read", map[string]any{"q": huge}, "the arguments of this call are"},
		{"arguments of invalid UTF-8", "b.read", map[string]any{"q": strings.Repeat("\xff", bounds.CallArgs/4)}, "the arguments of this call are"},
		{"tool name", strings.Repeat("b", bounds.ToolName+1), map[string]any{}, "the tool name of this call is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A fault on attempt 1 of b.read: the oversized call must not
			// consume it.
			d, w := newBigDispatcher(t, []Fault{{Class: Transient, Tool: "b.read", Attempts: []int{1}}}, Budget{})
			r := d.Call(tc.tool, tc.args)
			if r.OK || r.Code != CodeInvalidInput || r.Retryable || !strings.Contains(r.Message, tc.want) || !strings.Contains(r.Message, "nothing was sent") {
				t.Fatalf("result %+v", r)
			}
			if !strings.Contains(r.Message, "cap of") {
				t.Fatalf("message does not name the cap: %s", r.Message)
			}
			a := d.Ledger().Attempts[0]
			if w.invoked != 0 || a.Reached || a.Fault != nil || a.Refused || d.Cost() != 0 {
				t.Fatalf("the call went somewhere: invoked %d, attempt %+v", w.invoked, a)
			}
			if b, _ := json.Marshal(a); len(b) > 4*bounds.KiB {
				t.Fatalf("ledger entry is %d bytes", len(b))
			}
			if tc.tool == "b.read" && (!bounds.IsMarker(a.Args) || a.Args["sha256"] == "") {
				t.Fatalf("args %v, want a marker", a.Args)
			}
			if d.Ledger().Sent() != 1 {
				t.Fatalf("sent %d: an oversized call counts toward the budget", d.Ledger().Sent())
			}
			// The next (small) call is the tool's first attempt: the fault fires.
			if r := d.Call("b.read", map[string]any{"n": 1.0}); r.Code != CodeUnavailable {
				t.Fatalf("next call %+v: the scheduled fault was consumed by the refused call", r)
			}
		})
	}
}

// Calls refused by the budget keep no oversized value either: 6 sent and
// 100 refused ~1 MiB calls leave a ledger of a few KiB per call.
func TestRefusedOversizedCallsAreMarked(t *testing.T) {
	d, _ := newBigDispatcher(t, nil, Budget{ToolCalls: 6})
	args := map[string]any{"q": strings.Repeat("\x00", bounds.CallArgs)}
	for range 6 + MaxRefusedCalls + 5 {
		d.Call("b.read", args)
	}
	l := d.Ledger()
	if len(l.Attempts) != 6+MaxRefusedCalls || !d.IsHalted() {
		t.Fatalf("%d attempts, halted %v", len(l.Attempts), d.IsHalted())
	}
	b, _ := json.Marshal(l)
	if len(b) > 64*bounds.KiB {
		t.Fatalf("ledger is %d bytes", len(b))
	}
	for _, a := range l.Attempts {
		if !bounds.IsMarker(a.Args) {
			t.Fatalf("attempt %d keeps its arguments", a.Index)
		}
	}
	if l.Attempts[0].ArgsKey != l.Attempts[5].ArgsKey {
		t.Fatal("identical oversized calls must compare equal")
	}
}

// A result over the cap reaches the agent (and the ledger) with its status
// and a marker instead of its data.
func TestOversizedResultIsMarked(t *testing.T) {
	d, _ := newBigDispatcher(t, nil, Budget{})
	r := d.Call("b.read", map[string]any{"n": float64(bounds.ToolResult)})
	if !r.OK || !bounds.IsMarker(r.Data) || !strings.Contains(r.Message, "over the harness's cap") {
		t.Fatalf("result %+v", r)
	}
	if n := len(r.JSON()); n > 4*bounds.KiB {
		t.Fatalf("result is %d bytes", n)
	}
	if a := d.Ledger().Attempts[0]; !a.Reached || !bounds.IsMarker(a.Result.Data) {
		t.Fatalf("attempt %+v", a)
	}
	if r := d.Call("b.read", map[string]any{"n": 10.0}); !r.OK || r.Data["blob"] != "xxxxxxxxxx" || r.Message != "" {
		t.Fatalf("small result changed: %+v", r)
	}
}

// A plan update over the cap is refused with INVALID_INPUT; the ledger
// keeps a head and a marker, and a repeat of it is still a repeat.
func TestOversizedPlanUpdateIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		summary string
		refused bool
	}{
		{"under the cap", strings.Repeat("p", bounds.PlanSummary-2), false},
		{"over the cap", strings.Repeat("p", bounds.PlanSummary), true},
		{"invalid UTF-8 over the cap as JSON", strings.Repeat("\xff", bounds.PlanSummary/4), true},
		{"NUL bytes over the cap as JSON", strings.Repeat("\x00", bounds.PlanSummary/4), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newBigDispatcher(t, nil, Budget{})
			r := d.UpdatePlan(tc.summary)
			if tc.refused != !r.OK {
				t.Fatalf("result %+v", r)
			}
			d.Replan(tc.summary)
			rp := d.Ledger().Replans
			if len(rp) != 2 || rp[0].Refused != tc.refused || !rp[1].Repeat {
				t.Fatalf("replans %+v", rp)
			}
			if !tc.refused {
				if rp[0].Summary != tc.summary {
					t.Fatal("an update under the cap was changed")
				}
				return
			}
			if r.Code != CodeInvalidInput || !strings.Contains(r.Message, "cap of 65536 bytes") || !strings.Contains(r.Message, "nothing was sent") {
				t.Fatalf("result %+v", r)
			}
			if len(rp[0].Summary) > 512 || !strings.Contains(rp[0].Summary, "…[truncated: ") {
				t.Fatalf("summary kept %d bytes: %q", len(rp[0].Summary), rp[0].Summary)
			}
		})
	}
}

// Past bounds.Ledger of recorded values, the ledger keeps large arguments,
// results and plans by size and hash, whatever the call budget allows; the
// world and the agent still see them whole.
func TestLedgerBudget(t *testing.T) {
	d, _ := newBigDispatcher(t, nil, Budget{ToolCalls: 60})
	n := float64(900 * bounds.KiB)
	pad := strings.Repeat("p", 900*bounds.KiB)
	for i := range 40 {
		r := d.Call("b.read", map[string]any{"n": n, "pad": pad})
		if blob, _ := r.Data["blob"].(string); !r.OK || len(blob) != int(n) {
			t.Fatalf("call %d: the agent did not get the whole result", i+1)
		}
	}
	for range 40 {
		d.Replan(strings.Repeat("s", 60*bounds.KiB))
	}
	b, _ := json.Marshal(d.Ledger())
	if len(b) > bounds.Ledger+200*bounds.KiB {
		t.Fatalf("ledger is %d bytes", len(b))
	}
	l := d.Ledger()
	first, last := l.Attempts[0], l.Attempts[39]
	if bounds.IsMarker(first.Args) || bounds.IsMarker(first.Result.Data) {
		t.Fatal("the first calls must be kept whole")
	}
	if !bounds.IsMarker(last.Args) || !bounds.IsMarker(last.Result.Data) || last.ArgsKey != first.ArgsKey {
		t.Fatalf("the last call is kept whole (args marker %v, data marker %v) or its key changed", bounds.IsMarker(last.Args), bounds.IsMarker(last.Result.Data))
	}
	if rp := l.Replans[39]; rp.Refused || !strings.Contains(rp.Summary, "…[truncated: ") || !rp.Repeat {
		t.Fatalf("last replan %+v", rp)
	}
}
