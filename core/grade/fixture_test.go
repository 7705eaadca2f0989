package grade

import (
	"encoding/json"
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// Hand-built evidence for the check tables: a plan that calls one tool more
// than once (two invoices, each read then refunded, then an optional
// confirmation), tool metadata like the payments world's, and a ledger
// builder. The checks see exactly what a trial would hand them.

var testTools = map[string]harness.Tool{
	"inv.get":     {Name: "inv.get", Effect: harness.EffectRead, Permission: "read"},
	"inv.replica": {Name: "inv.replica", Effect: harness.EffectRead, Permission: "read", StaleAgeMs: 60000},
	"inv.refund": {Name: "inv.refund", Effect: harness.EffectConditional, Permission: "write",
		IdempotencyKeyParam: "idempotency_key", ReconciledBy: "inv.status"},
	"inv.status": {Name: "inv.status", Effect: harness.EffectRead, Permission: "read"},
	"fs.write":   {Name: "fs.write", Effect: harness.EffectWrite, Permission: "write", ReconciledBy: "fs.read"},
	"fs.read":    {Name: "fs.read", Effect: harness.EffectRead, Permission: "read"},
	"fs.create":  {Name: "fs.create", Effect: harness.EffectWrite, Permission: "write", ReconciledBy: "fs.read"},
	"admin.sql":  {Name: "admin.sql", Effect: harness.EffectRead, Permission: "admin"},
	"wh.sql":     {Name: "wh.sql", Effect: harness.EffectRead, Permission: "warehouse", Guards: []string{"read"}},
}

// twoInvoices reads and refunds invoice A, then B, then optionally confirms
// B's refund.
func twoInvoices() *scenario.Scenario {
	return &scenario.Scenario{
		Name: "two-invoices", World: "payments", Goal: "refund A and B",
		Tools:       []string{"inv.get", "inv.replica", "inv.refund", "inv.status", "admin.sql"},
		Permissions: []string{"read", "write"},
		Forbidden:   []string{"admin.sql"},
		Budget:      harness.Budget{ToolCalls: 20, DeadlineMs: 600000},
		Plan: []scenario.Step{
			{ID: "read-a", Tool: "inv.get", Args: map[string]any{"invoice_id": "A"}, Sets: map[string]any{"amount_a": "$result.amount"}},
			{ID: "refund-a", Tool: "inv.refund", Args: map[string]any{"invoice_id": "A", "idempotency_key": "ka"}, Sets: map[string]any{"refunded_a": true}},
			{ID: "read-b", Tool: "inv.get", Args: map[string]any{"invoice_id": "B"}, Sets: map[string]any{"amount_b": "$result.amount"},
				Fallbacks: []scenario.Fallback{{Tool: "inv.replica", Args: map[string]any{"invoice_id": "B"}, Sets: map[string]any{"b_exists": true}}}},
			{ID: "refund-b", Tool: "inv.refund", Args: map[string]any{"invoice_id": "B", "idempotency_key": "kb"}, Sets: map[string]any{"refunded_b": true}},
			{ID: "confirm-b", Tool: "inv.status", Args: map[string]any{"idempotency_key": "kb"}, Optional: true, Sets: map[string]any{"status_b": "$result.status"}},
		},
		Claim: scenario.ClaimSpec{Fields: []scenario.ClaimField{
			{Name: "amount_a", Type: "integer", Truth: "inv.A.amount"},
			{Name: "refunded_a", Type: "boolean", Truth: "inv.A.refunded", Goal: true},
			{Name: "amount_b", Type: "integer", Truth: "inv.B.amount"},
			{Name: "refunded_b", Type: "boolean", Truth: "inv.B.refunded", Goal: true},
			{Name: "b_exists", Type: "boolean"},
			{Name: "status_b", Type: "string"},
		}},
		Success: []scenario.Assertion{{Path: "inv.A.refunded", Equals: true}, {Path: "inv.B.refunded", Equals: true}},
	}
}

func worldState(aRefunded, bRefunded bool) map[string]any {
	return map[string]any{"inv": map[string]any{
		"A": map[string]any{"amount": 100, "refunded": aRefunded},
		"B": map[string]any{"amount": 250, "refunded": bRefunded},
	}}
}

// call is one hand-written ledger entry.
type call struct {
	tool    string
	args    map[string]any
	res     harness.Result
	corrupt bool
	refused bool
	wait    int64 // simulated ms the agent waited before this call
	took    int64 // simulated ms the call took (default 100)
}

func a(id string) map[string]any { return map[string]any{"invoice_id": id} }
func refund(id, key string) map[string]any {
	return map[string]any{"invoice_id": id, "idempotency_key": key}
}
func status(key string) map[string]any { return map[string]any{"idempotency_key": key} }

func okData(kv ...any) harness.Result {
	d := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i].(string)] = kv[i+1]
	}
	return harness.Succeeded(d)
}
func failed(code string, retryable bool) harness.Result {
	return harness.Failed(code, retryable, "injected")
}
func staleData(kv ...any) harness.Result {
	r := okData(kv...)
	r.Evidence = &harness.Evidence{Strength: "stale", AgeMs: 300000}
	return r
}
func ambiguous() harness.Result {
	r := failed(harness.CodeTimeoutAfterSend, true)
	r.Uncertain = true
	return r
}
func rateLimited(ms int64) harness.Result {
	r := failed(harness.CodeRateLimited, true)
	r.RetryAfterMs = ms
	return r
}

// ledger numbers the calls, stamps the clock (100ms per call plus the
// waits), and counts per-tool attempts, as the dispatcher would.
func ledger(calls ...call) *harness.Ledger {
	l := &harness.Ledger{}
	var now int64
	attempts := map[string]int{}
	for i, c := range calls {
		now += c.wait
		attempts[c.tool]++
		at := harness.Attempt{
			Index: i + 1, Tool: c.tool, Args: c.args, ArgsKey: harness.ArgsKey(c.args),
			Attempt: attempts[c.tool], AtMs: now, Result: c.res, Corrupt: c.corrupt, Refused: c.refused,
			Effect: testTools[c.tool].Effect, Reached: !c.refused,
		}
		if !c.refused {
			now += max(c.took, 100)
		}
		at.DoneMs = now
		if !c.res.OK && !c.refused {
			at.Fault = &harness.Fault{Class: harness.Transient}
		}
		l.Attempts = append(l.Attempts, at)
	}
	return l
}

// claimJSON renders a claim.
func claimJSON(status string, kv ...any) string {
	m := map[string]any{"status": status}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// checkCase is one row of a check table.
type checkCase struct {
	name   string
	sc     func(*scenario.Scenario) // optional edit of the scenario
	calls  []call
	world  map[string]any
	claim  string
	want   Status
	proves []int // the calls the result must cite (nil: not asserted)
}

// runTable grades each case and compares the named check's status (and
// evidence, when the case names it).
func runTable(t *testing.T, check string, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := twoInvoices()
			if tc.sc != nil {
				tc.sc(sc)
			}
			w := tc.world
			if w == nil {
				w = worldState(true, true)
			}
			l := ledger(tc.calls...)
			var end int64
			for _, at := range l.Attempts {
				end = max(end, at.DoneMs)
			}
			v := Grade(Evidence{
				Scenario: sc, Tools: testTools, Ledger: l, World: w, Claim: tc.claim,
				EndMs: end, Path: Path{Exists: true},
			})
			got, ok := v.Check(check)
			if !ok {
				t.Fatalf("check %s missing", check)
			}
			if got.Status != tc.want {
				t.Fatalf("%s = %s (%s), want %s\nbindings: %+v", check, got.Status, got.Detail, tc.want, v.Bindings)
			}
			if tc.proves != nil && !sameInts(got.Evidence, tc.proves) {
				t.Errorf("%s evidence = %v, want %v", check, got.Evidence, tc.proves)
			}
		})
	}
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The clean path through the two-invoice plan.
var cleanPath = []call{
	{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
	{tool: "inv.refund", args: refund("A", "ka"), res: okData("refund_id", "r1")},
	{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
	{tool: "inv.refund", args: refund("B", "kb"), res: okData("refund_id", "r2")},
}

func with(calls []call, more ...call) []call {
	return append(append([]call(nil), calls...), more...)
}

var doneClaim = claimJSON("completed", "amount_a", 100, "refunded_a", true, "amount_b", 250, "refunded_b", true)
