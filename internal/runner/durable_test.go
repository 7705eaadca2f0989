package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/endpoint"
	"rebound/storage"
	"rebound/workflows"
)

// countingAgent runs the careful reference agent, counts its runs, can
// fail one run and can be slow.
type countingAgent struct {
	agent.Agent
	runs  *atomic.Int32
	fail  func(n int32) error
	delay time.Duration
}

func (c countingAgent) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	n := c.runs.Add(1)
	if c.fail != nil {
		if err := c.fail(n); err != nil {
			return agent.Outcome{}, err
		}
	}
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return agent.Outcome{}, ctx.Err()
		}
	}
	return c.Agent.Run(ctx, env, task)
}

func carefulCounting(runs *atomic.Int32, fail func(int32) error, delay time.Duration) activities.AgentResolver {
	return func(arm scenario.Arm) (agent.Agent, error) {
		ag, err := agent.NewScripted("careful")
		return countingAgent{Agent: ag, runs: runs, fail: fail, delay: delay}, err
	}
}

// storedTrialsSpy records the trial ids each StoredTrials call asked for.
type storedTrialsSpy struct {
	storage.Store
	mu    sync.Mutex
	asked [][]string
}

func (s *storedTrialsSpy) StoredTrials(ctx context.Context, sweepID string, keys []storage.TrialKey) ([]storage.StoredTrial, error) {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.TrialID
	}
	s.mu.Lock()
	s.asked = append(s.asked, ids)
	s.mu.Unlock()
	return s.Store.StoredTrials(ctx, sweepID, keys)
}

func durablePlan(t *testing.T, name, extra string) *scenario.Resolved {
	t.Helper()
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	body := fmt.Sprintf("name: %s\nscenarios: [%s]\narms:\n  - {name: careful, agent: careful}\n%s\n", name, abs, extra)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// A shard that fails mid-way is retried from its checkpoint: the finished
// trials were stored when the attempt failed, the retry starts after them
// (it does not even ask storage about them: the heartbeat details say they
// are stored), and no finished trial runs twice.
func TestRetriedShardResumesFromCheckpoint(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_checkpoint")
	spy := &storedTrialsSpy{Store: store}

	var runs atomic.Int32
	fail := func(n int32) error {
		if n == 4 {
			return errors.New("injected: the worker lost trial 4 of the shard")
		}
		return nil
	}
	acts := &activities.Activities{RedactionKey: testRedactionKey, Store: spy, Agents: carefulCounting(&runs, fail, 0)}
	queue := startWorker(t, c, "runner-checkpoint", acts)

	plan := durablePlan(t, "checkpoint", "seeds: 8\nshard_size: 8\nconcurrency: 1")
	sweepID, final := runSweep(t, ctx, c, queue, plan)
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 8 {
		t.Fatalf("final = %+v", final)
	}
	if got := runs.Load(); got != 9 {
		t.Fatalf("the agent ran %d times for 8 trials and one failure, want 9: a finished trial ran again", got)
	}
	if n, err := store.CountTrials(ctx, sweepID); err != nil || n != 8 {
		t.Fatalf("stored %d trials (%v), want 8", n, err)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.asked) != 2 || len(spy.asked[0]) != 8 || len(spy.asked[1]) != 5 {
		sizes := []int{}
		for _, a := range spy.asked {
			sizes = append(sizes, len(a))
		}
		t.Fatalf("StoredTrials asked about %v trials per attempt, want [8 5]: the retry must start at its heartbeat checkpoint (trial 4)", sizes)
	}
}

// A worker that stops gracefully hands its shard back at once, without
// waiting for its stop timeout or the heartbeat timeout: the shard keeps
// what it finished and another worker carries on, running no finished
// trial again.
func TestGracefulStopHandsShardBack(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_handback")

	var runsA, runsB atomic.Int32
	const trialTime = 300 * time.Millisecond
	queue := "runner-handback-" + t.Name()
	first := &activities.Activities{RedactionKey: testRedactionKey, Store: store, Agents: carefulCounting(&runsA, nil, trialTime)}
	wa, err := NewWorker(c, queue, first, WorkerOptions{StopTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := wa.Start(); err != nil {
		t.Fatal(err)
	}
	plan := durablePlan(t, "handback", "seeds: 20\nshard_size: 20\nconcurrency: 1")
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	for runsA.Load() < 4 {
		if ctx.Err() != nil {
			t.Fatal("the shard never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := &activities.Activities{RedactionKey: testRedactionKey, Store: store, Agents: carefulCounting(&runsB, nil, trialTime)}
	wb, err := NewWorker(c, queue, second, WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.Start(); err != nil {
		t.Fatal(err)
	}
	defer wb.Stop()
	stopped := time.Now()
	wa.Stop()
	if err := first.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(stopped); d > 3*trialTime {
		t.Fatalf("the stopping worker held its shard for %s (stop timeout 30s): it was not handed back", d)
	}
	final, err := Follow(ctx, c, run, sweepID, 200*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 20 {
		t.Fatalf("final = %+v", final)
	}
	if a, b := runsA.Load(), runsB.Load(); a+b > 21 || b < 10 || time.Since(stopped) > workflows.HeartbeatTimeout {
		t.Fatalf("worker A ran %d trials, worker B %d, done %s after the stop: want the rest on B, none twice, before the heartbeat timeout", a, b, time.Since(stopped))
	}
	if n, _ := store.CountTrials(ctx, sweepID); n != 20 {
		t.Fatalf("stored %d trials, want 20", n)
	}
}

// sweep status reads the failing attempts from Temporal: a shard whose
// writes fail (a disk full) shows its attempt and last error while the
// sweep keeps running.
func TestDescribeSweepShowsFailingAttempts(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_failing")
	release := make(chan struct{})
	acts := &activities.Activities{RedactionKey: testRedactionKey, Store: store, FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		select {
		case <-release:
			return nil
		default:
			return fmt.Errorf("code: 243, NOT_ENOUGH_SPACE: cannot reserve 1.00 MiB (injected, attempt %d)", activity.GetInfo(ctx).Attempt)
		}
	}}
	queue := startWorker(t, c, "runner-failing", acts)
	plan := durablePlan(t, "failing", "seeds: 2\nshard_size: 2\nconcurrency: 1")
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	var st SweepState
	for {
		if st, err = DescribeSweep(ctx, c, testRedactionKey, sweepID); err != nil {
			t.Fatal(err)
		}
		if f := st.Failing(); len(f) == 1 && f[0].Attempt >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no failing attempt shown: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f := st.Failing()[0]
	if !st.Running() || st.Pollers == 0 || st.TaskQueue != queue || f.Activity != workflows.RunShardActivity ||
		!strings.Contains(f.LastError, "NOT_ENOUGH_SPACE") || f.MaxAttempts != 10 {
		t.Fatalf("state = %+v, failing = %+v", st, f)
	}
	close(release)
	final, err := Follow(ctx, c, run, sweepID, 200*time.Millisecond, nil)
	if err != nil || final.Status != workflows.StatusCompleted {
		t.Fatalf("final = %+v, %v", final, err)
	}
	if st, err = DescribeSweep(ctx, c, testRedactionKey, sweepID); err != nil || st.Running() || len(st.Pending) != 0 {
		t.Fatalf("after completion: %+v, %v", st, err)
	}
}

// Workers of one task queue split each provider's limits: every worker
// reads how many workers poll the queue and paces at 1/W.
func TestWorkersShareProviderLimits(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_share")
	queue := "runner-share-" + t.Name()
	// Two processes: two client identities (workers of one process share
	// its limiter, so they count once).
	opts, err := SecureClientOptions(srv.ClientOptions(), testRedactionKey)
	if err != nil {
		t.Fatal(err)
	}
	opts.Identity = "share-test-second-process"
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c2, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for _, cl := range []client.Client{c, c2} {
		w, err := NewWorker(cl, queue, &activities.Activities{RedactionKey: testRedactionKey, Store: store}, WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	defer endpoint.SetShare(1)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go ShareProviderLimits(sctx, c, queue, 100*time.Millisecond)
	for endpoint.Share() != 0.5 {
		if ctx.Err() != nil {
			t.Fatalf("share = %v, want 1/2 with two workers polling %s", endpoint.Share(), queue)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
