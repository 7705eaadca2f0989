package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"rebound/core/scenario"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/endpoint"
	"rebound/results/record"
	"rebound/stats"
	"rebound/storage"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want Spread
	}{
		{[]float64{5}, Spread{5, 5, 5}},
		// type 7: h = 0.1*9 = 0.9 -> 1 + 0.9*(2-1); h = 8.1 -> 9 + 0.1*(10-9).
		{[]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, Spread{1.9, 5.5, 9.1}},
		{[]float64{0, 0, 0, 100}, Spread{0, 25, 70}},
	} {
		got := spread(tc.xs)
		if !near(got.P10, tc.want.P10) || !near(got.Mean, tc.want.Mean) || !near(got.P90, tc.want.P90) {
			t.Errorf("spread(%v) = %+v, want %+v", tc.xs, got, tc.want)
		}
	}
}

func plan(arms ...scenario.Arm) *scenario.Resolved {
	return &scenario.Resolved{Name: "p", Arms: arms, Seeds: []uint64{1, 2, 3},
		Scenarios: []*scenario.Scenario{
			{Name: "s1", Variants: []scenario.Variant{{Name: "a"}, {Name: "b"}}},
			{Name: "s2", Variants: []scenario.Variant{{Name: "a"}}},
		}}
}

func llmArm(name, model string, in, out float64) scenario.Arm {
	return scenario.Arm{Name: name, Agent: scenario.AgentLLM, LLM: &scenario.LLMArm{Settings: endpoint.Settings{Model: model}, InputPerMTok: in, OutputPerMTok: out}}
}

// Without a store: trials and cases are known, cost is not, and the limit
// cannot refuse what it cannot project.
func TestNoHistory(t *testing.T) {
	e, err := ForPlan(context.Background(), plan(llmArm("a", "m1", 1, 2), scenario.Arm{Name: "b", Agent: "careful"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Trials != 18 || e.Cases != 3 || e.Seeds != 3 || e.Arms[0].Trials != 9 || e.Projected {
		t.Fatalf("estimate %+v", e)
	}
	if !strings.Contains(e.History, "no store") {
		t.Errorf("history note %q", e.History)
	}
	if err := e.CheckBudget(0.01); err != nil {
		t.Errorf("CheckBudget without history: %v", err)
	}
	var b strings.Builder
	if err := e.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"18 trials (3 cases x 3 seeds x 2 arms)", "unknown (no recorded history)", "no history", "no model calls"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCheckBudget(t *testing.T) {
	e := &Estimate{Trials: 10, Projected: true, CostUSD: Range{Low: 1, Expected: 2, High: 4}, Arms: []Arm{{Model: true}}}
	if err := e.CheckBudget(2); err != nil {
		t.Errorf("expected cost equal to the cap: %v", err)
	}
	err := e.CheckBudget(1.5)
	if !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "$1.50") || !strings.Contains(err.Error(), "$2.00") {
		t.Errorf("over the cap: %v", err)
	}
	if err := e.CheckBudget(0); err != nil {
		t.Errorf("no cap: %v", err)
	}
}

// The minimum detectable difference is the smallest difference whose
// required cases fit the plan: just below it, the power calculator asks for
// more cases than the plan has.
func TestPower(t *testing.T) {
	e := &Estimate{Cases: 40, Seeds: 3}
	o := PowerOptions{Effect: 0.1, Baseline: 0.5, ICC: 0.5, Alpha: 0.05, Power: 0.8}
	if err := e.AddPower(o); err != nil {
		t.Fatal(err)
	}
	p := e.Power
	if p.Pairs != 120 || p.MDD <= 0 || p.MDD >= 0.5 {
		t.Fatalf("power %+v", p)
	}
	need := func(d float64) int {
		r, err := stats.PairedSampleSize(stats.PairedDesign{Baseline: 0.5, Diff: d, ICC: 0.5, Seeds: 3, Alpha: 0.05, Power: 0.8})
		if err != nil {
			t.Fatal(err)
		}
		return r.Clusters
	}
	if need(p.MDD) > 40 || need(p.MDD*0.99) <= 40 {
		t.Errorf("MDD %v: needs %d cases there, %d just below; the plan has 40", p.MDD, need(p.MDD), need(p.MDD*0.99))
	}
	if p.NeededCases != need(0.1) || p.Enough != (need(0.1) <= 40) {
		t.Errorf("target 0.1: needed %d enough %v, want %d", p.NeededCases, p.Enough, need(0.1))
	}
	for _, bad := range []PowerOptions{{Effect: 0, Baseline: 0.5, Alpha: 0.05, Power: 0.8}, {Effect: 0.1, Baseline: 1.5, Alpha: 0.05, Power: 0.8}, {Effect: 0.1, Baseline: 0.5, ICC: 2, Alpha: 0.05, Power: 0.8}} {
		if err := (&Estimate{Cases: 4, Seeds: 1}).AddPower(bad); err == nil {
			t.Errorf("AddPower(%+v) accepted", bad)
		}
	}
}

// On the real engine: history from trials and model_calls, deduplicated,
// attrition and other scenarios and models left out, priced with the
// plan's prices.
func TestHistoryOnClickHouse(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	dir := t.TempDir()
	ctx := context.Background()
	// Not the default database: the estimate must read the store's own.
	st, err := storage.Open(ctx, storage.Config{DataDir: dir, LibPath: lib, Database: "history_db"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var trials []record.Trial
	add := func(id, agent, scen string, attrition bool, cost float64, calls ...[2]uint64) {
		trials = append(trials, record.Trial{SweepID: "old", TrialID: id, Scenario: scen, Variant: "a", Arm: "x", Agent: agent, Seed: 1,
			FaultClasses: []string{}, Weight: 1, Attrition: attrition, CostUSD: cost, Verdicts: "{}", FaultSchedule: "{}"})
		for i, c := range calls {
			for range 2 { // written twice: FINAL keeps one
				if err := st.PutModelCall(ctx, record.ModelCall{SweepID: "old", TrialID: id, Step: uint32(i + 1), Kind: "turn", PromptTokens: c[0], CompletionTokens: c[1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Model m1 on s1: trials with 1, 2 and 3 calls of (1000 in, 100 out).
	for n := 1; n <= 3; n++ {
		calls := make([][2]uint64, n)
		for i := range calls {
			calls[i] = [2]uint64{1000, 100}
		}
		add(fmt.Sprintf("t%d", n), "llm:m1:prompt@abc", "s1", false, 9, calls...)
	}
	add("att", "llm:m1:prompt@abc", "s1", true, 0, [2]uint64{50000, 5000})           // attrition: left out
	add("other-scen", "llm:m1:prompt@abc", "zzz", false, 0, [2]uint64{50000, 5000})  // not in the plan
	add("other-model", "llm:m10:prompt@abc", "s1", false, 0, [2]uint64{50000, 5000}) // m10 is not m1
	add("scripted", "careful", "s1", false, 0)
	for range 2 {
		if err := st.WriteTrials(ctx, trials, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Every answered call of t1-t3 was journaled once before it was sent;
	// t3's step 2 was sent twice (its first answer lost with a worker) and
	// its step 4 once, never answered: 2 lost sends, each bounded by 2,000
	// prompt and 300 completion tokens ($0.005 at the plan's prices).
	send := func(trial string, step uint32) {
		if err := st.PutModelRequest(ctx, record.ModelRequest{SweepID: "old", TrialID: trial, Step: step, Kind: "turn",
			PromptTokensBound: 2000, MaxTokens: 300, CompletionTokensBound: 300, InputUSDPerMTok: 100, OutputUSDPerMTok: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 3; n++ {
		for step := 1; step <= n; step++ {
			send(fmt.Sprintf("t%d", n), uint32(step))
		}
	}
	send("t3", 2)
	send("t3", 4)
	// $1 per million input tokens, $10 per million output: a call costs
	// 0.001 + 0.001 = $0.002.
	p := plan(llmArm("a", "m1", 1, 10), llmArm("new", "m2", 1, 1), scenario.Arm{Name: "c", Agent: "careful"})
	p.MaxUSD = 0.01
	e, err := ForPlan(ctx, p, st)
	if err != nil {
		t.Fatal(err)
	}
	a := e.Arms[0]
	if a.HistoryTrials != 3 || !near(a.CallsPerTrial.Mean, 2) || !near(a.CallsPerTrial.P10, 1.2) || !near(a.CallsPerTrial.P90, 2.8) {
		t.Errorf("arm a: %+v", a)
	}
	if !near(a.TokensPerTrial.Mean, 2200) || !a.PricedByPlan || !near(a.CostPerTrial.Mean, 0.004) {
		t.Errorf("arm a tokens/cost: %+v", a)
	}
	// 3 cases x 3 seeds = 9 trials of arm a.
	if a.Trials != 9 || !near(a.CostUSD.Expected, 0.036) || !near(a.CostUSD.Low, 9*0.0024) || !near(a.CostUSD.High, 9*0.0056) {
		t.Errorf("arm a projection: %+v", a.CostUSD)
	}
	if e.Arms[1].HistoryTrials != 0 || !strings.Contains(e.History, "new") {
		t.Errorf("arm new: %+v, note %q", e.Arms[1], e.History)
	}
	if c := e.Arms[2]; c.HistoryTrials != 1 || c.CallsPerTrial.Mean != 0 {
		t.Errorf("scripted arm: %+v", c)
	}
	if !e.Projected || !near(e.CostUSD.Expected, 0.036) {
		t.Errorf("totals %+v", e.CostUSD)
	}
	// The lost sends: 2 in 3 trials, $0.005 each at the plan's prices (not
	// the $100/M they were sent with), projected over 9 trials.
	if !near(a.LostCallsPerTrial.Mean, 2.0/3) || !near(a.EstimatedCostUSD.Expected, 9*0.01/3) || !near(a.EstimatedTokens.Expected, 9*2*2300.0/3) ||
		a.HistoryCalls != 8 || a.HistoryLostCalls != 2 {
		t.Errorf("arm a lost in flight: %+v", a)
	}
	if !near(e.EstimatedCostUSD.Expected, 0.03) || e.HistoryLostCalls != 2 {
		t.Errorf("totals estimated %+v, %v lost", e.EstimatedCostUSD, e.HistoryLostCalls)
	}
	if err := e.CheckBudget(p.MaxUSD); !errors.Is(err, ErrOverBudget) {
		t.Errorf("$0.036 projected against max_usd $0.01: %v", err)
	}
	if err := e.CheckBudget(0.05); !errors.Is(err, ErrOverBudget) {
		t.Errorf("$0.036 exact + $0.03 estimated projected against $0.05: %v", err)
	}
	if err := e.CheckBudget(0.07); err != nil {
		t.Errorf("$0.066 projected against $0.07: %v", err)
	}
	var b strings.Builder
	_ = e.WriteText(&b)
	if !strings.Contains(b.String(), "EXCEEDED") || !strings.Contains(b.String(), "exact + ≤ $0.03 estimated") || !strings.Contains(b.String(), "2 of 8 recorded model requests") {
		t.Errorf("text output does not flag max_usd:\n%s", b.String())
	}
	if os.Getenv("ESTIMATE_PRINT") != "" {
		t.Log("\n" + b.String())
	}
}

func TestMain(m *testing.M) { devstacktest.Main(m) }

// history is a History over canned usage that records what it was asked.
type history struct {
	asked []record.UsageSelect
	usage map[string][]record.Usage // by agent (or prefix)
}

func (h *history) Usage(_ context.Context, sel record.UsageSelect) ([]record.Usage, error) {
	h.asked = append(h.asked, sel)
	return h.usage[sel.Agent], nil
}

// The reads an estimate makes: an LLM arm's model under any prompt (a
// prefix ending at the model's colon, so m1 is not m10), a scripted arm's
// agent exactly, both on the plan's scenarios, the most recent
// HistoryLimit; and what comes back is priced with the plan's prices.
func TestHistoryReads(t *testing.T) {
	h := &history{usage: map[string][]record.Usage{
		"llm:m1:": {{Calls: 2, PromptTokens: 1000, CompletionTokens: 100, CostUSD: 7}},
		"careful": {{}, {}},
	}}
	e, err := ForPlan(context.Background(), plan(llmArm("a", "m1", 1, 10), scenario.Arm{Name: "c", Agent: "careful"}), h)
	if err != nil {
		t.Fatal(err)
	}
	want := []record.UsageSelect{
		{Agent: "llm:m1:", AgentPrefix: true, Scenarios: []string{"s1", "s2"}, Limit: HistoryLimit},
		{Agent: "careful", Scenarios: []string{"s1", "s2"}, Limit: HistoryLimit},
	}
	if !reflect.DeepEqual(h.asked, want) {
		t.Fatalf("asked %+v, want %+v", h.asked, want)
	}
	// 1000 input tokens at $1/M and 100 output at $10/M: $0.002 a trial,
	// not the $7 the trial recorded at its own prices.
	if a := e.Arms[0]; a.HistoryTrials != 1 || !near(a.CostPerTrial.Mean, 0.002) || !near(a.CallsPerTrial.Mean, 2) {
		t.Errorf("arm a: %+v", a)
	}
	if c := e.Arms[1]; c.HistoryTrials != 2 {
		t.Errorf("arm c: %+v", c)
	}
}
