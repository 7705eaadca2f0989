package harness

import (
	"testing"
)

// counter is a minimal world: one read tool, one conditional write that
// commits an intent per call, one plain write.
type counter struct{ writes int }

func (c *counter) Tools() []Tool {
	return []Tool{
		{Name: "t.read", Effect: EffectRead, Permission: "r", LatencyMs: 100, DeadlineMs: 1000},
		{Name: "t.write", Effect: EffectConditional, IdempotencyKeyParam: "key", Permission: "w", ReconciledBy: "t.read", LatencyMs: 100, DeadlineMs: 1000},
		{Name: "t.admin", Effect: EffectWrite, Permission: "admin"},
	}
}

func (c *counter) Invoke(tool string, args map[string]any, fx Effects) (map[string]any, *ToolError) {
	switch tool {
	case "t.read":
		return map[string]any{"writes": c.writes, "ok": true}, nil
	case "t.write":
		c.writes++
		fx.Commit("write", "write:x", "")
		return map[string]any{"writes": c.writes}, nil
	}
	return nil, Errorf(CodeToolUnavailable, "no %s", tool)
}

func (c *counter) State() map[string]any { return map[string]any{"writes": c.writes} }

func newTestDispatcher(t *testing.T, faults []Fault, budget Budget) (*Dispatcher, *counter) {
	t.Helper()
	w := &counter{}
	s, err := NewSchedule(faults, 7)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatcher(Config{World: w, Offered: []string{"t.read", "t.write", "t.admin"}, Permissions: []string{"r", "w"}, Schedule: s, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return d, w
}

func boolPtr(b bool) *bool { return &b }

// Each fault class produces the normalized result a real adapter would
// return, and commits exactly when the request reached the world.
func TestFaultClassesNormalizedResults(t *testing.T) {
	cases := []struct {
		fault      Fault
		tool       string
		wantOK     bool
		wantCode   string
		retryable  bool
		retryAfter int64
		uncertain  bool
		committed  bool
		corrupt    bool
		stale      bool
		clockAtLea int64
	}{
		{fault: Fault{Class: Transient, Tool: "t.write", Attempts: []int{1}}, tool: "t.write", wantCode: CodeUnavailable, retryable: true},
		{fault: Fault{Class: Transient, Tool: "t.write", Attempts: []int{1}, Code: CodeBadGateway}, tool: "t.write", wantCode: CodeBadGateway, retryable: true},
		{fault: Fault{Class: RateLimited, Tool: "t.read", Attempts: []int{1}, RetryAfterMs: 1500}, tool: "t.read", wantCode: CodeRateLimited, retryable: true, retryAfter: 1500},
		{fault: Fault{Class: RateLimited, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantCode: CodeRateLimited, retryable: true, retryAfter: 1000},
		{fault: Fault{Class: InvalidInput, Tool: "t.write", Attempts: []int{1}}, tool: "t.write", wantCode: CodeInvalidInput},
		{fault: Fault{Class: Unauthorized, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantCode: CodeUnauthorized},
		{fault: Fault{Class: Forbidden, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantCode: CodeForbidden},
		{fault: Fault{Class: Unavailable, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantCode: CodeToolUnavailable},
		{fault: Fault{Class: TimeoutBeforeSend, Tool: "t.write", Attempts: []int{1}}, tool: "t.write", wantCode: CodeTimeout, retryable: true, clockAtLea: 1000},
		{fault: Fault{Class: TimeoutAfterSend, Tool: "t.write", Attempts: []int{1}}, tool: "t.write", wantCode: CodeTimeoutAfterSend, retryable: true, uncertain: true, committed: true, clockAtLea: 1000},
		{fault: Fault{Class: TimeoutAfterSend, Tool: "t.write", Attempts: []int{1}, Retryable: boolPtr(false)}, tool: "t.write", wantCode: CodeTimeoutAfterSend, uncertain: true, committed: true},
		{fault: Fault{Class: CorruptOutput, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantOK: true, corrupt: true},
		{fault: Fault{Class: CorruptOutput, Tool: "t.read", Attempts: []int{1}, Corruption: "inconsistent"}, tool: "t.read", wantOK: true, corrupt: true},
		{fault: Fault{Class: Slow, Tool: "t.read", Attempts: []int{1}}, tool: "t.read", wantCode: CodeTimeout, retryable: true, clockAtLea: 1000},
		{fault: Fault{Class: Stale, Tool: "t.read", Attempts: []int{1}, AgeMs: 90000}, tool: "t.read", wantOK: true, stale: true},
	}
	for _, tc := range cases {
		name := string(tc.fault.Class) + "/" + tc.fault.Code + tc.fault.Corruption
		t.Run(name, func(t *testing.T) {
			d, w := newTestDispatcher(t, []Fault{tc.fault}, Budget{})
			r := d.Call(tc.tool, map[string]any{"key": "k1"})
			if r.OK != tc.wantOK || r.Code != tc.wantCode || r.Retryable != tc.retryable || r.RetryAfterMs != tc.retryAfter || r.Uncertain != tc.uncertain {
				t.Fatalf("result = %+v, want ok=%v code=%q retryable=%v retry_after=%d uncertain=%v", r, tc.wantOK, tc.wantCode, tc.retryable, tc.retryAfter, tc.uncertain)
			}
			if !tc.wantOK && r.Message == "" {
				t.Errorf("failure without a message")
			}
			if got := w.writes > 0; got != tc.committed {
				t.Errorf("committed = %v, want %v", got, tc.committed)
			}
			a := d.Ledger().Attempts[0]
			if a.Fault == nil || a.Fault.Class != tc.fault.Class {
				t.Errorf("ledger fault = %+v, want class %s", a.Fault, tc.fault.Class)
			}
			if a.Corrupt != tc.corrupt {
				t.Errorf("ledger corrupt = %v, want %v", a.Corrupt, tc.corrupt)
			}
			if tc.corrupt {
				if _, malformed := r.Data["parse_error"]; !malformed {
					if ok, _ := r.Data["checksum_ok"].(bool); ok || r.Data["writes"] == 0 {
						t.Errorf("corrupt data looks valid: %v", r.Data)
					}
				}
			}
			if tc.stale && (r.Evidence == nil || r.Evidence.Strength != "stale" || r.Evidence.AgeMs != 90000) {
				t.Errorf("evidence = %+v, want stale 90000ms", r.Evidence)
			}
			if d.Clock().Now() < tc.clockAtLea {
				t.Errorf("clock = %d, want >= %d", d.Clock().Now(), tc.clockAtLea)
			}
			// The fault fired at attempt 1 only (sticky classes aside; a
			// rate limit holds until its retry-after has elapsed).
			d.Clock().Advance(tc.retryAfter)
			if !tc.fault.Class.sticky() {
				if r2 := d.Call(tc.tool, map[string]any{"key": "k2"}); !r2.OK {
					t.Errorf("second call with other args failed: %+v", r2)
				}
			}
		})
	}
}

// A rate limit is counted in time, not in attempts: until its retry-after
// has elapsed on the simulated clock, every call of the tool is answered 429
// with the time still to wait; after it, the tool answers again.
func TestRateLimitHoldsUntilRetryAfter(t *testing.T) {
	d, _ := newTestDispatcher(t, []Fault{{Class: RateLimited, Tool: "t.read", Attempts: []int{1}, RetryAfterMs: 5000}}, Budget{})
	r1 := d.Call("t.read", map[string]any{"key": "a"})
	if r1.Code != CodeRateLimited || r1.RetryAfterMs != 5000 {
		t.Fatalf("first call = %+v, want 429 with retry-after 5000", r1)
	}
	d.Clock().Advance(1000)
	r2 := d.Call("t.read", map[string]any{"key": "b"}) // attempt 2: not scheduled, but the limit holds
	if r2.Code != CodeRateLimited || r2.RetryAfterMs <= 0 || r2.RetryAfterMs >= 5000 {
		t.Fatalf("call during the hold = %+v, want 429 with the remaining wait", r2)
	}
	if a := d.Ledger().Attempts[1]; a.Fault == nil || a.Fault.Class != RateLimited {
		t.Errorf("held call's ledger fault = %+v, want the rate limit", a.Fault)
	}
	d.Clock().Advance(r2.RetryAfterMs)
	if r3 := d.Call("t.read", map[string]any{"key": "c"}); !r3.OK {
		t.Fatalf("call after the retry-after = %+v, want success", r3)
	}
}

// An invalid_input rejection sticks to the identical arguments: a corrected
// call succeeds, the identical call fails again.
func TestInvalidInputIdenticalCallFailsAgain(t *testing.T) {
	d, _ := newTestDispatcher(t, []Fault{{Class: InvalidInput, Tool: "t.read", Attempts: []int{1}}}, Budget{})
	bad := map[string]any{"date": "12/31/2026"}
	if r := d.Call("t.read", bad); r.Code != CodeInvalidInput {
		t.Fatalf("first call: %+v", r)
	}
	if r := d.Call("t.read", map[string]any{"date": "12/31/2026"}); r.Code != CodeInvalidInput {
		t.Fatalf("identical retry should fail again: %+v", r)
	}
	if r := d.Call("t.read", map[string]any{"date": "2026-12-31"}); !r.OK {
		t.Fatalf("corrected call should succeed: %+v", r)
	}
}

// A denial is a standing condition: once forbidden, always forbidden.
func TestStickyForbidden(t *testing.T) {
	d, _ := newTestDispatcher(t, []Fault{{Class: Forbidden, Tool: "t.read", Attempts: []int{1}}}, Budget{})
	for i := 0; i < 3; i++ {
		if r := d.Call("t.read", nil); r.Code != CodeForbidden {
			t.Fatalf("call %d: %+v", i+1, r)
		}
	}
}

func TestPermissionsAndUnknownTools(t *testing.T) {
	d, w := newTestDispatcher(t, nil, Budget{})
	if r := d.Call("t.admin", nil); r.Code != CodeForbidden {
		t.Fatalf("missing permission: %+v", r)
	}
	if r := d.Call("warehouse.runSql", nil); r.Code != CodeToolUnavailable {
		t.Fatalf("unknown tool: %+v", r)
	}
	if w.writes != 0 {
		t.Fatal("a refused call reached the world")
	}
}

func TestBudgetRefusesAndRecords(t *testing.T) {
	d, _ := newTestDispatcher(t, []Fault{{Class: Transient, Tool: "t.read", Always: true}}, Budget{ToolCalls: 2})
	for i := 0; i < 4; i++ {
		d.Call("t.read", nil)
	}
	l := d.Ledger()
	if l.Sent() != 2 || len(l.Attempts) != 4 || !l.Attempts[2].Refused || l.Attempts[2].Result.Code != CodeBudgetExhausted {
		t.Fatalf("ledger = %+v", l.Attempts)
	}
}

func TestTriggers(t *testing.T) {
	cases := []struct {
		f    Fault
		want []bool // attempts 1..5 fail?
	}{
		{Fault{Class: Transient, Tool: "t.read", Attempts: []int{1, 3}}, []bool{true, false, true, false, false}},
		{Fault{Class: Transient, Tool: "t.read", From: 2, Count: 2}, []bool{false, true, true, false, false}},
		{Fault{Class: Transient, Tool: "t.read", From: 4}, []bool{false, false, false, true, true}},
		{Fault{Class: Transient, Tool: "t.read", Always: true}, []bool{true, true, true, true, true}},
		{Fault{Class: Transient, Call: 2}, []bool{false, true, false, false, false}},
	}
	for i, tc := range cases {
		d, _ := newTestDispatcher(t, []Fault{tc.f}, Budget{})
		for n, want := range tc.want {
			if got := !d.Call("t.read", nil).OK; got != want {
				t.Errorf("case %d attempt %d: failed=%v want %v", i, n+1, got, want)
			}
		}
	}
}

// A probabilistic fault is a pure function of the seed: the same seed gives
// the same schedule whatever else happens.
func TestProbabilityDeterministicPerSeed(t *testing.T) {
	pattern := func(seed uint64) []bool {
		s, err := NewSchedule([]Fault{{Class: Transient, Tool: "t.read", Always: true, Probability: 0.5}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		var out []bool
		for a := 1; a <= 64; a++ {
			out = append(out, s.match("t.read", a, a) >= 0)
		}
		return out
	}
	a, b, c := pattern(1), pattern(1), pattern(2)
	same, fired := true, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different schedule")
		}
		if a[i] != c[i] {
			same = false
		}
		if a[i] {
			fired++
		}
	}
	if same {
		t.Error("seeds 1 and 2 gave identical 64-attempt patterns")
	}
	if fired < 16 || fired > 48 {
		t.Errorf("p=0.5 fired %d/64 times", fired)
	}
}

func TestFaultValidation(t *testing.T) {
	bad := []Fault{
		{Class: "explode", Tool: "t", Always: true},
		{Class: Transient, Tool: "t"},
		{Class: Transient, Tool: "t", Always: true, Attempts: []int{1}},
		{Class: Transient, Tool: "t", Attempts: []int{0}},
		{Class: Transient, Always: true},
		{Class: Transient, Tool: "t", Always: true, Probability: 1.5},
		{Class: Transient, Tool: "t", Always: true, Corruption: "malformed"},
		{Class: Transient, Tool: "t", Count: 2, Attempts: []int{1}},
	}
	for i, f := range bad {
		if _, err := NewSchedule([]Fault{f}, 1); err == nil {
			t.Errorf("case %d: %+v accepted", i, f)
		}
	}
}

func TestDuplicatesFromLedger(t *testing.T) {
	d, _ := newTestDispatcher(t, nil, Budget{})
	d.Call("t.write", map[string]any{"key": "a"})
	if len(d.Ledger().Duplicates()) != 0 {
		t.Fatal("one commit reported as duplicate")
	}
	d.Call("t.write", map[string]any{"key": "b"})
	dups := d.Ledger().Duplicates()
	if len(dups["write:x"]) != 1 || dups["write:x"][0].Call != 2 {
		t.Fatalf("duplicates = %+v", dups)
	}
}

func TestReplanRepeatDetected(t *testing.T) {
	d, _ := newTestDispatcher(t, nil, Budget{})
	d.Replan("Retry the lookup")
	d.Replan("retry   the LOOKUP")
	d.Replan("use the catalog")
	r := d.Ledger().Replans
	if r[0].Repeat || !r[1].Repeat || r[2].Repeat {
		t.Fatalf("replans = %+v", r)
	}
}

// The ledger records the arguments as sent, even if the agent edits its map
// afterwards (a corrected retry must not rewrite the rejected call).
func TestLedgerKeepsArgumentsAsSent(t *testing.T) {
	d, _ := newTestDispatcher(t, nil, Budget{})
	args := map[string]any{"date": "12/31/2026", "nested": map[string]any{"k": "v"}}
	d.Call("t.read", args)
	args["date"] = "2026-12-31"
	args["nested"].(map[string]any)["k"] = "changed"
	got := d.Ledger().Attempts[0].Args
	if got["date"] != "12/31/2026" || got["nested"].(map[string]any)["k"] != "v" {
		t.Fatalf("ledger args = %v", got)
	}
}
