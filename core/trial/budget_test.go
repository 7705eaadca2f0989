package trial

import (
	"context"
	"testing"
	"time"

	"rebound/core/agent"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world"
)

// A scenario with no budget and a fault that never clears used to let the
// naive retrier loop until the worker ran out of memory (issue 10). It now
// gets the default budget at load, and the trial ends within it.
const unbudgeted = `name: no-budget
world: payments
goal: Charge order A-1 for $1.00.
tools: [payments.charge]
permissions: [payments.write]
initial:
  orders:
    A-1: {amount_cents: 100}
plan:
  - {id: charge, tool: payments.charge, args: {order_id: A-1, amount_cents: 100, idempotency_key: k-1}}
claim: {fields: []}
variants:
  - name: never-clears
    recoverable: false
    faults:
      - {tool: payments.charge, class: transient, code: SERVICE_UNAVAILABLE, always: true}
`

func loadUnbudgeted(t *testing.T) *scenario.Scenario {
	t.Helper()
	var notes []scenario.FieldError
	sc, err := scenario.ParseScenarioWith("no-budget.yaml", []byte(unbudgeted), scenario.LoadOptions{Catalog: world.Catalog, Note: func(e scenario.FieldError) { notes = append(notes, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Budget.ToolCalls != harness.DefaultToolCalls || len(notes) != 1 || notes[0].Field != "budget.tool_calls" {
		t.Fatalf("budget %+v, notes %v: want the default budget and one note saying so", sc.Budget, notes)
	}
	return sc
}

func TestNaiveRetrierWithoutBudgetTerminates(t *testing.T) {
	sc := loadUnbudgeted(t)
	ag, err := agent.NewScripted("naive_retrier")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Run(ctx, Spec{SweepID: "t", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "n", Agent: "naive_retrier"}, Seed: 1}, ag)
	if err != nil {
		t.Fatal(err)
	}
	if sent := r.Ledger.Sent(); sent != harness.DefaultToolCalls {
		t.Fatalf("sent %d calls, want the default budget of %d", sent, harness.DefaultToolCalls)
	}
	if len(r.Ledger.Attempts) > harness.DefaultToolCalls+harness.MaxRefusedCalls {
		t.Fatalf("ledger holds %d attempts", len(r.Ledger.Attempts))
	}
}

// berserk ignores refusals and its context: it calls forever.
type berserk struct{ calls int }

func (*berserk) Name() string { return "berserk" }
func (b *berserk) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	for {
		b.calls++
		env.Call(ctx, "payments.charge", map[string]any{"order_id": "A-1", "amount_cents": 100, "idempotency_key": "k-1"})
	}
}

// planner publishes plans forever and never calls a tool.
type planner struct{}

func (planner) Name() string { return "planner" }
func (planner) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	for {
		env.Replan("again")
	}
}

// patient stops only when its context says so.
type patient struct{}

func (patient) Name() string { return "patient" }
func (patient) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	for ctx.Err() == nil {
		env.Call(ctx, "payments.charge", map[string]any{"order_id": "A-1"})
	}
	return agent.Outcome{}, context.Cause(ctx)
}

// The hard cap holds whatever the agent does: an agent that ignores both
// the refusals and its context is stopped, with a bounded ledger, and the
// trial is graded like any other.
func TestHardCapStopsAnyAgent(t *testing.T) {
	sc := loadUnbudgeted(t)
	sc.Budget.ToolCalls = 1 << 30 // beyond the cap: the harness clamps it
	for _, tc := range []struct {
		ag   agent.Agent
		sent int
		want string // the outcome's answer
	}{
		{&berserk{}, harness.MaxToolCalls, "harness: trial halted: 101 calls or plan updates after the harness stopped the trial"},
		{patient{}, harness.MaxToolCalls, harness.ErrHalted.Error()},
		{planner{}, 0, "harness: trial halted: 101 calls or plan updates after the harness stopped the trial"},
	} {
		ag := tc.ag
		r, err := Run(context.Background(), Spec{SweepID: "t", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "x", Agent: ag.Name()}, Seed: 1}, ag)
		if err != nil {
			t.Fatalf("%s: %v", ag.Name(), err)
		}
		if sent := r.Ledger.Sent(); sent != tc.sent {
			t.Errorf("%s: sent %d calls, want %d", ag.Name(), sent, tc.sent)
		}
		if n := len(r.Ledger.Attempts); n > harness.MaxToolCalls+harness.MaxRefusedCalls {
			t.Errorf("%s: ledger holds %d attempts", ag.Name(), n)
		}
		if n := len(r.Ledger.Replans); n > harness.MaxReplans {
			t.Errorf("%s: ledger holds %d replans", ag.Name(), n)
		}
		if r.Outcome.Answer != tc.want {
			t.Errorf("%s: answer %q, want %q", ag.Name(), r.Outcome.Answer, tc.want)
		}
		if r.Outcome.Claim != "" || r.Verdict.Counts.ToolCalls != r.Ledger.Sent() {
			t.Errorf("%s: outcome %+v, counts %+v", ag.Name(), r.Outcome, r.Verdict.Counts)
		}
	}
}
