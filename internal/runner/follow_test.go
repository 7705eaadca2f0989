package runner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"rebound/activities"
	"rebound/internal/devstack/devstacktest"
	"rebound/workflows"
)

func TestTransientFollowError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{serviceerror.NewDeadlineExceeded("context deadline exceeded"), true},
		{serviceerror.NewUnavailable("connection refused"), true},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{temporal.NewCanceledError(), false},
		{temporal.NewApplicationError("all trials lost", workflows.ErrAllAttrition), false},
		{serviceerror.NewNotFound("workflow not found"), false},
	} {
		if got := transientFollowError(tc.err); got != tc.want {
			t.Errorf("transientFollowError(%T %v) = %v, want %v", tc.err, tc.err, got, tc.want)
		}
	}
}

// timingOutRun is a sweep's real workflow run whose first waits fail as
// the embedded dev server's did under load: its store timed out.
type timingOutRun struct {
	client.WorkflowRun
	failures int
}

func (r *timingOutRun) Get(ctx context.Context, valuePtr any) error {
	if r.failures > 0 {
		r.failures--
		return serviceerror.NewDeadlineExceeded("context deadline exceeded (injected: the dev server's store timed out)")
	}
	return r.WorkflowRun.Get(ctx, valuePtr)
}

// A timeout of the dev server while a sweep is followed is retried: the
// follower waits on and returns the sweep's end, not the timeout.
func TestFollowOutlastsADevServerTimeout(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_follow")
	queue := startWorker(t, c, "runner-follow", &activities.Activities{RedactionKey: testRedactionKey, Store: store})
	plan := durablePlan(t, "follow", "seeds: 4\nshard_size: 2\nconcurrency: 1")
	sweepID := NewSweepID(plan.Name, time.Now())
	run, err := StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	final, err := Follow(ctx, c, &timingOutRun{WorkflowRun: run, failures: 1}, sweepID, 100*time.Millisecond, nil)
	if err != nil || final.Status != workflows.StatusCompleted || final.TrialsDone != 4 {
		t.Fatalf("final = %+v, %v", final, err)
	}
	// The workflow's own end is not retried.
	if _, err := Follow(ctx, c, &timingOutRun{WorkflowRun: failedRun{run}}, sweepID, 100*time.Millisecond, nil); err == nil || !errors.Is(err, errSweepFailed) {
		t.Fatalf("a failed sweep: %v", err)
	}
}

var errSweepFailed = temporal.NewApplicationError("the sweep failed", "Injected")

type failedRun struct{ client.WorkflowRun }

func (failedRun) Get(context.Context, any) error { return errSweepFailed }
