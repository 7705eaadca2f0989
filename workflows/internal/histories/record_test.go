package histories_test

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

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"rebound/activities"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/runner"
	"rebound/storage"
	"rebound/workflows"
	"rebound/workflows/internal/histories"
)

// EnvRecord names the set to record into workflows/testdata/histories/
// (`make histories` sets it). Unset, the test records into a temporary
// directory and only checks that recording and replaying still work.
const EnvRecord = "REBOUND_RECORD_HISTORIES"

// identity replaces the default client and worker identity (pid@host) in
// the recorded events.
const identity = "rebound-histories"

func TestMain(m *testing.M) { devstacktest.Main(m) }

// recording is what a case needs to run its sweep.
type recording struct {
	root  string // the repository root, absolute
	dir   string // a scratch directory for generated plans and prompts
	store storage.Store
	c     client.Client
}

// TestRecordHistories runs every case of histories.Cases as a real sweep
// (real worker wiring, real activities and chDB store) on a real Temporal
// dev server, checks that each history shows what its case is about,
// replays it against the current code, and, with REBOUND_RECORD_HISTORIES
// set, writes the set that workflows' replay test checks from then on.
func TestRecordHistories(t *testing.T) {
	set := os.Getenv(EnvRecord)
	if set != "" && !histories.ValidSetName(set) {
		t.Fatalf("%s=%q: a set name is letters, digits, '.', '_' and '-'", EnvRecord, set)
	}
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	store, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "histories"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	opts := srv.ClientOptions()
	opts.Identity = identity
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	opts, err = runner.SecureClientOptions(opts, []byte(histories.Key))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := &recording{root: root, dir: t.TempDir(), store: store, c: c}

	recorders := map[string]func(t *testing.T, ctx context.Context, r *recording) []*historypb.History{
		"quickstart-completed": recordQuickstart,
		"continued-as-new":     recordContinuedAsNew,
		"cancelled":            recordCancelled,
		"shard-retried":        recordShardRetried,
		"judge":                recordJudge,
		"agent-config-failed":  recordAgentConfigFailed,
		"all-attrition":        recordAllAttrition,
	}
	hostname, _ := os.Hostname()
	forbidden := []string{root, os.TempDir() + "/", rec.dir}
	if len(hostname) >= 4 {
		forbidden = append(forbidden, hostname)
	}
	files := map[string][]byte{}
	for _, cs := range histories.Cases {
		record, ok := recorders[cs.Name]
		if !ok {
			t.Errorf("case %s has no recorder", cs.Name)
			continue
		}
		t.Run(cs.Name, func(t *testing.T) {
			runs := record(t, ctx, rec)
			if t.Failed() {
				return
			}
			if err := cs.Check(runs); err != nil {
				t.Fatal(err)
			}
			for i, h := range runs {
				raw, err := histories.Marshal(h)
				if err != nil {
					t.Fatal(err)
				}
				name := histories.FileName(cs.Name, i+1)
				if err := histories.CheckPortable(raw, h, forbidden...); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// Replay what will be committed, decoded from the file's bytes.
				back, err := histories.Unmarshal(raw)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := histories.Replay(back); err != nil {
					t.Fatalf("%s does not replay against the code that recorded it: %v", name, err)
				}
				files[name] = raw
			}
		})
	}
	if t.Failed() {
		return
	}
	out := filepath.Join(t.TempDir(), "histories")
	if set != "" {
		out = filepath.Join(root, "workflows", "testdata", "histories", set)
	}
	writeSet(t, out, files)
	if _, err := histories.LoadSet(out); err != nil {
		t.Fatal(err)
	}
	if set != "" {
		t.Logf("recorded %d histories into %s", len(files), out)
	}
}

// writeSet replaces the history files of one set directory.
func writeSet(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for name, raw := range files {
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// worker starts a production worker (runner.NewWorker) with acts on its
// own task queue, stopped when the test ends.
func (r *recording) worker(t *testing.T, name string, acts *activities.Activities) string {
	t.Helper()
	acts.Store = r.store
	acts.RedactionKey = []byte(histories.Key)
	queue := "histories-" + name
	w, err := runner.NewWorker(r.c, queue, acts, runner.WorkerOptions{MaxConcurrentShards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return queue
}

// plan writes a tiny plan over one example scenario (and any extra files,
// like a prompt) into a scratch directory and loads it.
func (r *recording) plan(t *testing.T, name, arms string, extra map[string]string, more string) *scenario.Resolved {
	t.Helper()
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := fmt.Sprintf("name: histories-%s\nscenarios: [%s]\narms:\n%s\n%s\n", name,
		filepath.Join(r.root, "examples/scenarios/inventory-timeout-once.yaml"), arms, more)
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return r.load(t, path)
}

// load loads a plan and makes the file names it carries relative to the
// repository root, as they are when `rebound run` is started there: the
// resolved plan travels in the workflow's input, and a committed history
// must not name the recording machine's directories. A plan written to a
// scratch directory keeps no file name.
func (r *recording) load(t *testing.T, path string) *scenario.Resolved {
	t.Helper()
	p, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(abs string) string {
		if rel, err := filepath.Rel(r.root, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return ""
	}
	p.File = rel(p.File)
	for _, s := range p.Scenarios {
		if s.File = rel(s.File); s.File == "" {
			t.Fatalf("scenario %s is outside the repository", s.Name)
		}
	}
	return p
}

// start starts a sweep as runner.StartSweep does; perRun, when not 0, makes
// it continue as new after that many shards (a plan cannot ask for it).
func (r *recording) start(t *testing.T, ctx context.Context, queue string, plan *scenario.Resolved, perRun int) (client.WorkflowRun, string) {
	t.Helper()
	sweepID := runner.NewSweepID(plan.Name, time.Now())
	if perRun == 0 {
		run, err := runner.StartSweep(ctx, r.c, queue, sweepID, plan)
		if err != nil {
			t.Fatal(err)
		}
		return run, sweepID
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.SweepInput{
		SweepID: sweepID, PlanJSON: string(planJSON), Trials: plan.TrialCount(),
		ShardSize: plan.ShardSize, Concurrency: plan.Concurrency, Judge: plan.Judge != nil,
		ShardsPerRun: perRun,
	}
	run, err := r.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runner.WorkflowID(sweepID), TaskQueue: queue}, workflows.SweepWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	return run, sweepID
}

// histories fetches every run of a sweep, from its first run (named in
// every run's start event) along the continue-as-new chain.
func (r *recording) histories(t *testing.T, ctx context.Context, run client.WorkflowRun) []*historypb.History {
	t.Helper()
	last := r.history(t, ctx, run.GetID(), "")
	runID := last.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
	if runID == "" {
		t.Fatalf("%s: the start event names no first run", run.GetID())
	}
	var runs []*historypb.History
	for runID != "" {
		h := r.history(t, ctx, run.GetID(), runID)
		runs = append(runs, h)
		runID = h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
	}
	return runs
}

// history fetches one run's history (runID "" is the latest run).
func (r *recording) history(t *testing.T, ctx context.Context, workflowID, runID string) *historypb.History {
	t.Helper()
	it := r.c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	if len(h.Events) == 0 {
		t.Fatalf("%s run %q: empty history", workflowID, runID)
	}
	return h
}

func wantStatus(t *testing.T, ctx context.Context, run client.WorkflowRun, status string) {
	t.Helper()
	var p workflows.Progress
	err := run.Get(ctx, &p)
	switch status {
	case workflows.StatusCompleted:
		if err != nil || p.Status != status {
			t.Fatalf("sweep: %+v, %v; want %s", p, err, status)
		}
	case workflows.StatusCancelled:
		var canceled *temporal.CanceledError
		if !errors.As(err, &canceled) {
			t.Fatalf("sweep: %v; want cancelled", err)
		}
	case workflows.StatusFailed:
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrAgentConfig {
			t.Fatalf("sweep: %v; want a %s failure", err, workflows.ErrAgentConfig)
		}
	}
}

const carefulArm = "  - {name: careful, agent: careful}"

// The quickstart's 60 trials in shards of 10 (several shards, so the
// history holds a window of activities).
func recordQuickstart(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	queue := r.worker(t, "quickstart", &activities.Activities{})
	plan := r.load(t, filepath.Join(r.root, "examples/plans/quickstart.yaml"))
	plan.ShardSize, plan.ShardSizeAuto, plan.Concurrency, plan.ConcurrencyAuto = 10, false, 4, false
	run, _ := r.start(t, ctx, queue, plan, 0)
	wantStatus(t, ctx, run, workflows.StatusCompleted)
	return r.histories(t, ctx, run)
}

// Four shards, two per run: the second run carries the progress and no plan.
func recordContinuedAsNew(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	queue := r.worker(t, "continued", &activities.Activities{})
	plan := r.plan(t, "continued", carefulArm, nil, "seeds: [1, 2, 3, 4]\nshard_size: 1\nconcurrency: 2")
	run, _ := r.start(t, ctx, queue, plan, 2)
	wantStatus(t, ctx, run, workflows.StatusCompleted)
	return r.histories(t, ctx, run)
}

// Shard 0 completes; shards 1 and 2 hold in their activities until the
// sweep is cancelled; shard 3 is never scheduled.
func recordCancelled(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	var holding atomic.Int32
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	queue := r.worker(t, "cancelled", &activities.Activities{FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		if in.Shard == 0 {
			return nil
		}
		holding.Add(1)
		select {
		case <-release:
			return errors.New("released after the sweep was cancelled")
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	plan := r.plan(t, "cancelled", carefulArm, nil, "seeds: [1, 2, 3, 4]\nshard_size: 1\nconcurrency: 2")
	run, sweepID := r.start(t, ctx, queue, plan, 0)
	deadline := time.Now().Add(time.Minute)
	for holding.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("shards holding: %d, want 2", holding.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.c.CancelWorkflow(ctx, runner.WorkflowID(sweepID), ""); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ctx, run, workflows.StatusCancelled)
	close(release)
	return r.histories(t, ctx, run)
}

// The first attempt of shard 0 fails after writing its rows (a worker lost
// mid-shard); Temporal retries it after the policy's first backoff.
func recordShardRetried(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	var failed atomic.Int32
	queue := r.worker(t, "retried", &activities.Activities{FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		if in.Shard == 0 && activity.GetInfo(ctx).Attempt == 1 {
			failed.Add(1)
			return errors.New("injected: worker lost after writing shard 0")
		}
		return nil
	}})
	plan := r.plan(t, "retried", carefulArm, nil, "seeds: [1, 2, 3, 4]\nshard_size: 2\nconcurrency: 1")
	run, _ := r.start(t, ctx, queue, plan, 0)
	wantStatus(t, ctx, run, workflows.StatusCompleted)
	if failed.Load() != 1 {
		t.Fatalf("the injected failure fired %d times, want 1", failed.Load())
	}
	return r.histories(t, ctx, run)
}

// Two trials that meet a failure, then the judge phase over them; the judge
// is the local OpenAI-compatible test server.
func recordJudge(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	judgeModel := llmtest.New(t)
	dim := `{"score":4,"justification":"retried once after the timeout"}`
	judgeModel.Always(llmtest.Text(`{"error_detection":` + dim + `,"retry_decision":` + dim + `,"backoff_behavior":` + dim +
		`,"escalation_correctness":` + dim + `,"context_preservation":` + dim +
		`,"aggregate_score":4,"failure_mode_summary":"none","recommendation":"pass"}`))
	queue := r.worker(t, "judge", &activities.Activities{})
	plan := r.plan(t, "judge", carefulArm, nil, fmt.Sprintf("seeds: [1, 2]\nshard_size: 1\nconcurrency: 1\njudge: {base_url: %q, model: judge-model}", judgeModel.BaseURL()))
	run, _ := r.start(t, ctx, queue, plan, 0)
	wantStatus(t, ctx, run, workflows.StatusCompleted)
	var p workflows.Progress
	if err := run.Get(ctx, &p); err != nil || p.TrialsJudged != 2 {
		t.Fatalf("judged %d trials (%v), want 2", p.TrialsJudged, err)
	}
	return r.histories(t, ctx, run)
}

// An LLM arm whose endpoint answers 401: a configuration error, not
// retried, that fails the sweep.
func recordAgentConfigFailed(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	model := llmtest.New(t)
	model.Always(llmtest.Error(401))
	queue := r.worker(t, "failed", &activities.Activities{})
	arms := fmt.Sprintf("  - name: local-model\n    agent: llm\n    llm: {base_url: %q, model: test-model, prompt: prompt.md}", model.BaseURL())
	plan := r.plan(t, "failed", arms, map[string]string{"prompt.md": "Recover from tool failures carefully.\n"}, "seeds: [1, 2]\nshard_size: 1\nconcurrency: 1")
	run, _ := r.start(t, ctx, queue, plan, 0)
	wantStatus(t, ctx, run, workflows.StatusFailed)
	return r.histories(t, ctx, run)
}

// An LLM arm whose provider answers every request 429, asking to wait an
// hour (more than retry_max_wait): every trial is attrition, and the sweep
// fails.
func recordAllAttrition(t *testing.T, ctx context.Context, r *recording) []*historypb.History {
	model := llmtest.New(t)
	model.Always(llmtest.Error(429, "Retry-After", "3600"))
	queue := r.worker(t, "attrition", &activities.Activities{})
	arms := fmt.Sprintf("  - name: local-model\n    agent: llm\n    llm: {base_url: %q, model: test-model, prompt: prompt.md}", model.BaseURL())
	plan := r.plan(t, "attrition", arms, map[string]string{"prompt.md": "Recover from tool failures carefully.\n"}, "seeds: [1, 2]\nshard_size: 1\nconcurrency: 1")
	run, _ := r.start(t, ctx, queue, plan, 0)
	var p workflows.Progress
	var appErr *temporal.ApplicationError
	if err := run.Get(ctx, &p); !errors.As(err, &appErr) || appErr.Type() != workflows.ErrAllAttrition {
		t.Fatalf("sweep: %v; want a %s failure", err, workflows.ErrAllAttrition)
	}
	return r.histories(t, ctx, run)
}
