package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"rebound/core/agent"
	"rebound/core/bounds"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/redact"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// hostile is an agent that tries to make its trial unstorable: it keeps
// calling with a big argument well past its budget, then floods the plan.
type hostile struct {
	pad     string // added to every call's arguments
	calls   int
	plan    string
	updates int
	seen    []harness.Result // what the plan updates were answered
}

func (h *hostile) Name() string { return "hostile" }

func (h *hostile) Run(_ context.Context, env agent.Env, _ agent.Task) (agent.Outcome, error) {
	for range h.calls {
		env.Call(context.Background(), "inventory.lookup", map[string]any{"sku": "KB-104", "pad": h.pad})
	}
	for i := range h.updates {
		summary := fmt.Sprintf("%d %s", i, h.plan)
		if pu, ok := env.(harness.PlanUpdater); ok {
			h.seen = append(h.seen, pu.UpdatePlan(summary))
		} else {
			env.Replan(summary)
		}
	}
	return agent.Outcome{Claim: `{"status":"completed","blocked_on":null,"available":7}`, Answer: "7 \xff\xfe units"}, nil
}

// insertBytes is what a trial's rows weigh as the embedded transport sends
// them (JSONEachRow: every value JSON-encoded, NUL bytes as \u0000).
func insertBytes(t *testing.T, tr record.Trial, calls []record.ToolCall) int {
	t.Helper()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	for _, c := range calls {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		n += len(b)
	}
	return n
}

// allValid checks that no stored text column holds invalid UTF-8.
func allValid(t *testing.T, tr record.Trial, calls []record.ToolCall) {
	t.Helper()
	for name, s := range map[string]string{"error": tr.Error, "claim": tr.Claim, "answer": tr.Answer, "recording": tr.Recording,
		"process": tr.Process, "verdicts": tr.Verdicts, "fault_schedule": tr.FaultSchedule, "evidence": tr.Evidence} {
		if !utf8.ValidString(s) {
			t.Errorf("%s holds invalid UTF-8", name)
		}
	}
	for _, c := range calls {
		if !utf8.ValidString(c.Args) || !utf8.ValidString(c.Result) || !utf8.ValidString(c.Tool) {
			t.Errorf("call %d holds invalid UTF-8", c.CallIndex)
		}
	}
}

// A hostile agent's trial (6 sent calls and 100 refused ones with ~1 MiB
// arguments, 40 ~1 MiB plan updates of invalid UTF-8) is graded and stored
// in rows under bounds.Trial, all valid UTF-8, its evidence still
// regradable. Arguments just under the call cap reach the ledger whole (and
// are cut when the rows are fitted); just over it, the harness refuses them
// and keeps markers.
func TestHostileTrialRowsAreBounded(t *testing.T) {
	sc, err := scenario.LoadScenario("../examples/scenarios/inventory-timeout-once.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Budget.ToolCalls != 6 {
		t.Fatalf("the scenario's budget is %d calls, the test wants 6", sc.Budget.ToolCalls)
	}
	red, err := redact.New(nil, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		pad       string
		truncated bool
	}{
		{"arguments just under the cap", strings.Repeat("x", bounds.CallArgs-64), true},
		{"arguments of NUL bytes over the cap", strings.Repeat("\x00", bounds.CallArgs/4), false},
		{"arguments of invalid UTF-8 over the cap", strings.Repeat("\xff", bounds.CallArgs/2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hostile{pad: tc.pad, calls: 6 + harness.MaxRefusedCalls, plan: strings.Repeat("\xfe", bounds.MiB), updates: 40}
			spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "hostile"}, Seed: 1}
			r, err := trial.Run(context.Background(), spec, h)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Ledger.Attempts) != 6+harness.MaxRefusedCalls || r.Ledger.Sent() != 6 || len(r.Ledger.Replans) != 40 {
				t.Fatalf("ledger: %d attempts, %d sent, %d replans", len(r.Ledger.Attempts), r.Ledger.Sent(), len(r.Ledger.Replans))
			}
			for _, res := range h.seen {
				if res.Code != harness.CodeInvalidInput || !strings.Contains(res.Message, "cap of") {
					t.Fatalf("plan update answered %+v", res)
				}
			}
			verdict := red.JSON(r.Verdict)
			tr, calls := Rows(r, red)
			if n := insertBytes(t, tr, calls); n > bounds.Trial {
				t.Fatalf("rows are %d bytes, over %d", n, bounds.Trial)
			}
			allValid(t, tr, calls)
			if tr.Verdicts != verdict {
				t.Fatal("the stored verdicts differ from the graded ones")
			}
			if got := strings.Contains(tr.Error, `{"truncated":`); got != tc.truncated {
				t.Fatalf("truncation note %v, want %v: %.300s", got, tc.truncated, tr.Error)
			}
			if _, err := trial.Regrade(context.Background(), sc, spec.Variant, spec.Seed, tr.Evidence); err != nil {
				t.Fatalf("stored evidence does not regrade: %v", err)
			}
			var ev trial.Evidence
			if err := json.Unmarshal([]byte(tr.Evidence), &ev); err != nil || len(ev.Ledger.Attempts) != len(r.Ledger.Attempts) {
				t.Fatalf("evidence: %v, %d attempts", err, len(ev.Ledger.Attempts))
			}
		})
	}
}

// Rows fitted from a ledger nothing bounded (as if the harness's caps were
// missed): the largest columns are cut, JSON stays JSON of its shape, the
// verdict is the graded one, the trial says it was truncated.
func TestRowsFitAnUnboundedTrial(t *testing.T) {
	r, spec := refundTrial(t, "careful")
	// NUL bytes weigh seven bytes each once stored (\u0000 in JSON, its
	// backslash escaped again in the insert), an invalid byte three or more.
	big := strings.Repeat("\x00", 256*bounds.KiB)
	for i := range 10 {
		r.Ledger.Replans = append(r.Ledger.Replans, harness.Replan{AtCall: i, Summary: strings.Repeat("\xff", 256*bounds.KiB)})
	}
	for i := range 10 {
		r.Ledger.Attempts = append(r.Ledger.Attempts, harness.Attempt{Index: 100 + i, Tool: "billing.get_invoice",
			Args: map[string]any{"blob": big}, Result: harness.Succeeded(map[string]any{"blob": big})})
	}
	r.World = map[string]any{"dump": strings.Repeat("\x00", bounds.MiB)}
	r.Recording = `{"steps":[` + strings.Repeat(`"r\u0000",`, 256*bounds.KiB) + `"r"]}`
	r.Outcome.Claim = `{"status":"completed","note":"` + strings.Repeat("c", 100*bounds.KiB) + `"}`
	r.Outcome.Process = &agent.Process{Command: []string{"x"}, Stdout: strings.Repeat("o", 2*bounds.MiB)}
	red, _ := redact.New(nil, []byte("k"))
	verdict := red.JSON(r.Verdict)
	tr, calls := Rows(r, red)
	if n := insertBytes(t, tr, calls); n > bounds.Trial {
		t.Fatalf("rows are %d bytes", n)
	}
	allValid(t, tr, calls)
	if tr.Verdicts != verdict {
		t.Fatal("verdicts changed")
	}
	var note struct{ Truncated bounds.Truncation }
	if err := json.Unmarshal([]byte(tr.Error), &note); err != nil || note.Truncated.Bytes <= bounds.Trial || len(note.Truncated.Columns) == 0 {
		t.Fatalf("note %q: %v", tr.Error, err)
	}
	if note.Truncated.Columns[0] != "claim" || len(tr.Claim) > bounds.Claim {
		t.Fatalf("claim of %d bytes, columns %v", len(tr.Claim), note.Truncated.Columns)
	}
	for name, doc := range map[string]string{"evidence": tr.Evidence, "recording": tr.Recording, "process": tr.Process, "claim": tr.Claim} {
		if !json.Valid([]byte(doc)) {
			t.Errorf("%s is not valid JSON", name)
		}
	}
	for _, c := range calls {
		if !json.Valid([]byte(c.Args)) || !json.Valid([]byte(c.Result)) {
			t.Fatalf("call %d: not valid JSON", c.CallIndex)
		}
	}
	var p agent.Process
	if err := json.Unmarshal([]byte(tr.Process), &p); err != nil || len(p.Stdout) > bounds.Stdout {
		t.Fatalf("process: %v, stdout %d bytes", err, len(p.Stdout))
	}
	if _, err := trial.Regrade(context.Background(), spec.Scenario, spec.Variant, spec.Seed, tr.Evidence); err != nil {
		t.Fatalf("stored evidence does not regrade: %v", err)
	}
	// Deterministic: the same trial gives the same rows.
	tr2, calls2 := Rows(r, red)
	if tr2.Evidence != tr.Evidence || tr2.Error != tr.Error || !reflect.DeepEqual(calls2, calls) {
		t.Fatal("fitting is not deterministic")
	}
}

// sizeLimitedStore refuses, like a store with a smaller insert limit than
// the trial bound, any write whose text is over limit.
type sizeLimitedStore struct {
	*memStore
	limit   int
	refused int
}

func (s *sizeLimitedStore) WriteTrials(ctx context.Context, trials []record.Trial, calls []record.ToolCall) error {
	n := 0
	for _, t := range trials {
		n += rowBytes(t, nil)
	}
	for _, c := range calls {
		n += len(c.Args) + len(c.Result) + len(c.Tool) + len(c.Code)
	}
	if n > s.limit {
		s.refused++
		return errors.New("code: 241, message: memory limit exceeded: would use too much for this insert")
	}
	return s.memStore.WriteTrials(ctx, trials, calls)
}

// A trial the store refuses for its size is stored cut further and marked,
// not retried forever; the shard completes.
func TestShardStoresARefusedTrialTruncated(t *testing.T) {
	st := &sizeLimitedStore{memStore: shardStore(t, "  - {name: careful, agent: careful}", 2), limit: 2 * bounds.MiB}
	a := &Activities{Store: st, RedactionKey: testKey, Agents: func(scenario.Arm) (agent.Agent, error) {
		return &hostile{pad: strings.Repeat("y", bounds.CallArgs-64), calls: 6}, nil
	}}
	res, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 2})
	if err != nil || res.Trials != 2 {
		t.Fatalf("shard: %+v, %v", res, err)
	}
	if st.refused == 0 {
		t.Fatal("the store refused nothing: the test does not test the fallback")
	}
	last := st.writes[len(st.writes)-1]
	if len(last) != 1 || !strings.Contains(last[0].Error, `"store_refused"`) || !strings.Contains(last[0].Error, `"truncated"`) {
		t.Fatalf("stored trial's error %.400q", last[0].Error)
	}
	if len(st.stored) != 2 {
		t.Fatalf("%d trials stored", len(st.stored))
	}
}

// A store that refuses a small trial (an outage, not its size) fails the
// shard, to be retried.
func TestShardRetriesASmallRefusal(t *testing.T) {
	st := &sizeLimitedStore{memStore: shardStore(t, "  - {name: careful, agent: careful}", 1), limit: -1}
	a := &Activities{Store: st, RedactionKey: testKey}
	if _, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 1}); err == nil {
		t.Fatal("the shard succeeded with nothing stored")
	}
	if len(st.stored) != 0 {
		t.Fatal("stored")
	}
}

// The embedded store takes a hostile trial's rows as they are (no size
// refusal, no retry) and gives them back marked truncated.
func TestHostileTrialIsStored(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadScenario("../examples/scenarios/inventory-timeout-once.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{pad: strings.Repeat("\x00", bounds.CallArgs/6-64), calls: 6 + harness.MaxRefusedCalls, plan: strings.Repeat("\xfe", bounds.MiB), updates: 40}
	r, err := trial.Run(ctx, trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "hostile"}, Seed: 1}, h)
	if err != nil {
		t.Fatal(err)
	}
	red, _ := redact.New(nil, []byte("k"))
	tr, calls := Rows(r, red)
	if err := st.WriteTrials(ctx, []record.Trial{tr}, calls); err != nil {
		t.Fatalf("the store refused the trial: %v", err)
	}
	got, gotCalls, err := st.Trial(ctx, tr.TrialID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Evidence != tr.Evidence || got.Error != tr.Error || len(gotCalls) != len(calls) || !strings.Contains(got.Error, `"truncated"`) {
		t.Fatalf("stored trial differs (evidence %d/%d bytes, %d/%d calls, error %.200q)", len(got.Evidence), len(tr.Evidence), len(gotCalls), len(calls), got.Error)
	}
}
