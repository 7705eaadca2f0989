// Package activities holds rebound's Temporal activities: register a sweep,
// run a shard of trials and persist its rows, record the final status. They
// run at least once, so every write is idempotent: trial ids are derived from
// the trial's coordinates and storage deduplicates on them.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"rebound/agent"
	"rebound/agent/command"
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
	// RedactionKey (REBOUND_REDACTION_KEY, at least 32 bytes) keys the
	// hashes that replace idempotency keys in stored arguments and seals the
	// original plan in storage. Every worker and client of a deployment
	// needs the same key; activities refuse to run without one.
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

	mu      sync.Mutex
	plans   map[string]*scenario.Resolved
	checked map[string]error // CheckPlan's verdict per sweep on this worker
}

// checkOnce runs CheckPlan once per sweep on this worker.
func (a *Activities) checkOnce(sweepID string, plan *scenario.Resolved) error {
	a.mu.Lock()
	err, ok := a.checked[sweepID]
	a.mu.Unlock()
	if ok {
		return err
	}
	err = CheckPlan(plan)
	a.mu.Lock()
	if a.checked == nil {
		a.checked = map[string]error{}
	}
	a.checked[sweepID] = err
	a.mu.Unlock()
	return err
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
	red, err := a.redactor(&plan)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	if err := CheckPlan(&plan); err != nil {
		return temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrInvalidPlan, nil)
	}
	sealer, err := redact.NewSealer(a.RedactionKey, planSealPurpose)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	// People read the plan redacted; workers open the sealed original.
	stored, err := redact.SealDocument(red, sealer, in.PlanJSON)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	return a.Store.PutSweep(ctx, storage.Sweep{
		SweepID: in.SweepID, Name: red.String(plan.Name), PlanHash: plan.Hash, PlanJSON: stored,
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
	red, err := a.redactor(plan)
	if err != nil {
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	if err := a.checkOnce(in.SweepID, plan); err != nil {
		// This worker cannot run the plan (an agent it does not know, a
		// world that refuses the initial state): retrying will not help.
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrInvalidPlan, nil)
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
		stopBeat := heartbeat(ctx, i)
		res, err := trial.Run(command.WithAttempt(tctx, int(attempt)), spec, ag)
		stopBeat()
		if err != nil {
			span.RecordError(err)
			span.End()
			switch {
			case errors.Is(err, llm.ErrAttrition), errors.Is(err, agent.ErrAttrition):
				// The provider (or an external agent's infrastructure),
				// not the agent, failed: count it per arm, never grade it.
				row := AttritionRow(spec, ag.Name(), err, red)
				if p, _ := command.IsAttrition(err); p != nil {
					row.Process = processJSON(p, red)
				}
				trials = append(trials, row)
				continue
			case errors.Is(err, llm.ErrConfig), errors.Is(err, agent.ErrConfig):
				return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrAgentConfig, nil)
			}
			if ctx.Err() != nil {
				return workflows.ShardResult{}, err
			}
			return workflows.ShardResult{}, errors.New(red.String(err.Error()))
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

// heartbeatEvery is how often a running trial heartbeats: an external
// agent's process may run for minutes, far beyond the shard's 2-minute
// heartbeat timeout.
const heartbeatEvery = 10 * time.Second

// heartbeat records a heartbeat for trial i now and then until stopped.
func heartbeat(ctx context.Context, i int) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	return every(heartbeatEvery, func() { activity.RecordHeartbeat(ctx, i) })
}

// every calls f every d until stop is called; stop returns once f will not
// be called again.
func every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (a *Activities) resolve(arm scenario.Arm) (agent.Agent, error) {
	if a.Agents != nil {
		return a.Agents(arm)
	}
	return ResolveArm(arm)
}

// Redactor returns the redactor of a sweep's rows: the same one for every
// writer of the sweep (workers, regrade), so keyed hashes compare equal.
func (a *Activities) Redactor(plan *scenario.Resolved) (*redact.Redactor, error) {
	return a.redactor(plan)
}

// OpenPlan opens a stored plan_json with this deployment's redaction key.
func (a *Activities) OpenPlan(stored string) (*scenario.Resolved, error) {
	return OpenPlan(stored, a.RedactionKey)
}

// planSealPurpose derives the key that seals the stored plan.
const planSealPurpose = "plan"

// redactor builds the redactor of a sweep: the default and configured
// patterns, the values of the API keys the plan's arms and judge read from
// the environment, and the deployment's hash key.
func (a *Activities) redactor(plan *scenario.Resolved) (*redact.Redactor, error) {
	if err := redact.CheckKey(a.RedactionKey); err != nil {
		return nil, err
	}
	return redact.NewWith(redact.Options{
		Patterns: a.RedactPatterns,
		Values:   KnownSecrets(plan),
		HashKey:  redact.DeriveKey(a.RedactionKey, "idempotency-key-hash"),
	})
}

// KnownSecrets returns the values of the API keys a plan names
// (api_key_env of its LLM arms and judge, env_from of its command arms) as
// this process sees them: they are redacted by value wherever they appear,
// whatever their shape.
func KnownSecrets(plan *scenario.Resolved) []string {
	var names []string
	for _, arm := range plan.Arms {
		if arm.LLM != nil && arm.LLM.APIKeyEnv != "" {
			names = append(names, arm.LLM.APIKeyEnv)
		}
		for _, worker := range arm.EnvFrom { // a command arm's secrets
			names = append(names, worker)
		}
	}
	if plan.Judge != nil && plan.Judge.APIKeyEnv != "" {
		names = append(names, plan.Judge.APIKeyEnv)
	}
	var out []string
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// OpenPlan decodes a stored plan_json, opening its sealed original with
// the redaction key (a plan stored before sealing is read as it is).
func OpenPlan(stored string, redactionKey []byte) (*scenario.Resolved, error) {
	var sealer *redact.Sealer
	if redact.CheckKey(redactionKey) == nil {
		s, err := redact.NewSealer(redactionKey, planSealPurpose)
		if err != nil {
			return nil, err
		}
		sealer = s
	}
	doc, err := redact.OpenDocument(sealer, stored)
	if err != nil {
		return nil, err
	}
	p := &scenario.Resolved{}
	if err := json.Unmarshal([]byte(doc), p); err != nil {
		return nil, err
	}
	return p, nil
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
	p, err = OpenPlan(sw.PlanJSON, a.RedactionKey)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("stored plan of sweep "+sweepID+": "+err.Error(), workflows.ErrInvalidPlan, err)
	}
	a.mu.Lock()
	if a.plans == nil {
		a.plans = map[string]*scenario.Resolved{}
	}
	a.plans[sweepID] = p
	a.mu.Unlock()
	return p, nil
}
