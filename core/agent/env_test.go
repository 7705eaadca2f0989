package agent

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// fakeEnv is a scripted Env for the reference agents' tests: each tool
// answers from its queue of results (then OK with its default data), every
// call takes the tool's latency on a simulated clock, and what the agent
// did is recorded.
type fakeEnv struct {
	tools    []harness.Tool
	answers  map[string][]harness.Result
	defaults map[string]map[string]any // a tool's data once its queue is empty
	limit    int                       // calls the harness lets through (0: no limit)
	// took queues, per tool, how long its next calls take instead of its
	// latency (a timeout the agent watches).
	took map[string][]int64

	now     int64
	calls   []sentCall
	slept   []int64
	replans []string
}

type sentCall struct {
	tool string
	args map[string]any
	at   int64
}

func (e *fakeEnv) Tools() []harness.Tool { return e.tools }

func (e *fakeEnv) Call(_ context.Context, tool string, args map[string]any) harness.Result {
	if e.limit > 0 && len(e.calls) >= e.limit {
		return harness.Failed(harness.CodeBudgetExhausted, false, "budget spent")
	}
	e.calls = append(e.calls, sentCall{tool, maps.Clone(args), e.now})
	if q := e.took[tool]; len(q) > 0 {
		e.took[tool] = q[1:]
		e.now += q[0]
	} else {
		for _, t := range e.tools {
			if t.Name == tool {
				e.now += t.Latency()
			}
		}
	}
	if q := e.answers[tool]; len(q) > 0 {
		e.answers[tool] = q[1:]
		return q[0]
	}
	return harness.Result{OK: true, Data: maps.Clone(e.defaults[tool])}
}

func (e *fakeEnv) Sleep(ms int64) {
	e.slept = append(e.slept, ms)
	e.now += ms
}

func (e *fakeEnv) Now() int64 { return e.now }

func (e *fakeEnv) Replan(summary string) { e.replans = append(e.replans, summary) }

// tools sent, in order.
func (e *fakeEnv) sent() []string {
	var out []string
	for _, c := range e.calls {
		out = append(out, c.tool)
	}
	return out
}

// ok is a clean answer carrying data.
func ok(data map[string]any) harness.Result { return harness.Result{OK: true, Data: data} }

// run runs ag on plan against env and decodes its claim (nil without one).
func run(t *testing.T, ag Agent, env *fakeEnv, task Task) (Outcome, map[string]any) {
	t.Helper()
	out, err := ag.Run(context.Background(), env, task)
	if err != nil {
		t.Fatalf("%s: %v", ag.Name(), err)
	}
	if out.Claim == "" {
		return out, nil
	}
	var claim map[string]any
	if err := json.Unmarshal([]byte(out.Claim), &claim); err != nil {
		t.Fatalf("%s: claim %q: %v", ag.Name(), out.Claim, err)
	}
	return out, claim
}

// The fixtures: an invoice read and a charge with an idempotency key and a
// status tool, as the payments world has them.
var (
	readTool   = harness.Tool{Name: "invoice.read", Effect: harness.EffectRead, LatencyMs: 100}
	chargeTool = harness.Tool{Name: "payment.charge", Effect: harness.EffectWrite, LatencyMs: 200,
		IdempotencyKeyParam: "idempotency_key", ReconciledBy: "payment.status"}
	statusTool = harness.Tool{Name: "payment.status", Effect: harness.EffectRead, LatencyMs: 50,
		Params: []harness.Param{{Name: "idempotency_key", Type: "string"}}}

	readStep = scenario.Step{ID: "read", Tool: "invoice.read", Args: map[string]any{"invoice": "inv_1"},
		Sets: map[string]any{"amount": "$result.amount"}}
	chargeStep = scenario.Step{ID: "charge", Tool: "payment.charge",
		Args: map[string]any{"invoice": "inv_1", "idempotency_key": "k1"}, Sets: map[string]any{"charged": true}}

	claimFields = []scenario.ClaimField{
		{Name: "amount", Type: "integer", Goal: true},
		{Name: "charged", Type: "boolean", Goal: true},
	}
)

func task(plan ...scenario.Step) Task {
	return Task{Goal: "charge the invoice", Claim: claimFields, ReferencePlan: plan}
}

func wantClaim(t *testing.T, got map[string]any, want map[string]any) {
	t.Helper()
	if g, w := mustJSON(got), mustJSON(want); g != w {
		t.Errorf("claim = %s, want %s", g, w)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func wantSent(t *testing.T, env *fakeEnv, want ...string) {
	t.Helper()
	if g, w := mustJSON(env.sent()), mustJSON(want); g != w {
		t.Errorf("calls = %s, want %s", g, w)
	}
}

func done(fields map[string]any) map[string]any {
	out := map[string]any{}
	maps.Copy(out, fields)
	out[scenario.ClaimStatus] = scenario.StatusDone
	return out
}

func blockedOn(tool string, fields map[string]any) map[string]any {
	out := map[string]any{}
	maps.Copy(out, fields)
	out[scenario.ClaimStatus] = scenario.StatusBlocked
	out[scenario.ClaimBlockedOn] = tool
	return out
}
