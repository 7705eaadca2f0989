package storage

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"rebound/results/record"
)

// Integration tests of the LLM judge's tables on the embedded engine.

func judgementFor(sweep, trial string, score uint8, why string) record.Judgement {
	return record.Judgement{
		SweepID: sweep, TrialID: trial, Scenario: "charge-502-twice", TraceHash: "th-" + trial,
		JudgeModel: "judge-model", JudgePromptHash: "0123456789abcdef",
		ErrorDetection: score, RetryDecision: score, BackoffBehavior: score,
		EscalationCorrectness: score, ContextPreservation: score,
		ErrorDetectionWhy: why, RetryDecisionWhy: why, BackoffBehaviorWhy: why,
		EscalationCorrectnessWhy: why, ContextPreservationWhy: why,
		Aggregate: float64(score), Recommendation: map[bool]string{true: record.RecommendPass, false: record.RecommendFail}[score >= 4],
		FailureModeSummary: why, RawOutput: `{"raw":"` + why + `"}`, Attempts: 1,
	}
}

// TestJudgementsCountOnce: retried writes of a judgement (merges stopped, so
// the duplicates physically exist) read back once per trial, the latest
// write winning; every field survives the round trip.
func TestJudgementsCountOnce(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.judgements")

	for attempt := 0; attempt < 2; attempt++ {
		for i := 0; i < 3; i++ {
			if err := st.PutJudgement(ctx, judgementFor("jsweep", fmt.Sprintf("t%d", i), 4, "first")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// t0 re-judged with another judge and another result: the latest wins.
	rejudged := judgementFor("jsweep", "t0", 2, "second")
	rejudged.JudgeModel, rejudged.Attempts = "other-model", 3
	if err := st.PutJudgement(ctx, rejudged); err != nil {
		t.Fatal(err)
	}
	if err := st.PutJudgement(ctx, judgementFor("elsewhere", "t0", 5, "x")); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, st, "judgements"); n != 8 {
		t.Fatalf("raw judgements rows = %d, want 8: the duplicates must exist for this test to mean anything", n)
	}
	check := func(stage string) {
		t.Helper()
		got, err := st.Judgements(ctx, "jsweep")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].TrialID != "t0" || got[1].TrialID != "t1" || got[2].TrialID != "t2" {
			t.Fatalf("%s: Judgements = %+v, want t0, t1, t2 once each", stage, got)
		}
		want := rejudged
		want.JudgedAt = got[0].JudgedAt
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("%s: t0 = %+v\nwant the latest write %+v", stage, got[0], want)
		}
		if got[0].JudgedAt.IsZero() || !got[0].JudgedAt.After(got[1].JudgedAt) {
			t.Fatalf("%s: judged_at %v vs %v", stage, got[0].JudgedAt, got[1].JudgedAt)
		}
	}
	check("before merges")
	mustExec(t, st, "SYSTEM START MERGES {{db}}.judgements")
	mustExec(t, st, "OPTIMIZE TABLE {{db}}.judgements FINAL")
	if n := rawCount(t, st, "judgements"); n != 4 {
		t.Fatalf("after OPTIMIZE FINAL: %d rows, want 4", n)
	}
	check("after merges")

	// A judgement that is not a judgement is never stored.
	bad := judgementFor("jsweep", "t9", 4, "x")
	bad.RetryDecision = 0
	if err := st.PutJudgement(ctx, bad); err == nil || !strings.Contains(err.Error(), "outside 1..5") {
		t.Fatalf("score 0: err = %v", err)
	}
	if n := rawCount(t, st, "judgements"); n != 4 {
		t.Fatalf("a refused judgement stored a row (%d rows)", n)
	}
}

func TestJudgementEscapingRoundTrip(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for i, s := range tricky {
		j := judgementFor(fmt.Sprintf("sweep %d %s", i, s), "trial "+s, 3, s)
		j.Scenario, j.TraceHash, j.JudgeModel, j.JudgePromptHash, j.RawOutput = s, s, s, s, s
		j.Aggregate, j.Recommendation = 3.2, record.RecommendReview
		if err := st.PutJudgement(ctx, j); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got, err := st.Judgements(ctx, j.SweepID)
		if err != nil || len(got) != 1 {
			t.Fatalf("%q: %d judgements, %v", s, len(got), err)
		}
		j.JudgedAt = got[0].JudgedAt
		if !reflect.DeepEqual(got[0], j) {
			t.Errorf("round trip of %q:\n got %#v\nwant %#v", s, got[0], j)
		}

		key := record.JudgeCacheKey{Scenario: "sc " + s, TraceHash: "h " + s, JudgeModel: "m " + s, JudgePromptHash: "p " + s}
		if err := st.PutCachedJudgement(ctx, key, s); err != nil {
			t.Fatal(err)
		}
		if out, found, err := st.CachedJudgement(ctx, key); err != nil || !found || out != s {
			t.Errorf("cache round trip of %q: %q, %v, %v", s, out, found, err)
		}

		item := record.ReviewItem{SweepID: j.SweepID, TrialID: j.TrialID, Scenario: s, TraceHash: s, JudgeModel: s,
			JudgePromptHash: s, Reason: "reason " + s, RawTrace: s, PartialOutput: s, Attempts: 3}
		// The judgement above was written first; this item is later, so open.
		if err := st.EnqueueReview(ctx, item); err != nil {
			t.Fatal(err)
		}
		q, err := st.ReviewQueue(ctx, j.SweepID)
		if err != nil || len(q) != 1 {
			t.Fatalf("%q: review queue %+v, %v", s, q, err)
		}
		item.QueuedAt = q[0].QueuedAt
		if !reflect.DeepEqual(q[0], item) {
			t.Errorf("review round trip of %q:\n got %#v\nwant %#v", s, q[0], item)
		}
	}
}

// TestJudgeCache: a miss, a hit, a rewrite, and keys that differ in one part.
func TestJudgeCache(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.judge_cache")
	key := record.JudgeCacheKey{Scenario: "sc", TraceHash: "abc", JudgeModel: "m1", JudgePromptHash: "p1"}
	if out, found, err := st.CachedJudgement(ctx, key); err != nil || found || out != "" {
		t.Fatalf("empty cache: %q, %v, %v", out, found, err)
	}
	for i := 0; i < 2; i++ { // a retried write
		if err := st.PutCachedJudgement(ctx, key, `{"v":1}`); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutCachedJudgement(ctx, key, `{"v":2}`); err != nil {
		t.Fatal(err)
	}
	if out, found, err := st.CachedJudgement(ctx, key); err != nil || !found || out != `{"v":2}` {
		t.Fatalf("hit: %q, %v, %v", out, found, err)
	}
	for _, other := range []record.JudgeCacheKey{
		{Scenario: "sc2", TraceHash: "abc", JudgeModel: "m1", JudgePromptHash: "p1"},
		{Scenario: "sc", TraceHash: "abd", JudgeModel: "m1", JudgePromptHash: "p1"},
		{Scenario: "sc", TraceHash: "abc", JudgeModel: "m2", JudgePromptHash: "p1"},
		{Scenario: "sc", TraceHash: "abc", JudgeModel: "m1", JudgePromptHash: "p2"},
	} {
		if _, found, err := st.CachedJudgement(ctx, other); err != nil || found {
			t.Errorf("%+v: found %v, %v; a key differing in one part must miss", other, found, err)
		}
	}
	if _, _, err := st.CachedJudgement(ctx, record.JudgeCacheKey{Scenario: "sc"}); err == nil {
		t.Error("incomplete key accepted")
	}
}

// TestReviewQueue: retried enqueues count once; a later judgement closes an
// item, a later enqueue reopens it; reads filter by sweep.
func TestReviewQueue(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.review_queue")
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.judgements")
	item := func(trial, reason string) record.ReviewItem {
		return record.ReviewItem{SweepID: "rq", TrialID: trial, Scenario: "sc", TraceHash: "h-" + trial,
			JudgeModel: "m", JudgePromptHash: "p", Reason: reason, RawTrace: `{"calls":[]}`, PartialOutput: "{", Attempts: 3}
	}
	ids := func() []string {
		t.Helper()
		q, err := st.ReviewQueue(ctx, "rq")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range q {
			out = append(out, it.TrialID+":"+it.Reason)
		}
		return out
	}
	if got := ids(); len(got) != 0 {
		t.Fatalf("empty queue: %v", got)
	}
	for i := 0; i < 2; i++ {
		for _, tr := range []string{"b", "a"} {
			if err := st.EnqueueReview(ctx, item(tr, "invalid output")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.EnqueueReview(ctx, record.ReviewItem{SweepID: "other", TrialID: "a", Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !reflect.DeepEqual(got, []string{"a:invalid output", "b:invalid output"}) {
		t.Fatalf("queue after retried enqueues: %v", got)
	}
	// A judgement of b in another sweep closes nothing.
	if err := st.PutJudgement(ctx, judgementFor("other", "b", 4, "x")); err != nil {
		t.Fatal(err)
	}
	// A later successful judge run of a closes its item.
	if err := st.PutJudgement(ctx, judgementFor("rq", "a", 4, "ok")); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !reflect.DeepEqual(got, []string{"b:invalid output"}) {
		t.Fatalf("queue after a judged a: %v", got)
	}
	// Re-judging a later fails again (another prompt): it is open again.
	if err := st.EnqueueReview(ctx, item("a", "provider failure")); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !reflect.DeepEqual(got, []string{"a:provider failure", "b:invalid output"}) {
		t.Fatalf("queue after a failed again: %v", got)
	}
	if err := st.EnqueueReview(ctx, record.ReviewItem{SweepID: "rq", TrialID: "c"}); err == nil {
		t.Fatal("review item without a reason accepted")
	}
}

// TestUpgradeFromVersion1: a database left by a binary that knew only
// migration 1 (trials without answer and recording) migrates in place; its
// old rows read the new columns as empty, new rows carry them.
func TestUpgradeFromVersion1(t *testing.T) {
	requireIntegration(t)
	ctx := context.Background()
	db := fmt.Sprintf("t%d_upgrade_v1", dbSeq.Add(1))
	opened, err := Open(ctx, Config{DataDir: integ.dataDir, LibPath: integ.lib, Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	st := opened.(*store)
	if err := st.migrateTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Write a trial with the version-1 column list, as the old binary did.
	v1Cols := ddlColumns(ddlTrials)
	old := record.Trial{SweepID: "up", TrialID: "old", Scenario: "sc", Claim: `{"status":"completed"}`, Weight: 1}
	all, err := trialValues(old, st.stamp())
	if err != nil {
		t.Fatal(err)
	}
	var v1Vals []any
	for i, c := range trialCols {
		if indexOf(v1Cols, c) >= 0 {
			v1Vals = append(v1Vals, all[i])
		}
	}
	if err := st.t.Insert(ctx, st.insertSQL("trials", v1Cols), v1Cols, [][]any{v1Vals}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Judgements(ctx, "up"); err == nil {
		t.Fatal("judgements exists at version 1")
	}

	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, st, "schema_migrations"); n != uint64(len(migrations)) {
		t.Fatalf("schema_migrations holds %d rows, want %d", n, len(migrations))
	}
	got, _, err := st.Trial(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Answer != "" || got.Recording != "" || got.Claim != old.Claim {
		t.Fatalf("old trial after the upgrade: %+v", got)
	}
	fresh := record.Trial{SweepID: "up", TrialID: "new", Scenario: "sc", Weight: 1,
		Answer: "I could not charge the card: the gateway kept failing.", Recording: `{"version":1,"steps":[]}`}
	if err := st.WriteTrials(ctx, []record.Trial{fresh}, nil); err != nil {
		t.Fatal(err)
	}
	list, err := st.Trials(ctx, "up")
	if err != nil || len(list) != 2 || list[0].TrialID != "new" || list[0].Answer != fresh.Answer || list[0].Recording != fresh.Recording {
		t.Fatalf("Trials after the upgrade: %+v, %v", list, err)
	}
	if js, err := st.Judgements(ctx, "up"); err != nil || len(js) != 0 {
		t.Fatalf("Judgements after the upgrade: %v, %v", js, err)
	}
}
