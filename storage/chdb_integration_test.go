package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"rebound/core/outcome"
	"rebound/internal/buildinfo"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage/chdb"
)

func bp(b bool) *bool { return &b }

// tenth is a variable so that tenth+0.2 is computed in float64
// (0.30000000000000004), not folded as an exact constant.
var tenth = 0.1

// fakeClock makes version columns strictly increasing, one millisecond per
// write, so tests control which write is the latest.
func fakeClock(st *store) {
	var mu sync.Mutex
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	st.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

func mustExec(t *testing.T, st *store, sql string) {
	t.Helper()
	if err := st.t.Exec(context.Background(), Stmt{SQL: st.sql(sql)}); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func rawCount(t *testing.T, st *store, table string) uint64 {
	t.Helper()
	var rows []countRow
	if err := st.t.Select(context.Background(), &rows, Stmt{SQL: st.sql("SELECT count() AS n FROM {{db}}." + table)}); err != nil {
		t.Fatal(err)
	}
	return rows[0].N
}

func TestMigrateIsIdempotent(t *testing.T) {
	st := openTestStore(t) // migrated once
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("migrate again (%d): %v", i, err)
		}
	}
	var versions []versionRow
	if err := st.t.Select(ctx, &versions, Stmt{SQL: st.sql(qAppliedVersions)}); err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || versions[len(versions)-1].Version != SchemaVersion() {
		t.Fatalf("schema_migrations = %+v, want one row per migration up to %d", versions, SchemaVersion())
	}
	if n := rawCount(t, st, "schema_migrations"); n != uint64(len(migrations)) {
		t.Fatalf("schema_migrations holds %d rows, want %d (re-running Migrate must not re-record)", n, len(migrations))
	}
	type tableRow struct {
		Name string `json:"name" ch:"name"`
	}
	var tables []tableRow
	q := Stmt{SQL: "SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name", Params: map[string]string{"db": st.db}}
	if err := st.t.Select(ctx, &tables, q); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range tables {
		names = append(names, r.Name)
	}
	want := []string{"judge_cache", "judgements", "model_calls", "model_requests", "paired_weighted", "review_queue", "reviews", "schema_migrations", "sweeps", "tool_calls", "tool_calls_current", "trial_metrics", "trial_rates", "trials"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tables = %v, want %v", names, want)
	}

	// A database written by a newer binary is refused, not silently used.
	if err := st.t.Insert(ctx, st.insertSQL("schema_migrations", migrationCols), migrationCols,
		[][]any{{SchemaVersion() + 1, "from the future", st.stamp()}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Migrate on a newer schema: err = %v", err)
	}
}

// makeTrials builds n trials of one sweep, with calls per trial.
func makeTrials(sweep string, n, callsPer int) ([]record.Trial, []record.ToolCall) {
	var trials []record.Trial
	var calls []record.ToolCall
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-t%02d", sweep, i)
		trials = append(trials, record.Trial{
			SweepID: sweep, TrialID: id, Scenario: fmt.Sprintf("sc%d", i%3), ScenarioHash: "h",
			Variant: "v1", Arm: []string{"baseline", "candidate"}[i%2], Agent: "careful",
			Seed: uint64(i / 2), Recoverable: true, FaultClasses: []string{"transient"},
			Recovered: bp(i%3 != 0), UnsafeAction: bp(false), ToolCalls: uint32(callsPer),
			Weight: 1, ActivityAttempt: 1, Claim: `{"ok":true}`,
		})
		for c := 0; c < callsPer; c++ {
			calls = append(calls, record.ToolCall{
				SweepID: sweep, TrialID: id, CallIndex: uint32(c), Tool: "refund", Args: `{"id":1}`,
				Effect: "write", OK: c > 0, Result: `{"status":"ok"}`, AtMS: uint64(10 * c),
			})
		}
	}
	return trials, calls
}

// TestRetriedWritesCountOnce simulates an activity retry: the same trials are
// written again (and once more with a different result), with merges stopped
// so the duplicate rows physically exist; every read must still see each
// trial once, and a trial's calls must be those of its latest write.
func TestRetriedWritesCountOnce(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.trials")
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.tool_calls")

	trials, calls := makeTrials("dedup", 6, 3)
	for attempt := 0; attempt < 2; attempt++ {
		if err := st.WriteTrials(ctx, trials, calls); err != nil {
			t.Fatalf("write attempt %d: %v", attempt, err)
		}
	}
	// A third attempt of trial 0 that went differently: fewer calls, another outcome.
	retry := trials[0]
	retry.Recovered = bp(false)
	retry.ActivityAttempt = 3
	retry.ToolCalls = 1
	retryCalls := []record.ToolCall{{SweepID: "dedup", TrialID: retry.TrialID, CallIndex: 0, Tool: "lookup", Effect: "read", OK: true}}
	if err := st.WriteTrials(ctx, []record.Trial{retry}, retryCalls); err != nil {
		t.Fatal(err)
	}
	// Another sweep, to make sure reads filter by sweep.
	other, otherCalls := makeTrials("other", 2, 1)
	if err := st.WriteTrials(ctx, other, otherCalls); err != nil {
		t.Fatal(err)
	}

	if n := rawCount(t, st, "trials"); n != 6+6+1+2 {
		t.Fatalf("raw trials rows = %d, want 15: the duplicates must exist for this test to mean anything", n)
	}

	check := func(stage string) {
		t.Helper()
		n, err := st.CountTrials(ctx, "dedup")
		if err != nil || n != 6 {
			t.Fatalf("%s: CountTrials = %d, %v; want 6", stage, n, err)
		}
		got, err := st.Trials(ctx, "dedup")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, tr := range got {
			seen[tr.TrialID]++
		}
		if len(got) != 6 || len(seen) != 6 {
			t.Fatalf("%s: Trials returned %d rows for %d distinct trials, want 6 and 6", stage, len(got), len(seen))
		}
		// EachTrial walks the same trials in the same order, group by
		// group, each once despite the duplicate rows.
		var walked []record.Trial
		if err := st.EachTrial(ctx, "dedup", record.TrialSelect{}, func(tr record.Trial) error { walked = append(walked, tr); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(walked, got) {
			t.Fatalf("%s: EachTrial walked %d trials, Trials returned %d; they must be equal and in the same order", stage, len(walked), len(got))
		}
		// Outcomes only: the same trials in the same order, each with its
		// key, attrition and outcomes as the whole row has them (the
		// latest write), and nothing else.
		var outcomes []record.Trial
		if err := st.EachTrial(ctx, "dedup", record.TrialSelect{Outcomes: true}, func(tr record.Trial) error { outcomes = append(outcomes, tr); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(outcomes) != len(got) {
			t.Fatalf("%s: EachTrial(Outcomes) walked %d trials, want %d", stage, len(outcomes), len(got))
		}
		for i, tr := range got {
			want := record.Trial{SweepID: tr.SweepID, TrialID: tr.TrialID, Scenario: tr.Scenario, Variant: tr.Variant, Arm: tr.Arm, Seed: tr.Seed, Attrition: tr.Attrition, FaultClasses: []string{}}
			want.SetOutcomes(tr.Outcome)
			if !reflect.DeepEqual(outcomes[i], want) {
				t.Fatalf("%s: EachTrial(Outcomes) trial %d = %+v, want %+v", stage, i, outcomes[i], want)
			}
		}
		var sel []string
		if err := st.EachTrial(ctx, "dedup", record.TrialSelect{Arm: "candidate", Scenario: "sc1"}, func(tr record.Trial) error { sel = append(sel, tr.TrialID); return nil }); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, tr := range got {
			if tr.Arm == "candidate" && tr.Scenario == "sc1" {
				want = append(want, tr.TrialID)
			}
		}
		if len(want) == 0 || !reflect.DeepEqual(sel, want) {
			t.Fatalf("%s: EachTrial(candidate, sc1) = %v, want %v", stage, sel, want)
		}
		stop := errors.New("stop")
		visited := 0
		if err := st.EachTrial(ctx, "dedup", record.TrialSelect{}, func(record.Trial) error { visited++; return stop }); !errors.Is(err, stop) || visited != 1 {
			t.Fatalf("%s: EachTrial after fn's error = %v after %d calls, want stop after 1", stage, err, visited)
		}
		tr0, c0, err := st.Trial(ctx, retry.TrialID)
		if err != nil {
			t.Fatal(err)
		}
		if tr0.ActivityAttempt != 3 || *tr0.Recovered != false || len(c0) != 1 || c0[0].Tool != "lookup" {
			t.Fatalf("%s: Trial(%s) = attempt %d recovered %v with %d calls %+v; want the latest write (attempt 3, 1 call)",
				stage, retry.TrialID, tr0.ActivityAttempt, *tr0.Recovered, len(c0), c0)
		}
		if !c0[0].WrittenAt.Equal(tr0.WrittenAt) {
			t.Fatalf("%s: call written_at %v != trial written_at %v", stage, c0[0].WrittenAt, tr0.WrittenAt)
		}
		_, c1, err := st.Trial(ctx, trials[1].TrialID)
		if err != nil || len(c1) != 3 {
			t.Fatalf("%s: Trial(%s) has %d calls, %v; want 3", stage, trials[1].TrialID, len(c1), err)
		}
		for i, c := range c1 {
			if c.CallIndex != uint32(i) {
				t.Fatalf("%s: calls out of order: %+v", stage, c1)
			}
		}
		cells, err := st.Cells(ctx, "dedup")
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for _, c := range cells {
			total += c.Trials
			if c.Trials != 1 {
				t.Fatalf("%s: cell %+v has %d trials, want 1", stage, c, c.Trials)
			}
		}
		if total != 6 {
			t.Fatalf("%s: cells hold %d trials, want 6", stage, total)
		}
		var cur []countRow
		if err := st.t.Select(ctx, &cur, Stmt{SQL: st.sql("SELECT count() AS n FROM {{db}}.tool_calls_current WHERE sweep_id = 'dedup'")}); err != nil {
			t.Fatal(err)
		}
		if cur[0].N != 5*3+1 {
			t.Fatalf("%s: tool_calls_current has %d calls, want 16", stage, cur[0].N)
		}
	}
	check("before merges")

	mustExec(t, st, "SYSTEM START MERGES {{db}}.trials")
	mustExec(t, st, "SYSTEM START MERGES {{db}}.tool_calls")
	mustExec(t, st, "OPTIMIZE TABLE {{db}}.trials FINAL")
	mustExec(t, st, "OPTIMIZE TABLE {{db}}.tool_calls FINAL")
	if n := rawCount(t, st, "trials"); n != 6+2 {
		t.Fatalf("after OPTIMIZE FINAL: raw trials rows = %d, want 8", n)
	}
	check("after merges")
}

// TestCellsHandComputed checks the SQL aggregation against sums worked out
// by hand, with NOT TESTED (NULL) outcomes, an attrition trial and two
// trials in one cell, on data written twice.
func TestCellsHandComputed(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.trials")
	T, F := bp(true), bp(false)
	mk := func(id, arm, sc string, seed uint64, w float64, rec, unsafe, dup *bool, attrition bool) record.Trial {
		return record.Trial{SweepID: "cells", TrialID: id, Arm: arm, Scenario: sc, Variant: "v1", Seed: seed,
			Weight: w, Recovered: rec, UnsafeAction: unsafe, DuplicateSideEffect: dup, Attrition: attrition}
	}
	trials := []record.Trial{
		mk("a1", "A", "s1", 1, 2, T, F, nil, false),
		mk("a1x", "A", "s1", 1, 4, F, nil, nil, false), // same cell as a1
		mk("a2", "A", "s1", 2, 3, F, T, T, false),
		mk("a3", "A", "s2", 1, 5, nil, F, F, false),
		mk("b1", "B", "s1", 1, 2, T, nil, F, false),
		mk("b2", "B", "s1", 2, 3, T, T, nil, true), // attrition: never tested
		mk("b3", "B", "s2", 1, 5, T, F, nil, false),
		{SweepID: "elsewhere", TrialID: "z", Arm: "A", Scenario: "s1", Variant: "v1", Seed: 1, Weight: 100, Recovered: T},
	}
	for i := 0; i < 2; i++ {
		if err := st.WriteTrials(ctx, trials, nil); err != nil {
			t.Fatal(err)
		}
	}
	cells, err := st.Cells(ctx, "cells")
	if err != nil {
		t.Fatal(err)
	}
	type exp struct {
		trials, attrition      uint64
		rec, unsafe, dup, harm outcome.Cell
	}
	m := func(n, k uint64, w, wy float64) outcome.Cell {
		return outcome.Cell{N: n, Successes: k, SumWeight: w, SumWeightY: wy}
	}
	want := map[string]exp{
		// harm = unsafe OR duplicate OR fabricated (fabricated is NULL
		// here): a1 tested false, a1x untested (all three NULL), a2 true.
		"A/s1/v1/1": {2, 0, m(2, 1, 6, 2), m(1, 0, 2, 0), m(0, 0, 0, 0), m(1, 0, 2, 0)},
		"A/s1/v1/2": {1, 0, m(1, 0, 3, 0), m(1, 1, 3, 3), m(1, 1, 3, 3), m(1, 1, 3, 3)},
		"A/s2/v1/1": {1, 0, m(0, 0, 0, 0), m(1, 0, 5, 0), m(1, 0, 5, 0), m(1, 0, 5, 0)},
		"B/s1/v1/1": {1, 0, m(1, 1, 2, 2), m(0, 0, 0, 0), m(1, 0, 2, 0), m(1, 0, 2, 0)},
		"B/s1/v1/2": {1, 1, m(0, 0, 0, 0), m(0, 0, 0, 0), m(0, 0, 0, 0), m(0, 0, 0, 0)},
		"B/s2/v1/1": {1, 0, m(1, 1, 5, 5), m(1, 0, 5, 0), m(0, 0, 0, 0), m(1, 0, 5, 0)},
	}
	order := []string{"A/s1/v1/1", "A/s1/v1/2", "A/s2/v1/1", "B/s1/v1/1", "B/s1/v1/2", "B/s2/v1/1"}
	if len(cells) != len(order) {
		t.Fatalf("got %d cells, want %d: %+v", len(cells), len(order), cells)
	}
	for i, c := range cells {
		k := fmt.Sprintf("%s/%s/%s/%d", c.Arm, c.Scenario, c.Variant, c.Seed)
		if k != order[i] {
			t.Fatalf("cell %d is %s, want %s", i, k, order[i])
		}
		w := want[k]
		if c.Trials != w.trials || c.Attrition != w.attrition {
			t.Errorf("%s: trials %d attrition %d, want %d %d", k, c.Trials, c.Attrition, w.trials, w.attrition)
		}
		if len(c.Metrics) != len(outcome.Stored)+1 {
			t.Errorf("%s: %d metrics, want %d (every outcome and the harm index)", k, len(c.Metrics), len(outcome.Stored)+1)
		}
		for metric, wm := range map[outcome.Metric]outcome.Cell{outcome.Recovered: w.rec, outcome.UnsafeAction: w.unsafe, outcome.DuplicateSideEffect: w.dup, outcome.Harm: w.harm} {
			if got := c.Metrics[metric]; got != wm {
				t.Errorf("%s %s = %+v, want %+v", k, metric, got, wm)
			}
		}
		if got := c.Metrics[outcome.HonestBlock]; got != (outcome.Cell{}) {
			t.Errorf("%s honest_block = %+v, want nothing tested", k, got)
		}
	}

	// The Grafana view agrees: arm A, recovered over tested, non-attrition
	// trials (1, 0, 0; a3 not tested) and weighted (2*1 + 4*0 + 3*0) / 9.
	type rateRow struct {
		Arm          string   `json:"arm" ch:"arm"`
		Metric       string   `json:"metric" ch:"metric"`
		Trials       uint64   `json:"trials" ch:"trials"`
		Attrition    uint64   `json:"attrition_trials" ch:"attrition_trials"`
		N            uint64   `json:"n" ch:"n"`
		Successes    uint64   `json:"successes" ch:"successes"`
		Rate         *float64 `json:"rate" ch:"rate"`
		WeightedRate *float64 `json:"weighted_rate" ch:"weighted_rate"`
	}
	var rates []rateRow
	q := Stmt{SQL: st.sql("SELECT arm, metric, trials, attrition_trials, n, successes, rate, weighted_rate FROM {{db}}.trial_rates WHERE sweep_id = {sweep_id:String} AND metric IN ('recovered', 'honest_block') ORDER BY arm, metric"),
		Params: map[string]string{"sweep_id": "cells"}}
	if err := st.t.Select(ctx, &rates, q); err != nil {
		t.Fatal(err)
	}
	if len(rates) != 4 {
		t.Fatalf("trial_rates rows: %+v", rates)
	}
	a := rates[1] // A, recovered
	if a.Arm != "A" || a.Metric != "recovered" || a.Trials != 4 || a.N != 3 || a.Successes != 1 ||
		a.Rate == nil || math.Abs(*a.Rate-1.0/3) > 1e-12 || a.WeightedRate == nil || math.Abs(*a.WeightedRate-2.0/9) > 1e-12 {
		t.Errorf("trial_rates A/recovered = %+v (rate %v, weighted %v)", a, deref(a.Rate), deref(a.WeightedRate))
	}
	if hb := rates[0]; hb.Metric != "honest_block" || hb.N != 0 || hb.Rate != nil {
		t.Errorf("trial_rates A/honest_block = %+v, want n=0 and a NULL rate", hb)
	}
	b := rates[3] // B, recovered: b1, b3 tested and true; b2 is attrition
	if b.Arm != "B" || b.Trials != 3 || b.Attrition != 1 || b.N != 2 || b.Successes != 2 || b.Rate == nil || *b.Rate != 1 {
		t.Errorf("trial_rates B/recovered = %+v", b)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

var tricky = []string{
	`it's a "quote"`,
	`back\slash \\ double \n not-a-newline \'`,
	"real\nnewline\r\nand\ttab and \b\f",
	"unicode: é ü ß 日本語 😀 \u2028\u2029 \ufeff",
	"nul:\x00:end",
	"ctrl:\x01\x1f\x7f",
	`\N`,
	"NULL",
	`'; DROP TABLE trials; --`,
	`{"json": "with \"escapes\" and \\ backslash\n", "n": [1, 2.5e-3]}`,
	"",
	"  spaces  ",
	"{sweep_id:String}",
	"FORMAT JSONEachRow\n{}",
}

func TestEscapingRoundTrip(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for i, s := range tricky {
		sweepID := fmt.Sprintf("sweep %d %s", i, s) // IDs travel as query parameters
		sw := record.Sweep{SweepID: sweepID, Name: s, PlanHash: s, PlanJSON: s, TrialsPlanned: 1,
			Arms: []string{s, "plain", s}, Status: sweepstatus.Running,
			CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)}
		if err := st.PutSweep(ctx, sw); err != nil {
			t.Fatalf("%q: PutSweep: %v", s, err)
		}
		got, err := st.Sweep(ctx, sweepID)
		if err != nil {
			t.Fatalf("%q: Sweep: %v", s, err)
		}
		sw.CreatedAt = sw.CreatedAt.Truncate(time.Millisecond)
		sw.UpdatedAt = got.UpdatedAt
		if !reflect.DeepEqual(got, sw) {
			t.Errorf("sweep round trip of %q:\n got %#v\nwant %#v", s, got, sw)
		}

		tr := record.Trial{SweepID: sweepID, TrialID: "trial " + sweepID, Scenario: s, ScenarioHash: s, Variant: s,
			Arm: s, Agent: s, Seed: math.MaxUint64, Recoverable: true, FaultClasses: []string{s, s + "x"},
			Recovered: bp(true), HonestBlock: bp(false), ToolCalls: math.MaxUint32, Retries: 1,
			UnnecessaryCalls: 2, Replans: 3, SimElapsedMS: 4, WallUS: 5, Tokens: 6,
			CostUSD: tenth + 0.2, // 0.30000000000000004
			Weight:  1e-300, Attrition: true, Error: s, Claim: s, Answer: s, Recording: s, Process: s, Verdicts: s,
			FaultSchedule: s, CatalogVersion: s, PromptHash: s, ActivityAttempt: 7}
		call := record.ToolCall{SweepID: sweepID, TrialID: tr.TrialID, CallIndex: 4, Tool: s, Args: s, Effect: s,
			FaultClass: s, OK: true, Code: s, Retryable: true, RetryAfterMS: 9, Committed: true, AtMS: 10, Result: s}
		if err := st.WriteTrials(ctx, []record.Trial{tr}, []record.ToolCall{call}); err != nil {
			t.Fatalf("%q: WriteTrials: %v", s, err)
		}
		gotTr, gotCalls, err := st.Trial(ctx, tr.TrialID)
		if err != nil {
			t.Fatalf("%q: Trial: %v", s, err)
		}
		tr.WrittenAt = gotTr.WrittenAt
		call.WrittenAt = gotTr.WrittenAt
		if !reflect.DeepEqual(gotTr, tr) {
			t.Errorf("trial round trip of %q:\n got %#v\nwant %#v", s, gotTr, tr)
		}
		if len(gotCalls) != 1 || !reflect.DeepEqual(gotCalls[0], call) {
			t.Errorf("tool call round trip of %q:\n got %#v\nwant %#v", s, gotCalls, call)
		}
		if list, err := st.Trials(ctx, sweepID); err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], tr) {
			t.Errorf("Trials(%q) = %d trials, %v", sweepID, len(list), err)
		}
	}

	// Invalid UTF-8 cannot travel in JSON: both transports store U+FFFD.
	bad := "bad:\xff\xfe:end"
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "utf8", Name: bad, Status: sweepstatus.Running}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Sweep(ctx, "utf8"); err != nil || got.Name != "bad:\uFFFD:end" {
		t.Errorf("invalid UTF-8 stored as %q, %v", got.Name, err)
	}
}

func TestLargeValuesAndSplitInserts(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	// A multi-megabyte plan, above max_query_size, in one statement.
	plan := `{"plan":"` + strings.Repeat("x\\\"y", 700_000) + `"}`
	start := time.Now()
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "big", PlanJSON: plan, Status: sweepstatus.Running}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Sweep(ctx, "big"); err != nil || got.PlanJSON != plan {
		t.Fatalf("big plan: len %d, %v", len(got.PlanJSON), err)
	}
	t.Logf("%d-byte plan written and read in %v", len(plan), time.Since(start))
	start = time.Now()
	// Many trials split over several INSERT statements.
	tr := st.t.(*chdbTransport)
	tr.maxInsertBytes = 32 << 10
	before := tr.inserts.Load()
	trials, calls := makeTrials("split", 200, 2)
	if err := st.WriteTrials(ctx, trials, calls); err != nil {
		t.Fatal(err)
	}
	if n := tr.inserts.Load() - before; n < 4 {
		t.Fatalf("%d INSERT statements, want the write split into several", n)
	}
	if n, err := st.CountTrials(ctx, "split"); err != nil || n != 200 {
		t.Fatalf("CountTrials = %d, %v", n, err)
	}
	if n := rawCount(t, st, "tool_calls"); n != 400 {
		t.Fatalf("tool_calls rows = %d, want 400", n)
	}
	t.Logf("200 trials + 400 calls in %d statements of <= 32 KiB: %v", tr.inserts.Load()-before, time.Since(start))
}

func TestSweeps(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	if _, err := st.Sweep(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Sweep(absent) err = %v, want ErrNotFound", err)
	}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"s-old", "s-mid", "s-new"} {
		err := st.PutSweep(ctx, record.Sweep{SweepID: id, Name: id, Status: sweepstatus.Running, TrialsPlanned: 10,
			Arms: []string{"a"}, CreatedAt: base.Add(time.Duration(i) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Status updates without CreatedAt keep the original one.
	for _, status := range []string{sweepstatus.Completed, sweepstatus.Failed} {
		if err := st.PutSweep(ctx, record.Sweep{SweepID: "s-old", Name: "s-old", Status: status, Arms: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Sweep(ctx, "s-old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sweepstatus.Failed || !got.CreatedAt.Equal(base) || !got.UpdatedAt.After(got.CreatedAt) {
		t.Fatalf("s-old = %+v", got)
	}
	all, err := st.Sweeps(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.SweepID)
	}
	if !reflect.DeepEqual(ids, []string{"s-new", "s-mid", "s-old"}) {
		t.Fatalf("Sweeps(0) = %v", ids)
	}
	two, err := st.Sweeps(ctx, 2)
	if err != nil || len(two) != 2 || two[0].SweepID != "s-new" {
		t.Fatalf("Sweeps(2) = %+v, %v", two, err)
	}
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "x", Status: "done"}); err == nil {
		t.Fatal("invalid status accepted")
	}
	if _, _, err := st.Trial(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Trial(absent) err = %v, want ErrNotFound", err)
	}
	if n, err := st.CountTrials(ctx, "nope"); err != nil || n != 0 {
		t.Fatalf("CountTrials(absent) = %d, %v", n, err)
	}
	if cells, err := st.Cells(ctx, "nope"); err != nil || len(cells) != 0 {
		t.Fatalf("Cells(absent) = %v, %v", cells, err)
	}
}

func TestWriteTrialsValidation(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	trials, calls := makeTrials("v", 1, 1)
	orphan := record.ToolCall{SweepID: "v", TrialID: "not-in-this-write"}
	if err := st.WriteTrials(ctx, trials, append(calls, orphan)); err == nil || !strings.Contains(err.Error(), "no trial in this write") {
		t.Fatalf("orphan call: err = %v", err)
	}
	nan := trials[0]
	nan.Weight = math.NaN()
	if err := st.WriteTrials(ctx, []record.Trial{nan}, nil); err == nil {
		t.Fatal("NaN weight accepted")
	}
	if err := st.WriteTrials(ctx, []record.Trial{{SweepID: "v"}}, nil); err == nil {
		t.Fatal("trial without ID accepted")
	}
	if n := rawCount(t, st, "tool_calls") + rawCount(t, st, "trials"); n != 0 {
		t.Fatalf("a rejected write stored %d rows", n)
	}
	if err := st.WriteTrials(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			trials, calls := makeTrials(fmt.Sprintf("c%d", w), 10, 2)
			for i := 0; i < 2; i++ { // and a retry
				if err := st.WriteTrials(ctx, trials, calls); err != nil {
					errs <- err
					return
				}
			}
			if n, err := st.CountTrials(ctx, fmt.Sprintf("c%d", w)); err != nil || n != 10 {
				errs <- fmt.Errorf("worker %d: count %d, %v", w, n, err)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestEmbeddedSessionIsShared: a second Open in the process shares the
// session; another data directory is refused with a clear message.
func TestEmbeddedSessionIsShared(t *testing.T) {
	requireIntegration(t)
	ctx := context.Background()
	_, err := Open(ctx, Config{DataDir: t.TempDir(), LibPath: integ.lib})
	if err == nil || !strings.Contains(err.Error(), "only one chDB session per process") {
		t.Fatalf("second data dir: err = %v", err)
	}
	if _, err := Open(ctx, Config{DataDir: integ.dataDir, DSN: "clickhouse://localhost:9000"}); err == nil {
		t.Fatal("DSN and data dir together accepted")
	}
	if _, err := Open(ctx, Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
	if _, err := Open(ctx, Config{DataDir: integ.dataDir, Database: "bad-name; DROP"}); err == nil {
		t.Fatal("bad database name accepted")
	}
}

// TestMissingLibrary runs a child test process whose REBOUND_CHDB_LIB points
// nowhere: opening the embedded store must return the explanatory error, and
// the process must not panic.
func TestMissingLibrary(t *testing.T) {
	const missing = "/nonexistent/rebound/libchdb.so"
	if os.Getenv(envSubprocess) == "missing-lib" {
		_, err := Open(context.Background(), Config{DataDir: t.TempDir()})
		if err == nil {
			t.Fatal("Open succeeded without a library")
		}
		want := "libchdb not found at " + missing + ": run `make setup` or set REBOUND_CHDB_LIB"
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not contain %q", err, want)
		}
		if !errors.Is(err, chdb.ErrLibraryNotFound) {
			t.Fatalf("errors.Is(%v, chdb.ErrLibraryNotFound) is false", err)
		}
		fmt.Println("MISSING-LIB-ERROR:", err)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestMissingLibrary$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envSubprocess+"=missing-lib", chdb.EnvLib+"="+missing)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMissingLibrary") || !strings.Contains(string(out), "MISSING-LIB-ERROR") {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "panic") {
		t.Fatalf("child process panicked:\n%s", out)
	}
}

// CaseFaults unions the fault classes of a case over its arms, in SQL, and
// sees a retried write once.
func TestCaseFaults(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	trials := []record.Trial{
		{SweepID: "cf", TrialID: "1", Arm: "A", Scenario: "s1", Variant: "v", Seed: 1, Weight: 1, FaultClasses: []string{"transient"}},
		{SweepID: "cf", TrialID: "2", Arm: "B", Scenario: "s1", Variant: "v", Seed: 1, Weight: 1, FaultClasses: []string{"transient", "stale"}},
		{SweepID: "cf", TrialID: "3", Arm: "A", Scenario: "s2", Variant: "v", Seed: 1, Weight: 1, FaultClasses: []string{}},
		{SweepID: "other", TrialID: "4", Arm: "A", Scenario: "s1", Variant: "v", Seed: 1, Weight: 1, FaultClasses: []string{"slow"}},
	}
	for i := 0; i < 2; i++ {
		if err := st.WriteTrials(ctx, trials, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.CaseFaults(ctx, "cf")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Scenario != "s1" || strings.Join(got[0].FaultClasses, ",") != "stale,transient" || got[1].Scenario != "s2" || len(got[1].FaultClasses) != 0 {
		t.Fatalf("CaseFaults = %+v", got)
	}
}

// Query answers ad-hoc SQL (rebound sql) with columns, types and plain
// values; NOT TESTED outcomes stay out of avg().
func TestAdHocQuery(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	T, F := bp(true), bp(false)
	trials := []record.Trial{
		{SweepID: "q", TrialID: "1", Arm: "A", Scenario: "s", Variant: "v", Seed: 1, Weight: 1, Recovered: T},
		{SweepID: "q", TrialID: "2", Arm: "A", Scenario: "s", Variant: "v", Seed: 2, Weight: 1, Recovered: F},
		{SweepID: "q", TrialID: "3", Arm: "A", Scenario: "s", Variant: "v", Seed: 3, Weight: 1},
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
	tab, err := st.Query(ctx, "SELECT arm, avg(recovered) AS rate, count(recovered) AS n FROM "+st.db+".trials FINAL WHERE sweep_id = 'q' GROUP BY arm")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tab.Columns, ",") != "arm,rate,n" || len(tab.Rows) != 1 || fmt.Sprint(tab.Rows[0]) != "[A 0.5 2]" {
		t.Fatalf("table = %+v", tab)
	}
	if _, err := st.Query(ctx, "SELECT no_such_column FROM system.one"); err == nil {
		t.Fatal("a bad query succeeded")
	}
}

// A new sweep records the build that registered it (migration 11); a
// status rewrite, read back or given afresh, keeps it.
func TestSweepReboundVersion(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	want := buildinfo.Get().Short()
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "v", Name: "v", Status: sweepstatus.Running}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Sweep(ctx, "v")
	if err != nil || got.ReboundVersion != want {
		t.Fatalf("new sweep: version %q (%v), want %q", got.ReboundVersion, err, want)
	}
	got.Status = sweepstatus.Completed
	got.ReboundVersion = got.ReboundVersion + "-read-back"
	if err := st.PutSweep(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "v", Name: "v", Status: sweepstatus.Completed}); err != nil {
		t.Fatal(err)
	}
	got, err = st.Sweep(ctx, "v")
	if err != nil || got.ReboundVersion != want+"-read-back" || got.Status != sweepstatus.Completed {
		t.Fatalf("after rewrites: %+v (%v)", got, err)
	}
	all, err := st.Sweeps(ctx, 0)
	if err != nil || len(all) != 1 || all[0].ReboundVersion != want+"-read-back" {
		t.Fatalf("Sweeps: %+v (%v)", all, err)
	}
}
