// Package runner wires sweeps onto Temporal: a worker that hosts the sweep
// workflow and the trial activities, starting a sweep from a resolved plan,
// and following its progress. The CLI and the integration tests share it, so
// the code path a test proves is the one users run.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/internal/redact"
	"rebound/workflows"
)

// DefaultTaskQueue is the task queue rebound workers poll by default.
const DefaultTaskQueue = "rebound"

// WorkerOptions tunes a worker.
type WorkerOptions struct {
	// MaxConcurrentShards bounds the shard activities this worker runs at
	// once; 0 means two per CPU (trials are CPU-bound; the SDK's own
	// default of 1,000 would oversubscribe a worker).
	MaxConcurrentShards int
	// StopTimeout is how long a stopping worker lets its shards run before
	// cancelling them (they keep what they finished and hand the rest back
	// at once); 0 means DefaultStopTimeout.
	StopTimeout time.Duration
}

// DefaultStopTimeout is a stopping worker's grace period for its shards.
const DefaultStopTimeout = 10 * time.Second

// NewWorker builds (but does not start) a worker hosting the sweep workflow
// and the activities. Workflows and activities are traced with
// OpenTelemetry through the global tracer provider (a no-op until the
// process installs an exporter), so a sweep shows up as one trace with a
// span per shard and per trial.
func NewWorker(c client.Client, queue string, acts *activities.Activities, opts WorkerOptions) (worker.Worker, error) {
	if err := redact.CheckKey(acts.RedactionKey); err != nil {
		return nil, fmt.Errorf("worker refuses to start: %w", err)
	}
	tracing, err := temporalotel.NewTracingInterceptor(tracerOptions)
	if err != nil {
		return nil, fmt.Errorf("tracing interceptor: %w", err)
	}
	shards := opts.MaxConcurrentShards
	if shards <= 0 {
		shards = 2 * runtime.NumCPU()
	}
	stop := opts.StopTimeout
	if stop <= 0 {
		stop = DefaultStopTimeout
	}
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentActivityExecutionSize: shards,
		WorkerStopTimeout:                  stop,
		Interceptors:                       []interceptor.WorkerInterceptor{tracing},
	})
	w.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: workflows.SweepWorkflowName})
	w.RegisterActivityWithOptions(acts.RegisterSweep, activity.RegisterOptions{Name: workflows.RegisterSweepActivity})
	w.RegisterActivityWithOptions(acts.RunShard, activity.RegisterOptions{Name: workflows.RunShardActivity})
	w.RegisterActivityWithOptions(acts.JudgeShard, activity.RegisterOptions{Name: workflows.JudgeShardActivity})
	w.RegisterActivityWithOptions(acts.FinishSweep, activity.RegisterOptions{Name: workflows.FinishSweepActivity})
	return w, nil
}

var unsafeID = regexp.MustCompile(`[^a-z0-9-]+`)

// NewSweepID names a sweep after its plan and start time, with a random
// suffix: readable in a terminal, unique across runs.
func NewSweepID(planName string, now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	// The sweep id is Temporal's workflow id, which no codec encrypts: a
	// secret-shaped plan name must not end up in it.
	if red, err := redact.New(nil, nil); err == nil {
		planName = strings.ReplaceAll(red.String(planName), redact.Mask, "redacted")
	}
	name := strings.Trim(unsafeID.ReplaceAllString(strings.ToLower(planName), "-"), "-")
	if name == "" {
		name = "sweep"
	}
	return fmt.Sprintf("%s-%s-%s", name, now.UTC().Format("20060102-150405"), hex.EncodeToString(b[:]))
}

// WorkflowID is the Temporal workflow id of a sweep.
func WorkflowID(sweepID string) string { return "sweep/" + sweepID }

// StartSweep starts the sweep workflow for a resolved plan.
func StartSweep(ctx context.Context, c client.Client, queue, sweepID string, plan *scenario.Resolved) (client.WorkflowRun, error) {
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if len(planJSON) > activities.MaxPlanPayload {
		return nil, fmt.Errorf("plan %s is %d bytes resolved, over the limit of %d (Temporal payloads are limited to 2 MB): split it into several plans", plan.Name, len(planJSON), activities.MaxPlanPayload)
	}
	in := workflows.SweepInput{
		SweepID: sweepID, PlanJSON: string(planJSON), Trials: plan.TrialCount(),
		ShardSize: plan.ShardSize, Concurrency: plan.Concurrency, Judge: plan.Judge != nil, MaxUSD: plan.MaxUSD,
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        WorkflowID(sweepID),
		TaskQueue: queue,
	}, workflows.SweepWorkflowName, in)
}

// getRetrying waits for the workflow's result, asking again after an error
// that is not the workflow's own end.
func getRetrying(ctx context.Context, c client.Client, run client.WorkflowRun, sweepID string, final *workflows.Progress) error {
	delay, start := time.Second, time.Time{}
	for {
		err := run.Get(ctx, final)
		if err == nil || ctx.Err() != nil || !transientFollowError(err) {
			return err
		}
		if start.IsZero() {
			start = time.Now()
		}
		if time.Since(start) > FollowRetryFor {
			return fmt.Errorf("temporal did not answer for %s: %w", FollowRetryFor, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
		// The latest run of the sweep's workflow (a continue-as-new may
		// have happened meanwhile).
		run = c.GetWorkflow(ctx, WorkflowID(sweepID), "")
	}
}

// transientFollowError reports whether waiting for a workflow failed for
// a reason other than the workflow's own end: Temporal (or the way to it)
// did not answer.
func transientFollowError(err error) bool {
	var (
		exec  *temporal.WorkflowExecutionError
		cncl  *temporal.CanceledError
		term  *temporal.TerminatedError
		tout  *temporal.TimeoutError
		app   *temporal.ApplicationError
		nf    *serviceerror.NotFound
		inval *serviceerror.InvalidArgument
	)
	if errors.As(err, &exec) || errors.As(err, &cncl) || errors.As(err, &term) || errors.As(err, &tout) || errors.As(err, &app) ||
		errors.As(err, &nf) || errors.As(err, &inval) {
		return false
	}
	return true
}

// Progress asks a running sweep for its progress.
func Progress(ctx context.Context, c client.Client, sweepID string) (workflows.Progress, error) {
	var p workflows.Progress
	v, err := c.QueryWorkflow(ctx, WorkflowID(sweepID), "", workflows.ProgressQuery)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// FollowRetryFor bounds how long Follow keeps retrying while Temporal does
// not answer (a dev server whose store timed out, a restart): errors that
// are not the sweep's own end are transient.
var FollowRetryFor = 10 * time.Minute

// Follow waits for a sweep to finish, calling onProgress at every interval
// with the latest progress. It returns the final progress. Waiting outlasts
// Temporal's transient errors (unavailable, a deadline exceeded, a
// restart): Follow asks again, with backoff, for up to FollowRetryFor;
// only the workflow's own end (completed, failed, cancelled, terminated)
// ends it.
func Follow(ctx context.Context, c client.Client, run client.WorkflowRun, sweepID string, every time.Duration, onProgress func(workflows.Progress)) (workflows.Progress, error) {
	done := make(chan struct{})
	var (
		final workflows.Progress
		err   error
	)
	go func() {
		defer close(done)
		err = getRetrying(ctx, c, run, sweepID, &final)
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if onProgress != nil && err == nil {
				onProgress(final)
			}
			return final, err
		case <-tick.C:
			if onProgress == nil {
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			p, qerr := Progress(qctx, c, sweepID)
			cancel()
			if qerr == nil {
				onProgress(p)
			}
		}
	}
}
