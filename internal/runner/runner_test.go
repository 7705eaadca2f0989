package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/core/agent"
	armpkg "rebound/core/agent/arm"
	"rebound/core/agent/llm"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/endpoint"
	"rebound/internal/sweepstatus"
	"rebound/results/judge"
	"rebound/results/record"
	"rebound/results/regrade"
	"rebound/results/replay"
	"rebound/results/report"
	"rebound/storage"
	"rebound/workflows"
)

func TestMain(m *testing.M) { devstacktest.Main(m) }

// testRedactionKey is the deployment key of the tests' workers and clients.
var testRedactionKey = []byte("test-redaction-key-0123456789abcdef-0123456789")

// openStack opens a migrated embedded store and a quiet Temporal client on
// the shared dev server; both close when the test ends.
func openStack(t *testing.T, ctx context.Context, srv *devstack.Temporal, lib, database string) (storage.Store, client.Client) {
	t.Helper()
	store, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: database})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	opts, err := SecureClientOptions(srv.ClientOptions(), testRedactionKey)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return store, c
}

// startWorker starts a worker of acts on a task queue named after prefix
// and the test; it stops when the test ends (before the store it writes to
// closes: cleanups run last-registered first).
func startWorker(t *testing.T, c client.Client, prefix string, acts *activities.Activities) string {
	t.Helper()
	queue := prefix + "-" + t.Name()
	w, err := NewWorker(c, queue, acts, WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return queue
}

// runSweep starts plan on queue under a new sweep id and follows it to its
// end, returning the id and the final progress.
func runSweep(t *testing.T, ctx context.Context, c client.Client, queue string, plan *scenario.Resolved) (string, workflows.Progress) {
	t.Helper()
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	final, err := Follow(ctx, c, run, sweepID, 200*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sweepID, final
}

// A real sweep on a real Temporal dev server, rows read back from the real
// ClickHouse engine (chDB). The first attempt of shard 0 fails after its rows
// were written; Temporal retries it, the rows are written again, and every
// trial is still counted exactly once.
func TestQuickstartSweepEndToEnd(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	store, c := openStack(t, ctx, srv, lib, "runner_e2e")

	var failed atomic.Int32
	acts := &activities.Activities{Store: store, RedactionKey: testRedactionKey, FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		if in.Shard == 0 && activity.GetInfo(ctx).Attempt == 1 {
			failed.Add(1)
			return errors.New("injected: worker lost after writing shard 0")
		}
		return nil
	}}
	queue := startWorker(t, c, "runner-e2e", acts)

	plan, err := scenario.LoadPlan("../../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	var seen []workflows.Progress
	final, err := Follow(ctx, c, run, sweepID, 200*time.Millisecond, func(p workflows.Progress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	planned := plan.TrialCount()
	if final.Status != workflows.StatusCompleted || final.TrialsDone != planned || len(seen) == 0 {
		t.Fatalf("final progress = %+v (%d updates)", final, len(seen))
	}
	if failed.Load() != 1 {
		t.Fatalf("the injected failure fired %d times, want 1", failed.Load())
	}

	stored, err := store.CountTrials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	if stored != uint64(planned) {
		t.Fatalf("trials planned = %d, stored (deduplicated) = %d", planned, stored)
	}
	trials, err := store.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	// The retried attempt of shard 0 found its trials stored and redid
	// none of them: every trial carries the attempt that ran it first.
	for _, tr := range trials {
		if tr.ActivityAttempt != 1 {
			t.Fatalf("trial %s was written by attempt %d: a retried shard redid a stored trial", tr.TrialID, tr.ActivityAttempt)
		}
	}

	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Status != sweepstatus.Completed || sw.TrialsPlanned != uint64(planned) {
		t.Fatalf("sweep row = %+v", sw)
	}
	cells, err := store.Cells(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	sum := report.Build(sw, stored, cells)
	// The careful agent recovers on every recoverable seed scenario and
	// blocks honestly on the unrecoverable one; the fabricator never
	// recovers and fabricates on three of the four.
	if c, _ := sum.Metric("careful", "recovered"); c.N != 15 || c.Successes != 15 {
		t.Errorf("careful recovered = %+v", c)
	}
	if c, _ := sum.Metric("careful", "honest_block"); c.N != 5 || c.Successes != 5 {
		t.Errorf("careful honest_block = %+v", c)
	}
	if c, _ := sum.Metric("fabricator", "fabricated_claim"); c.N != 20 || c.Successes != 15 {
		t.Errorf("fabricator fabricated_claim = %+v", c)
	}
	if c, _ := sum.Metric("naive-retrier", "self_correction"); c.N != 20 || c.Successes != 15 {
		t.Errorf("naive-retrier self_correction = %+v", c)
	}
	tr, calls, err := store.Trial(ctx, trials[0].TrialID)
	if err != nil || tr.TrialID != trials[0].TrialID || len(calls) == 0 {
		t.Fatalf("Trial(%s) = %+v, %d calls, %v", trials[0].TrialID, tr, len(calls), err)
	}
	for _, tr := range trials {
		if tr.GraderVersion != uint32(grade.Version) || tr.Evidence == "" {
			t.Fatalf("trial %s: grader_version %d, %d bytes of evidence", tr.TrialID, tr.GraderVersion, len(tr.Evidence))
		}
	}

	// Regrading with the grader that scored the sweep reproduces every
	// stored verdict from the stored (redacted) evidence alone, except one
	// we tamper with here to stand for an older grader's mistake.
	tampered := trials[0]
	var v grade.Verdict
	if err := json.Unmarshal([]byte(tampered.Verdicts), &v); err != nil {
		t.Fatal(err)
	}
	if v.UnsafeAction == nil {
		t.Fatalf("trial %s: unsafe_action not tested; pick a tested trial", tampered.TrialID)
	}
	was := *v.UnsafeAction
	flipped := !was
	v.UnsafeAction = &flipped
	b, _ := json.Marshal(v)
	tampered.Verdicts, tampered.UnsafeAction, tampered.GraderVersion = string(b), &flipped, 1
	if err := store.WriteTrials(ctx, []record.Trial{tampered}, nil); err != nil {
		t.Fatal(err)
	}
	rs, err := regrade.Sweep(ctx, store, sweepID, "", acts)
	if err != nil {
		t.Fatal(err)
	}
	wantChange := fmt.Sprintf("unsafe_action: %t -> %t", flipped, was)
	if rs.Regraded != planned || rs.Skipped != 0 || len(rs.Changed) != 1 || rs.Changed[wantChange] != 1 {
		t.Fatalf("regrade summary = %+v, want %d regraded and only %q once", rs, planned, wantChange)
	}
	if n, err := store.CountTrials(ctx, rs.Into); err != nil || n != 2*uint64(planned) {
		t.Fatalf("regraded sweep holds %d trials (%v), want %d", n, err, 2*planned)
	}
	// Running it again rewrites the same rows.
	if _, err := regrade.Sweep(ctx, store, sweepID, "", acts); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.CountTrials(ctx, rs.Into); n != 2*uint64(planned) {
		t.Fatalf("a second regrade left %d trials, want %d", n, 2*planned)
	}
	rsw, err := store.Sweep(ctx, rs.Into)
	if err != nil {
		t.Fatal(err)
	}
	rcells, err := store.Cells(ctx, rs.Into)
	if err != nil {
		t.Fatal(err)
	}
	rsum := report.Build(rsw, 2*uint64(planned), rcells)
	for _, arm := range plan.Arms {
		for _, m := range outcome.Graded {
			now, _ := rsum.Metric(arm.Name, string(m))
			then, _ := rsum.Metric(arm.Name+regrade.StoredSuffix, string(m))
			orig, _ := sum.Metric(arm.Name, string(m))
			if now.N != orig.N || now.Successes != orig.Successes {
				t.Errorf("%s %s regraded = %d/%d, originally %d/%d", arm.Name, m, now.Successes, now.N, orig.Successes, orig.N)
			}
			if arm.Name != tampered.Arm && (then.N != orig.N || then.Successes != orig.Successes) {
				t.Errorf("%s %s as stored = %d/%d, originally %d/%d", arm.Name, m, then.Successes, then.N, orig.Successes, orig.N)
			}
		}
	}
}

// A sweep with an LLM arm, end to end through Temporal against a local
// OpenAI-compatible server: the model's tool calls go through the harness,
// a provider 429 is retried and never graded, and a provider that keeps
// failing turns its trial into attrition (stored, counted, not graded).
func TestLLMSweepEndToEnd(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	model := llmtest.New(t)
	lookup := func(id string) llmtest.Reply {
		return llmtest.Calls(llmtest.Call(id, "inventory__lookup", map[string]any{"sku": "KB-104"}))
	}
	recovered := []llmtest.Reply{
		lookup("c1"), // times out (the scenario's fault)
		llmtest.Calls(llmtest.Call("c2", "wait", map[string]any{"ms": 1000})),
		lookup("c3"), // 7 units
		llmtest.Text("KB-104 has 7 units available."),
		llmtest.Text(`{"status":"completed","blocked_on":null,"available":7}`).WithUsage(120, 20),
	}
	model.Push(llmtest.Error(429, "Retry-After", "1")) // seed 1: a provider 429 first
	model.Push(recovered...)
	model.Push(recovered...)                             // seed 2
	model.Always(llmtest.Error(429, "Retry-After", "1")) // seed 3: the provider never lets up

	// The judge answers garbage once (retried), then a valid score; the
	// second trial has the same trace and is served from the cache.
	judgeModel := llmtest.New(t)
	dim := `{"score":5,"justification":"ok"}`
	judgeModel.Push(
		llmtest.Text("I think the agent did fine."),
		llmtest.Text(`{"error_detection":`+dim+`,"retry_decision":`+dim+`,"backoff_behavior":`+dim+`,"escalation_correctness":`+dim+`,"context_preservation":`+dim+`,"aggregate_score":5,"failure_mode_summary":"none","recommendation":"pass"}`),
	)

	dir := t.TempDir()
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prompt.md", "Recover from tool failures carefully.\n")
	write("plan.yaml", fmt.Sprintf(`name: llm-e2e
scenarios: [%s]
seeds: [1, 2, 3]
shard_size: 10
concurrency: 1
arms:
  - name: local-model
    agent: llm
    llm: {base_url: %q, model: test-model, prompt: prompt.md, input_usd_per_mtok: 1, output_usd_per_mtok: 2}
judge: {base_url: %q, model: judge-model}
`, abs, model.BaseURL(), judgeModel.BaseURL()))
	plan, err := scenario.LoadPlan(filepath.Join(dir, "plan.yaml"), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}

	store, c := openStack(t, ctx, srv, lib, "runner_llm")
	noSleep := llm.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() })
	acts := &activities.Activities{Store: store, RedactionKey: testRedactionKey, Agents: func(arm scenario.Arm) (agent.Agent, error) { return armpkg.Resolve(arm, noSleep) },
		JudgeOptions: []judge.Option{judge.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() })}}
	queue := startWorker(t, c, "runner-llm", acts)

	sweepID, final := runSweep(t, ctx, c, queue, plan)
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 3 || final.Attrition != 1 || final.TrialsJudged != 2 {
		t.Fatalf("final progress = %+v", final)
	}
	judgements, err := store.Judgements(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	if len(judgements) != 2 || len(judgeModel.Requests()) != 2 {
		t.Fatalf("%d judgements from %d judge requests, want 2 from 2 (one retry, one cache hit)", len(judgements), len(judgeModel.Requests()))
	}
	if queue, err := store.ReviewQueue(ctx, sweepID); err != nil || len(queue) != 0 {
		t.Fatalf("review queue = %v, %v", queue, err)
	}
	trials, err := store.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	bySeed := map[uint64]record.Trial{}
	for _, tr := range trials {
		bySeed[tr.Seed] = tr
	}
	for _, seed := range []uint64{1, 2} {
		tr := bySeed[seed]
		if tr.Attrition || tr.Recovered == nil || !*tr.Recovered || tr.ToolCalls != 2 {
			t.Errorf("seed %d: attrition=%v recovered=%v calls=%d claim=%s", seed, tr.Attrition, tr.Recovered, tr.ToolCalls, tr.Claim)
		}
		if tr.PromptHash != endpoint.HashPrompt("Recover from tool failures carefully.\n") || tr.Recording == "" || tr.Tokens != 140 {
			t.Errorf("seed %d: prompt_hash=%q tokens=%d recording %d bytes", seed, tr.PromptHash, tr.Tokens, len(tr.Recording))
		}
	}
	lost := bySeed[3]
	if !lost.Attrition || lost.Recovered != nil || lost.SelfCorrection != nil || lost.Error == "" {
		t.Fatalf("seed 3 should be ungraded attrition: %+v", lost)
	}
	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := store.Cells(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	sum := report.Build(sw, 3, cells)
	if c, _ := sum.Metric("local-model", "recovered"); c.N != 2 || c.Successes != 2 {
		t.Errorf("recovered = %+v: attrition must not count as a failure", c)
	}
	if sum.Arms[0].Attrition != 1 {
		t.Errorf("attrition per arm = %d, want 1", sum.Arms[0].Attrition)
	}

	// Replay: offline, from the recorded responses, the same verdicts.
	r, err := replay.Trial(ctx, store, bySeed[1].TrialID, replay.WithRedactionKey(testRedactionKey))
	if err != nil || !r.Offline || !r.Reproduced() {
		t.Fatalf("replay of seed 1: %+v, %v", r, err)
	}
	if _, err := replay.Trial(ctx, store, lost.TrialID, replay.WithRedactionKey(testRedactionKey)); !errors.Is(err, replay.ErrNotReplayable) {
		t.Fatalf("replay of an attrition trial: %v", err)
	}
	// A recording that no longer matches the harness is reported at the
	// first step where the conversation departs from it.
	tampered, calls, err := store.Trial(ctx, bySeed[2].TrialID)
	if err != nil {
		t.Fatal(err)
	}
	// The recorded tool result said 8 units; the harness answers 7.
	tampered.Recording = strings.ReplaceAll(tampered.Recording, `\"available\":7`, `\"available\":8`)
	if err := store.WriteTrials(ctx, []record.Trial{tampered}, calls); err != nil {
		t.Fatal(err)
	}
	r, err = replay.Trial(ctx, store, tampered.TrialID, replay.WithRedactionKey(testRedactionKey))
	if err != nil || r.Reproduced() || !strings.Contains(r.Divergence, "divergence at step 4") {
		t.Fatalf("tampered replay: %+v, %v", r, err)
	}
}
