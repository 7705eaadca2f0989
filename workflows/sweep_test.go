package workflows

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// fakeStore is an in-memory stand-in for the activities, recording what the
// workflow asked for; the real activities run in the integration test.
type fakeStore struct {
	mu        sync.Mutex
	shards    map[int]ShardInput
	status    string
	failShard int
	calls     int
	// allAttrition makes every trial of a shard attrition.
	allAttrition bool
	// costPerTrial is the model spend each trial of a shard reports.
	costPerTrial float64
	judged       []ShardInput
}

func (f *fakeStore) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(ctx context.Context, in RegisterSweepInput) error { return nil }, activity.RegisterOptions{Name: RegisterSweepActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, in ShardInput) (ShardResult, error) {
		f.mu.Lock()
		f.calls++
		f.mu.Unlock()
		if f.failShard >= 0 && in.Shard == f.failShard {
			return ShardResult{}, temporal.NewNonRetryableApplicationError("bad plan", ErrInvalidPlan, nil)
		}
		f.mu.Lock()
		f.shards[in.Shard] = in
		all, cost := f.allAttrition, f.costPerTrial*float64(in.To-in.From)
		f.mu.Unlock()
		if all {
			return ShardResult{Trials: in.To - in.From, Attrition: in.To - in.From, CostUSD: cost}, nil
		}
		return ShardResult{Trials: in.To - in.From, Attrition: 1, CostUSD: cost}, nil
	}, activity.RegisterOptions{Name: RunShardActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, in ShardInput) (ShardResult, error) {
		f.mu.Lock()
		f.judged = append(f.judged, in)
		f.mu.Unlock()
		return ShardResult{Trials: in.To - in.From - 1}, nil
	}, activity.RegisterOptions{Name: JudgeShardActivity})
	env.RegisterActivityWithOptions(func(ctx context.Context, in FinishSweepInput) error {
		f.mu.Lock()
		f.status = in.Status
		f.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: FinishSweepActivity})
}

func newFake() *fakeStore { return &fakeStore{shards: map[int]ShardInput{}, failShard: -1} }

func TestSweepCoversEveryTrialOnce(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", PlanJSON: "{}", Trials: 103, ShardSize: 10, Concurrency: 3})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var p Progress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if p.TrialsDone != 103 || p.ShardsDone != 11 || p.ShardsTotal != 11 || p.Attrition != 11 || p.Status != StatusCompleted {
		t.Fatalf("progress = %+v", p)
	}
	covered := make([]bool, 103)
	for _, in := range f.shards {
		for i := in.From; i < in.To; i++ {
			if covered[i] {
				t.Fatalf("trial %d in two shards", i)
			}
			covered[i] = true
		}
	}
	for i, c := range covered {
		if !c {
			t.Fatalf("trial %d never scheduled", i)
		}
	}
	if f.status != StatusCompleted {
		t.Fatalf("final status = %q", f.status)
	}
}

// A sweep continues as new after ShardsPerRun shards, carrying its progress
// and the next shard; the plan is not carried again.
func TestSweepContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", PlanJSON: "{}", Trials: 50, ShardSize: 10, Concurrency: 2, ShardsPerRun: 2})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var next SweepInput
	if err := converterDecode(can, &next); err != nil {
		t.Fatal(err)
	}
	if next.NextShard != 2 || next.PlanJSON != "" || next.Progress.TrialsDone != 20 || next.Progress.Runs != 1 {
		t.Fatalf("continued input = %+v", next)
	}
}

func TestSweepStopsOnPermanentError(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.failShard = 1
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", Trials: 100, ShardSize: 10, Concurrency: 1})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrInvalidPlan {
		t.Fatalf("error = %v", err)
	}
	if f.status != StatusFailed {
		t.Fatalf("status = %q", f.status)
	}
	// Non-retryable: shard 1 ran once, and nothing after it was scheduled.
	if f.calls != 2 {
		t.Fatalf("RunShard ran %d times, want 2", f.calls)
	}
}

func TestSweepProgressQuery(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", Trials: 30, ShardSize: 10, Concurrency: 2})
	v, err := env.QueryWorkflow(ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p Progress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	if p.TrialsPlanned != 30 || p.TrialsDone != 30 || p.Status != StatusCompleted {
		t.Fatalf("progress = %+v", p)
	}
}

func TestSweepRejectsInvalidInput(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	newFake().register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", Trials: 10, ShardSize: 0, Concurrency: 1})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrInvalidPlan {
		t.Fatalf("error = %v", err)
	}
}

func converterDecode(can *workflow.ContinueAsNewError, into *SweepInput) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, into)
}

// With a judge, every shard is judged once all trials are stored, before the
// sweep completes.
func TestSweepJudgePhase(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", Trials: 25, ShardSize: 10, Concurrency: 2, Judge: true})
	var p Progress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if p.TrialsDone != 25 || p.TrialsJudged != 22 || p.Phase != PhaseJudge || p.Status != StatusCompleted || len(f.judged) != 3 {
		t.Fatalf("progress = %+v, judged shards = %d", p, len(f.judged))
	}
	if len(f.shards) != 3 {
		t.Fatalf("trial shards = %d", len(f.shards))
	}
}

// A sweep whose every trial was lost to attrition measured nothing: it
// fails (status failed, non-zero exit) instead of completing; one with a
// single graded trial completes.
func TestSweepWithOnlyAttritionFails(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.allAttrition = true
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", PlanJSON: "{}", Trials: 20, ShardSize: 10, Concurrency: 2})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrAllAttrition {
		t.Fatalf("error = %v, want %s", err, ErrAllAttrition)
	}
	if f.status != StatusFailed || len(f.shards) != 2 {
		t.Fatalf("status %q after %d shards", f.status, len(f.shards))
	}

	env = s.NewTestWorkflowEnvironment()
	f = newFake() // one attrition per shard
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", PlanJSON: "{}", Trials: 20, ShardSize: 10, Concurrency: 2})
	if err := env.GetWorkflowError(); err != nil || f.status != StatusCompleted {
		t.Fatalf("a sweep with graded trials: %v, status %q", err, f.status)
	}
}

// A sweep whose recorded spend reaches max_usd schedules no more shards,
// lets the ones in flight finish, skips the judge, and ends with
// StatusMaxUSD, saying why; without a cap (or under it) nothing changes.
func TestSweepStopsAtMaxUSD(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxUSD      float64
		wantStatus  string
		wantShards  int
		wantSpent   float64
		wantStopped bool
	}{
		// 10 trials a shard at $0.10 = $1 a shard, 3 in flight. Shards
		// finish one by one: after shard 0 ($1) shard 3 starts, after
		// shard 1 ($2) shard 4; shard 2 brings $3 >= $2.5, so nothing else
		// starts, and shards 3 and 4, in flight, finish: $5, 50 trials.
		{"cap reached", 2.5, StatusMaxUSD, 5, 5, true},
		{"cap above the total", 100, StatusCompleted, 11, 10.3, false},
		{"no cap", 0, StatusCompleted, 11, 10.3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := newFake()
			f.costPerTrial = 0.1
			f.register(env)
			env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
			env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", PlanJSON: "{}", Trials: 103, ShardSize: 10, Concurrency: 3, Judge: true, MaxUSD: tc.maxUSD})
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
				t.Fatalf("workflow: %v", env.GetWorkflowError())
			}
			var p Progress
			if err := env.GetWorkflowResult(&p); err != nil {
				t.Fatal(err)
			}
			if p.Status != tc.wantStatus || f.status != tc.wantStatus {
				t.Errorf("status %q, stored %q, want %q", p.Status, f.status, tc.wantStatus)
			}
			if len(f.shards) != tc.wantShards || p.ShardsDone != tc.wantShards {
				t.Errorf("%d shards ran, %d done, want %d", len(f.shards), p.ShardsDone, tc.wantShards)
			}
			if math.Abs(p.SpentUSD-tc.wantSpent) > 1e-9 {
				t.Errorf("spent %v, want %v", p.SpentUSD, tc.wantSpent)
			}
			if got := p.Stopped != ""; got != tc.wantStopped {
				t.Errorf("stopped %q, want a reason: %v", p.Stopped, tc.wantStopped)
			}
			if tc.wantStopped {
				if !strings.Contains(p.Stopped, "max_usd reached") || !strings.Contains(p.Stopped, "$5.00 of $2.50") || !strings.Contains(p.Stopped, "50 of 103 trials") {
					t.Errorf("stopped reason %q does not say what was spent and run", p.Stopped)
				}
				if len(f.judged) != 0 {
					t.Errorf("the judge ran %d shards after the cap was reached", len(f.judged))
				}
			} else if len(f.judged) == 0 {
				t.Error("the judge did not run")
			}
		})
	}
}

// The spend travels through continue-as-new: a cap reached in a later run
// counts what the earlier runs spent.
func TestSweepMaxUSDAcrossContinueAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := newFake()
	f.costPerTrial = 0.1
	f.register(env)
	env.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepWorkflowName})
	env.ExecuteWorkflow(SweepWorkflowName, SweepInput{SweepID: "s1", Trials: 50, ShardSize: 10, Concurrency: 1, NextShard: 2,
		Progress: Progress{ShardsDone: 2, TrialsDone: 20, SpentUSD: 2}, MaxUSD: 2.5})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var p Progress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if p.Status != StatusMaxUSD || len(f.shards) != 1 || math.Abs(p.SpentUSD-3) > 1e-9 || p.TrialsDone != 30 {
		t.Fatalf("progress %+v after %d shards; want max_usd_reached after one more shard, $3 spent", p, len(f.shards))
	}
}
