// Package activities holds rebound's Temporal activities: register a sweep,
// run a shard of trials and persist its rows, record the final status. They
// run at least once, so every write is idempotent: trial ids are derived from
// the trial's coordinates and storage deduplicates on them.
package activities

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"rebound/agent"
	"rebound/agent/llm"
	"rebound/judge"
	"rebound/redact"
	"rebound/scenario"
	"rebound/storage"
	"rebound/trial"
	"rebound/workflows"
)

var tracer = otel.Tracer("rebound/activities")

// AgentResolver builds the agent of an arm.
type AgentResolver func(arm scenario.Arm) (agent.Agent, error)

// Activities are registered on a worker as methods of one struct.
type Activities struct {
	Store storage.Store
	// Agents resolves an arm to its agent; nil means scripted agents only.
	Agents AgentResolver
	// RedactionKey keys the hashes that replace idempotency keys in stored
	// arguments. Empty derives a per-sweep key (equality still checkable,
	// but not secret): set REBOUND_REDACTION_KEY in production.
	RedactionKey []byte
	// RedactPatterns are extra secret patterns on top of the defaults.
	RedactPatterns []string
	// FailAfterWrite, when set, runs after a shard's rows are written and
	// before the activity returns; an error makes Temporal retry the
	// activity. It exists to prove that retries never double-count.
	FailAfterWrite func(ctx context.Context, in workflows.ShardInput) error
	// JudgeOptions are extra options for the plan's LLM judge (tests
	// replace its sleep).
	JudgeOptions []judge.Option

	mu    sync.Mutex
	plans map[string]*scenario.Resolved
}

// RegisterSweep stores the sweep's resolved plan and planned size.
func (a *Activities) RegisterSweep(ctx context.Context, in workflows.RegisterSweepInput) error {
	var plan scenario.Resolved
	if err := json.Unmarshal([]byte(in.PlanJSON), &plan); err != nil {
		return temporal.NewNonRetryableApplicationError("plan is not valid JSON: "+err.Error(), workflows.ErrInvalidPlan, err)
	}
	if plan.TrialCount() != in.Trials {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan has %d trials, sweep says %d", plan.TrialCount(), in.Trials), workflows.ErrInvalidPlan, nil)
	}
	arms := make([]string, len(plan.Arms))
	for i, arm := range plan.Arms {
		arms[i] = arm.Name
	}
	return a.Store.PutSweep(ctx, storage.Sweep{
		SweepID: in.SweepID, Name: plan.Name, PlanHash: plan.Hash, PlanJSON: in.PlanJSON,
		TrialsPlanned: uint64(in.Trials), Arms: arms, Status: storage.SweepRunning,
	})
}

// FinishSweep records the final status of a sweep.
func (a *Activities) FinishSweep(ctx context.Context, in workflows.FinishSweepInput) error {
	sw, err := a.Store.Sweep(ctx, in.SweepID)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return temporal.NewNonRetryableApplicationError("unknown sweep "+in.SweepID, workflows.ErrUnknownSweep, err)
		}
		return err
	}
	sw.Status = in.Status
	return a.Store.PutSweep(ctx, sw)
}

// RunShard runs trials [From, To) of a sweep, writes their rows in one batch
// per table, and returns counts only.
func (a *Activities) RunShard(ctx context.Context, in workflows.ShardInput) (workflows.ShardResult, error) {
	plan, err := a.plan(ctx, in.SweepID)
	if err != nil {
		return workflows.ShardResult{}, err
	}
	attempt := uint32(1)
	if activity.IsActivity(ctx) {
		attempt = uint32(activity.GetInfo(ctx).Attempt)
	}
	red, err := a.redactor(in.SweepID)
	if err != nil {
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	var (
		trials []storage.Trial
		calls  []storage.ToolCall
	)
	for i := in.From; i < in.To; i++ {
		if err := ctx.Err(); err != nil {
			return workflows.ShardResult{}, err
		}
		key, err := plan.Trial(i)
		if err != nil {
			return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		ag, err := a.resolve(key.Arm)
		if err != nil {
			return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		tctx, span := tracer.Start(ctx, "trial", trace.WithAttributes(
			attribute.String("rebound.scenario", key.Scenario.Name), attribute.String("rebound.variant", key.Variant.Name),
			attribute.String("rebound.arm", key.Arm.Name), attribute.Int64("rebound.seed", int64(key.Seed))))
		spec := trial.Spec{SweepID: in.SweepID, Scenario: key.Scenario, Variant: key.Variant, Arm: key.Arm, Seed: key.Seed}
		res, err := trial.Run(tctx, spec, ag)
		if err != nil {
			span.RecordError(err)
			span.End()
			switch {
			case errors.Is(err, llm.ErrAttrition):
				// The provider, not the agent, failed: count it per arm,
				// never grade it.
				trials = append(trials, AttritionRow(spec, ag.Name(), err, red))
				continue
			case errors.Is(err, llm.ErrConfig):
				return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrAgentConfig, nil)
			}
			return workflows.ShardResult{}, err
		}
		span.SetAttributes(attribute.String("rebound.trial_id", res.TrialID), attribute.Int("rebound.tool_calls", res.Verdict.Counts.ToolCalls))
		span.End()
		t, cs := Rows(res, red)
		t.ActivityAttempt = attempt
		trials = append(trials, t)
		calls = append(calls, cs...)
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	if err := a.Store.WriteTrials(ctx, trials, calls); err != nil {
		return workflows.ShardResult{}, fmt.Errorf("write shard %d of %s: %w", in.Shard, in.SweepID, err)
	}
	if a.FailAfterWrite != nil {
		if err := a.FailAfterWrite(ctx, in); err != nil {
			return workflows.ShardResult{}, err
		}
	}
	out := workflows.ShardResult{Trials: len(trials)}
	for _, t := range trials {
		if t.Attrition {
			out.Attrition++
		}
	}
	return out, nil
}

func (a *Activities) resolve(arm scenario.Arm) (agent.Agent, error) {
	if a.Agents != nil {
		return a.Agents(arm)
	}
	return ResolveArm(arm)
}

// Redactor returns the redactor of a sweep's rows: the same one for every
// writer of the sweep (workers, regrade), so keyed hashes compare equal.
func (a *Activities) Redactor(sweepID string) (*redact.Redactor, error) { return a.redactor(sweepID) }

func (a *Activities) redactor(sweepID string) (*redact.Redactor, error) {
	key := a.RedactionKey
	if len(key) == 0 {
		sum := sha256.Sum256([]byte("rebound-redaction:" + sweepID))
		key = sum[:]
	}
	return redact.New(a.RedactPatterns, key)
}

// plan returns the sweep's resolved plan, read from storage once per worker.
func (a *Activities) plan(ctx context.Context, sweepID string) (*scenario.Resolved, error) {
	a.mu.Lock()
	p, ok := a.plans[sweepID]
	a.mu.Unlock()
	if ok {
		return p, nil
	}
	sw, err := a.Store.Sweep(ctx, sweepID)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, temporal.NewNonRetryableApplicationError("unknown sweep "+sweepID, workflows.ErrUnknownSweep, err)
		}
		return nil, err
	}
	p = &scenario.Resolved{}
	if err := json.Unmarshal([]byte(sw.PlanJSON), p); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("stored plan is not valid: "+err.Error(), workflows.ErrInvalidPlan, err)
	}
	a.mu.Lock()
	if a.plans == nil {
		a.plans = map[string]*scenario.Resolved{}
	}
	a.plans[sweepID] = p
	a.mu.Unlock()
	return p, nil
}
