package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"rebound/internal/sweepstatus"
)

// Names under which the workflow, its query and its activities are
// registered. Activities are referenced by name so this package does not
// import the activity implementations.
const (
	SweepWorkflowName     = "rebound.Sweep"
	ProgressQuery         = "progress"
	RegisterSweepActivity = "RegisterSweep"
	RunShardActivity      = "RunShard"
	JudgeShardActivity    = "JudgeShard"
	FinishSweepActivity   = "FinishSweep"
)

// Error types activities return for permanent failures; the retry policy
// does not retry them.
const (
	ErrInvalidPlan  = "InvalidPlan"
	ErrUnknownSweep = "UnknownSweep"
	ErrAgentConfig  = "AgentConfig" // an arm's agent cannot run (bad endpoint, key, model)
	// ErrAllAttrition fails a sweep whose every trial was lost to the
	// provider: nothing was measured.
	ErrAllAttrition = "AllAttrition"
	// ErrOverBudget refuses a sweep whose projected cost exceeds its
	// plan's max_usd.
	ErrOverBudget = "OverBudget"
)

// SweepInput starts (or continues) a sweep.
type SweepInput struct {
	SweepID string
	// PlanJSON is the resolved plan; present only on the first run, where
	// RegisterSweep stores it. Continued runs carry none.
	PlanJSON    string
	Trials      int
	ShardSize   int
	Concurrency int
	// Judge runs the plan's LLM judge over every shard once all trials
	// are stored.
	Judge bool
	// Phase is PhaseTrials, then PhaseJudge when Judge is set; Phase,
	// NextShard and Progress travel through continue-as-new.
	Phase     string
	NextShard int
	Progress  Progress
	// ShardsPerRun bounds the shards one run schedules before it continues
	// as new (history stays far below 51,200 events). 0 means 1,000.
	ShardsPerRun int
	// MaxUSD is the plan's spend cap (0: none): once the spend the shards
	// report reaches it, no shard is scheduled any more, the ones in flight
	// finish, and the sweep ends with StatusMaxUSD. Sweeps started before
	// the cap existed carry 0, so their histories replay unchanged.
	MaxUSD float64 `json:",omitempty"`
}

// Progress is what the progress query returns, and the sweep's result.
type Progress struct {
	TrialsPlanned int    `json:"trials_planned"`
	TrialsDone    int    `json:"trials_done"`
	ShardsTotal   int    `json:"shards_total"`
	ShardsDone    int    `json:"shards_done"`
	Attrition     int    `json:"attrition"`
	TrialsJudged  int    `json:"trials_judged"`
	Phase         string `json:"phase"`
	Runs          int    `json:"runs"` // workflow runs so far (continue-as-new)
	Status        string `json:"status"`
	// SpentUSD is the model spend the finished shards recorded.
	SpentUSD float64 `json:"spent_usd,omitempty"`
	// Stopped says why a sweep stopped before running every trial, when it
	// did so on purpose (the max_usd cap).
	Stopped string `json:"stopped,omitempty"`
}

// RegisterSweepInput stores a sweep's plan and planned size.
type RegisterSweepInput struct {
	SweepID  string
	PlanJSON string
	Trials   int
}

// ShardInput asks an activity to run trials [From, To) of a sweep.
type ShardInput struct {
	SweepID string
	Shard   int
	From    int
	To      int
}

// ShardResult is the compact summary an activity returns: counts only.
type ShardResult struct {
	Trials    int
	Attrition int
	// CostUSD is the model spend of the shard's stored trials.
	CostUSD float64 `json:",omitempty"`
}

// FinishSweepInput records a sweep's final status.
type FinishSweepInput struct {
	SweepID string
	Status  string
}

// Phases of a sweep.
const (
	PhaseTrials = "trials"
	PhaseJudge  = "judge"
)

// Sweep statuses: the vocabulary storage keeps too (sweepstatus).
const (
	StatusRunning   = sweepstatus.Running
	StatusCompleted = sweepstatus.Completed
	StatusFailed    = sweepstatus.Failed
	StatusCancelled = sweepstatus.Cancelled
	// StatusMaxUSD ends a sweep stopped by its plan's max_usd: the trials
	// it stored are valid, the others never ran.
	StatusMaxUSD = sweepstatus.MaxUSD
)

// overBudget reports whether the recorded spend reached the cap.
func overBudget(in SweepInput, p *Progress) bool { return in.MaxUSD > 0 && p.SpentUSD >= in.MaxUSD }

func shardCount(trials, size int) int {
	if size <= 0 {
		return 0
	}
	return (trials + size - 1) / size
}

// HeartbeatTimeout is how long a shard may go without a heartbeat before
// Temporal gives it to another worker: shards heartbeat per trial, per
// model turn and every few seconds, so a lost worker's shards move again
// about this long after it died. (Not a command: changing it needs no
// version guard.)
const HeartbeatTimeout = 20 * time.Second

// ActivityOptions are the options of trial-running activities: retried with
// backoff, heartbeating per trial, permanent plan errors not retried.
func ActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{ErrInvalidPlan, ErrUnknownSweep, ErrAgentConfig},
		},
	}
}

// Sweep runs every trial of a sweep through RunShard activities, at most
// Concurrency shards in flight.
func Sweep(ctx workflow.Context, in SweepInput) (Progress, error) {
	if in.SweepID == "" {
		// A scheduled run: the schedule makes each run's workflow id unique
		// ("sweep/sched-NAME-<time>"), and that is the sweep's id. Reading
		// it issues no command, so histories replay unchanged.
		in.SweepID = strings.TrimPrefix(workflow.GetInfo(ctx).WorkflowExecution.ID, "sweep/")
	}
	if in.ShardSize <= 0 || in.Concurrency <= 0 || in.Trials < 0 || in.SweepID == "" {
		return in.Progress, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("invalid sweep input: id=%q trials=%d shard_size=%d concurrency=%d", in.SweepID, in.Trials, in.ShardSize, in.Concurrency),
			ErrInvalidPlan, nil)
	}
	perRun := in.ShardsPerRun
	if perRun <= 0 {
		perRun = 1000
	}
	total := shardCount(in.Trials, in.ShardSize)
	p := in.Progress
	p.TrialsPlanned, p.ShardsTotal, p.Status = in.Trials, total, StatusRunning
	p.Runs++
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) { return p, nil }); err != nil {
		return p, err
	}
	actx := workflow.WithActivityOptions(ctx, ActivityOptions())

	if in.PlanJSON != "" {
		err := workflow.ExecuteActivity(actx, RegisterSweepActivity, RegisterSweepInput{SweepID: in.SweepID, PlanJSON: in.PlanJSON, Trials: in.Trials}).Get(ctx, nil)
		if err != nil {
			return p, finish(ctx, in.SweepID, &p, StatusFailed, err)
		}
	}

	if in.Phase == "" {
		in.Phase = PhaseTrials
	}
	next, scheduled := in.NextShard, 0
	for {
		p.Phase = in.Phase
		activityName := RunShardActivity
		if in.Phase == PhaseJudge {
			activityName = JudgeShardActivity
		}
		var err error
		next, scheduled, err = window(ctx, actx, activityName, in, next, scheduled, perRun, &p)
		if ctx.Err() != nil {
			return p, finish(ctx, in.SweepID, &p, StatusCancelled, ctx.Err())
		}
		if err != nil {
			return p, finish(ctx, in.SweepID, &p, StatusFailed, err)
		}
		if overBudget(in, &p) && (next < total || (in.Phase == PhaseTrials && in.Judge)) {
			// Every shard in flight finished (window waits for them); none
			// other starts, the judge phase included.
			p.Stopped = fmt.Sprintf("max_usd reached: spent $%.2f of $%.2f after %d of %d trials", p.SpentUSD, in.MaxUSD, p.TrialsDone, p.TrialsPlanned)
			return p, finish(ctx, in.SweepID, &p, StatusMaxUSD, nil)
		}
		if next < total {
			in.PlanJSON, in.NextShard, in.Progress = "", next, p
			return p, workflow.NewContinueAsNewError(ctx, Sweep, in)
		}
		if in.Phase == PhaseJudge || !in.Judge {
			break
		}
		in.Phase, next = PhaseJudge, 0
	}
	// Version 1: a sweep whose every trial was lost to attrition fails
	// (nothing was measured) instead of completing. Sweeps started before
	// the change replay the old branch (no marker in their history).
	if v := workflow.GetVersion(ctx, "all-attrition-fails", workflow.DefaultVersion, 1); v >= 1 &&
		p.TrialsPlanned > 0 && p.Attrition >= p.TrialsPlanned {
		return p, finish(ctx, in.SweepID, &p, StatusFailed, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("all %d trials were lost to attrition (the provider kept failing): nothing was measured", p.TrialsPlanned),
			ErrAllAttrition, nil))
	}
	return p, finish(ctx, in.SweepID, &p, StatusCompleted, nil)
}

// window runs shard activities from shard next on, at most Concurrency in
// flight, until every shard ran or this run scheduled perRun shards. It
// returns the next shard to schedule and the shards scheduled in this run.
func window(ctx, actx workflow.Context, activityName string, in SweepInput, next, scheduled, perRun int, p *Progress) (int, int, error) {
	total := shardCount(in.Trials, in.ShardSize)
	inFlight := 0
	var firstErr error
	sel := workflow.NewSelector(ctx)
	for {
		for firstErr == nil && ctx.Err() == nil && !overBudget(in, p) && inFlight < in.Concurrency && next < total && scheduled < perRun {
			from := next * in.ShardSize
			f := workflow.ExecuteActivity(actx, activityName, ShardInput{SweepID: in.SweepID, Shard: next, From: from, To: min(from+in.ShardSize, in.Trials)})
			next++
			scheduled++
			inFlight++
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				var r ShardResult
				if err := f.Get(ctx, &r); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					return
				}
				if activityName == JudgeShardActivity {
					p.TrialsJudged += r.Trials
					return
				}
				p.ShardsDone++
				p.TrialsDone += r.Trials
				p.Attrition += r.Attrition
				p.SpentUSD += r.CostUSD
			})
		}
		if inFlight == 0 {
			return next, scheduled, firstErr
		}
		sel.Select(ctx)
	}
}

// finish records the final status (on a disconnected context when the sweep
// was cancelled, so the record survives the cancellation) and returns cause.
func finish(ctx workflow.Context, sweepID string, p *Progress, status string, cause error) error {
	p.Status = status
	if errors.Is(cause, workflow.ErrCanceled) || status == StatusCancelled {
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	// FinishSweep waits, heartbeating, for a store that is full or
	// unreachable (activities/storewait.go), so the stored status ends as
	// the workflow's does. (Timeouts and retry policies are not commands:
	// no version guard.)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 10, MaximumInterval: time.Minute},
	})
	if err := workflow.ExecuteActivity(actx, FinishSweepActivity, FinishSweepInput{SweepID: sweepID, Status: status}).Get(ctx, nil); err != nil && cause == nil {
		return err
	}
	return cause
}
