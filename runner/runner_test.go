package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/devstack/devstacktest"
	"rebound/report"
	"rebound/scenario"
	"rebound/storage"
	"rebound/workflows"
)

func TestMain(m *testing.M) { devstacktest.Main(m) }

// A real sweep on a real Temporal dev server, rows read back from the real
// ClickHouse engine (chDB). The first attempt of shard 0 fails after its rows
// were written; Temporal retries it, the rows are written again, and every
// trial is still counted exactly once.
func TestQuickstartSweepEndToEnd(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	store, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "runner_e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	opts := srv.ClientOptions()
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var failed atomic.Int32
	acts := &activities.Activities{Store: store, FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		if in.Shard == 0 && activity.GetInfo(ctx).Attempt == 1 {
			failed.Add(1)
			return errors.New("injected: worker lost after writing shard 0")
		}
		return nil
	}}
	queue := "runner-e2e-" + t.Name()
	w, err := NewWorker(c, queue, acts, WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	plan, err := scenario.LoadPlan("../examples/plans/quickstart.yaml")
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
	retried := 0
	for _, tr := range trials {
		if tr.ActivityAttempt == 2 {
			retried++
		}
	}
	if retried != plan.ShardSize {
		t.Fatalf("%d trials carry the retried attempt, want the %d of shard 0", retried, plan.ShardSize)
	}

	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Status != storage.SweepCompleted || sw.TrialsPlanned != uint64(planned) {
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
}
