package runner

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rebound/activities"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	"rebound/storage/chdb"
	"rebound/workflows"
)

// fullStore is the real store whose disk fills on demand: while full is
// set, every read and write fails as the engine fails on a full disk.
type fullStore struct {
	storage.Store
	full atomic.Bool
}

func (s *fullStore) refuse() error {
	if s.full.Load() {
		return &chdb.QueryError{Code: 243, Message: "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE) (injected)"}
	}
	return nil
}

func (s *fullStore) WriteTrials(ctx context.Context, t []record.Trial, c []record.ToolCall) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.Store.WriteTrials(ctx, t, c)
}

func (s *fullStore) StoredTrials(ctx context.Context, sweepID string, keys []storage.TrialKey) ([]storage.StoredTrial, error) {
	if err := s.refuse(); err != nil {
		return nil, err
	}
	return s.Store.StoredTrials(ctx, sweepID, keys)
}

func (s *fullStore) PutSweep(ctx context.Context, sw record.Sweep) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.Store.PutSweep(ctx, sw)
}

func (s *fullStore) Sweep(ctx context.Context, id string) (record.Sweep, error) {
	if err := s.refuse(); err != nil {
		return record.Sweep{}, err
	}
	return s.Store.Sweep(ctx, id)
}

// A full disk makes shards wait, not fail: while the store refuses every
// write, the running shard stays on its first attempt and says why in
// sweep status; once space is back the sweep completes with every trial
// written by a first attempt. Without waiting, the shard's attempts would
// be retried (and spent) every 1, 2, 4, 8 s.
func TestFullStoreMakesShardsWait(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	real, c := openStack(t, ctx, srv, lib, "runner_storewait")
	store := &fullStore{Store: real}
	var runs atomic.Int32
	acts := &activities.Activities{RedactionKey: testRedactionKey, Store: store, Agents: carefulCounting(&runs, nil, 300*time.Millisecond),
		StoreWait: 2 * time.Minute, StoreBackoff: 500 * time.Millisecond}
	queue := startWorker(t, c, "runner-storewait", acts)
	plan := durablePlan(t, "storewait", "seeds: 6\nshard_size: 2\nconcurrency: 1")
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	for n := uint64(0); n < 2; n, _ = real.CountTrials(ctx, sweepID) {
		if ctx.Err() != nil {
			t.Fatal("no shard was stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	store.full.Store(true)
	filled := time.Now()
	sawWaiting := false
	for time.Since(filled) < 12*time.Second {
		st, err := DescribeSweep(ctx, c, testRedactionKey, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Pending {
			if p.Attempt > 1 {
				t.Fatalf("%s %s is on attempt %d %s after the disk filled: it spent an attempt instead of waiting (last error %q)", p.Activity, p.ActivityID, p.Attempt, time.Since(filled).Round(time.Second), p.LastError)
			}
		}
		if w := st.WaitingForStore(); len(w) > 0 && !sawWaiting {
			sawWaiting = true
			if !strings.Contains(w[0].Waiting, "waiting for the store since") || !strings.Contains(w[0].Waiting, "NOT_ENOUGH_SPACE") ||
				!strings.Contains(st.Summary(), "shard(s) waiting for the store") {
				t.Errorf("waiting shard = %+v; summary %q", w[0], st.Summary())
			}
			t.Logf("after %s: %s", time.Since(filled).Round(time.Second), st.Summary())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !sawWaiting {
		t.Fatal("sweep status never showed a shard waiting for the store")
	}
	store.full.Store(false)
	final, err := Follow(ctx, c, run, sweepID, 200*time.Millisecond, nil)
	if err != nil || final.Status != workflows.StatusCompleted || final.TrialsDone != 6 {
		t.Fatalf("final = %+v, %v", final, err)
	}
	tab, err := real.Query(ctx, fmt.Sprintf("SELECT count(), max(activity_attempt) FROM runner_storewait.trials FINAL WHERE sweep_id = '%s'", sweepID))
	if err != nil || len(tab.Rows) != 1 || fmt.Sprint(tab.Rows[0]...) != "61" {
		t.Errorf("stored (trials, highest attempt) = %v, %v; want 6 trials, all by a first attempt", tab.Rows, err)
	}
	if got := runs.Load(); got != 6 {
		t.Errorf("the agent ran %d times for 6 trials: a trial ran again", got)
	}
	if sw, err := real.Sweep(ctx, sweepID); err != nil || sw.Status != sweepstatus.Completed {
		t.Errorf("stored sweep: %+v, %v", sw, err)
	}
}

// The final status waits for the store too, so the stored status ends as
// the workflow's does.
func TestFinishSweepWaitsForTheStore(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	// No deadline: an activity's is its attempt's, which the wait keeps
	// clear of.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Minute, cancel)
	defer stop.Stop()
	real, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "runner_finishwait"})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	if err := real.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := real.PutSweep(ctx, record.Sweep{SweepID: "s", Name: "p", Status: sweepstatus.Running}); err != nil {
		t.Fatal(err)
	}
	store := &fullStore{Store: real}
	store.full.Store(true)
	acts := &activities.Activities{RedactionKey: testRedactionKey, Store: store, StoreWait: time.Minute, StoreBackoff: 200 * time.Millisecond}
	time.AfterFunc(2*time.Second, func() { store.full.Store(false) })
	start := time.Now()
	if err := acts.FinishSweep(ctx, workflows.FinishSweepInput{SweepID: "s", Status: sweepstatus.Completed}); err != nil {
		t.Fatalf("FinishSweep under a full disk: %v", err)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Errorf("FinishSweep returned after %s, before the disk had space", waited)
	}
	if sw, err := real.Sweep(ctx, "s"); err != nil || sw.Status != sweepstatus.Completed {
		t.Errorf("stored: %+v, %v", sw, err)
	}
	// Past the limit, the error is returned.
	store.full.Store(true)
	acts.StoreWait = time.Second
	if err := acts.FinishSweep(ctx, workflows.FinishSweepInput{SweepID: "s", Status: sweepstatus.Failed}); err == nil || !strings.Contains(err.Error(), "the limit (--store-wait)") {
		t.Errorf("past the limit: %v", err)
	}
}
