package judgestore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/redact"
	"rebound/results/artifact"
	"rebound/results/judge"
	"rebound/results/record"
	"rebound/storage"
)

// openStore opens a migrated embedded store, or skips (fails under
// REBOUND_REQUIRE_INTEGRATION=1) when libchdb is not available.
func openStore(t *testing.T) storage.Store {
	t.Helper()
	lib := devstacktest.ChDBLib(t)
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "judge_test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestWithStore runs the judge against the real storage: the store-backed
// cache, Record for both outcomes, calibration pairs read back, and a scan
// of every stored row for the API key.
func TestWithStore(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	const secret = "sk-judge-store-test-K3Y-987654321"
	t.Setenv("REBOUND_JUDGE_STORE_KEY", secret)
	srv := llmtest.New(t)
	fs := &llmtest.Sleeps{}
	j, err := judge.New(judge.Config{BaseURL: srv.BaseURL(), APIKeyEnv: "REBOUND_JUDGE_STORE_KEY", Model: "judge-model"},
		judge.WithSleep(fs.Sleep), judge.WithCache(StoreCache{Store: st}))
	if err != nil {
		t.Fatal(err)
	}

	// Two trials of a sweep, stored the way the activities store them.
	naiveIn, naive := realInput(t, "charge-502-twice", "502-twice", "naive_retrier")
	blockedIn, blocked := realInput(t, "customer-profile-forbidden", "profile-forbidden", "careful")
	const sweep = "sweep-judge"
	var trials []record.Trial
	for _, r := range []struct {
		id string
		v  grade.Verdict
	}{{"t-naive", naive.Verdict}, {"t-blocked", blocked.Verdict}} {
		vj, _ := json.Marshal(r.v)
		trials = append(trials, record.Trial{SweepID: sweep, TrialID: r.id, Scenario: "s", Weight: 1, Verdicts: string(vj)})
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}

	// Judged, with the key echoed by the provider.
	srv.Push(llmtest.Text(strings.Replace(outputJSON(5, 2, 1, 4, 4), "see calls 1-3.", "key="+secret, 1)))
	res, err := j.Score(ctx, naiveIn)
	if err != nil || res.Status != judge.Judged {
		t.Fatalf("%+v, %v", res, err)
	}
	for i := 0; i < 2; i++ { // an activity retry writes it again
		if err := Record(ctx, st, sweep, "t-naive", res); err != nil {
			t.Fatal(err)
		}
	}
	// The same trace again (another sweep, say): from the store's cache.
	again, err := j.Score(ctx, naiveIn)
	if err != nil || !again.Cached || len(srv.Requests()) != 1 || again.Output != res.Output {
		t.Fatalf("cache: %+v, %v, %d requests", again, err, len(srv.Requests()))
	}

	// Review needed: the provider keeps failing, echoing the key.
	srv.Always(llmtest.Error(500).WithBody(`{"error":{"message":"upstream said ` + secret + `","type":"server_error"}}`))
	rev, err := j.Score(ctx, blockedIn)
	if err != nil || rev.Status != judge.ReviewNeeded || rev.Attempts != 3 {
		t.Fatalf("%+v, %v", rev, err)
	}
	if err := Record(ctx, st, sweep, "t-blocked", rev); err != nil {
		t.Fatal(err)
	}

	js, err := st.Judgements(ctx, sweep)
	if err != nil || len(js) != 1 || js[0].TrialID != "t-naive" || js[0].BackoffBehavior != 1 || js[0].JudgeModel != "judge-model" ||
		js[0].JudgePromptHash != j.PromptHash() || js[0].TraceHash != res.TraceHash || js[0].Attempts != 1 || js[0].Recommendation != judge.Review {
		t.Fatalf("judgements %+v, %v", js, err)
	}
	q, err := st.ReviewQueue(ctx, sweep)
	if err != nil || len(q) != 1 || q[0].TrialID != "t-blocked" || q[0].RawTrace != rev.Document || q[0].Attempts != 3 ||
		!strings.Contains(q[0].Reason, "HTTP 500") {
		t.Fatalf("review queue %+v, %v", q, err)
	}

	pairs, err := PairsFromStore(ctx, st, sweep)
	if err != nil || len(pairs) != 1 || pairs[0].TrialID != "t-naive" || pairs[0].Scores[judge.BackoffBehavior] != 1 {
		t.Fatalf("pairs %+v, %v", pairs, err)
	}
	got, _ := pairs[0].Verdict.Check(grade.CheckBackoffHonoured)
	want, _ := naive.Verdict.Check(grade.CheckBackoffHonoured)
	if got.Status != want.Status || got.Status == "" {
		t.Fatalf("verdict not read back: %+v, want %+v", got, want)
	}

	// No stored row anywhere carries the key.
	hash, _ := naiveIn.TraceHash()
	cached, found, err := st.CachedJudgement(ctx, record.JudgeCacheKey{Scenario: naiveIn.Scenario, TraceHash: hash, JudgeModel: "judge-model", JudgePromptHash: j.PromptHash()})
	if err != nil || !found {
		t.Fatalf("cache row: %v, %v", found, err)
	}
	for name, v := range map[string]any{"judgements": js, "review_queue": q, "judge_cache": cached} {
		if s := fmt.Sprintf("%+v", v); strings.Contains(s, secret) {
			t.Errorf("%s stores the key: %s", name, s)
		}
	}
	if !strings.Contains(js[0].RawOutput, "[REDACTED]") || !strings.Contains(q[0].Reason, "[REDACTED]") {
		t.Fatalf("echoed key not redacted: %q / %q", js[0].RawOutput, q[0].Reason)
	}
}

// outputJSON is a valid judge answer for the five scores (in Dimensions
// order): the mean as the aggregate, the recommendation the thresholds give.
func outputJSON(scores ...int) string {
	m := map[string]any{}
	sum := 0
	for i, d := range judge.Dimensions {
		m[string(d)] = map[string]any{"score": scores[i], "justification": fmt.Sprintf("%s scored %d: see calls 1-3.", d, scores[i])}
		sum += scores[i]
	}
	m["aggregate_score"] = float64(sum) / 5
	m["failure_mode_summary"] = "none"
	m["recommendation"] = judge.RecommendationFor(sum)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// realInput runs a real trial of a scripted agent on an example scenario
// and builds the judge's input from its failure artifact, as the
// activities do.
func realInput(t testing.TB, scenarioName, variant, agentName string) (judge.Input, *trial.Result) {
	t.Helper()
	sc, err := scenario.LoadScenario("../../../examples/scenarios/"+scenarioName+".yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := sc.Variant(variant)
	if !ok {
		t.Fatalf("no variant %s in %s", variant, scenarioName)
	}
	ag, err := agent.NewScripted(agentName)
	if err != nil {
		t.Fatal(err)
	}
	res, err := trial.Run(context.Background(), trial.Spec{SweepID: "judge-test", Scenario: sc, Variant: v,
		Arm: scenario.Arm{Name: agentName, Agent: agentName}, Seed: 1}, ag)
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(nil, []byte("judge-test-key"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.New(sc.World, sc.Initial)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	return judge.NewInput(sc, v, w.Tools(), judge.TraceFromArtifact(artifact.FromResult(res, sc, red))), res
}
