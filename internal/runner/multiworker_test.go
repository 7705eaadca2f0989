package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/internal/devstack/devstacktest"
	"rebound/workflows"
)

// The recipe for scaling out on one Temporal cluster (README, "Scaling
// out"): start more workers on the same task queue against the same store;
// Temporal hands each shard to one of them. Two workers with their own
// client identities (as two processes would have) share one sweep: both run
// shards, every trial runs once in all, and every trial is stored exactly
// once (raw rows, not only after FINAL).
func TestTwoWorkersShareOneSweep(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_two_workers")
	queue := "runner-two-workers-" + t.Name()

	opts, err := SecureClientOptions(srv.ClientOptions(), testRedactionKey)
	if err != nil {
		t.Fatal(err)
	}
	opts.Identity = "two-workers-second-process"
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c2, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	// Each worker runs one shard at a time and a trial takes a few ms, so
	// neither can drain the queue before the other polls.
	var runs [2]atomic.Int32
	for i, cl := range []client.Client{c, c2} {
		acts := &activities.Activities{RedactionKey: testRedactionKey, Store: store, Agents: carefulCounting(&runs[i], nil, 5*time.Millisecond)}
		w, err := NewWorker(cl, queue, acts, WorkerOptions{MaxConcurrentShards: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}

	plan := durablePlan(t, "two-workers", "seeds: 60\nshard_size: 3\nconcurrency: 4")
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	final, err := Follow(ctx, c, run, sweepID, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	planned := plan.TrialCount()
	if final.Status != workflows.StatusCompleted || final.TrialsDone != planned {
		t.Fatalf("final progress = %+v, want %d trials completed", final, planned)
	}
	a, b := runs[0].Load(), runs[1].Load()
	if a == 0 || b == 0 {
		t.Fatalf("trials run per worker = %d, %d: one worker did all the work", a, b)
	}
	if int(a+b) != planned {
		t.Fatalf("trials run = %d + %d, want %d in all: a trial ran twice or not at all", a, b, planned)
	}
	distinct, err := store.CountTrials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := store.Query(ctx, fmt.Sprintf("SELECT count() AS rows, uniqExact(trial_id) AS ids FROM runner_two_workers.trials WHERE sweep_id = '%s'", sweepID))
	if err != nil {
		t.Fatal(err)
	}
	if distinct != uint64(planned) || len(raw.Rows) != 1 || fmt.Sprint(raw.Rows[0]) != fmt.Sprintf("[%d %d]", planned, planned) {
		t.Fatalf("stored: %d distinct trials, raw (rows, ids) = %v; want %d of each", distinct, raw.Rows, planned)
	}
	t.Logf("%d trials: worker 1 ran %d, worker 2 ran %d", planned, a, b)
}
