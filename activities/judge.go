package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/storage"
	"rebound/workflows"
)

// JudgeShard scores trials [From, To) of a sweep with the plan's LLM judge:
// every stored, ungraded-by-attrition trial that met a failure. A judged
// trial lands in judgements, one the judge could not score after its
// retries lands in the review queue; the executable checks are untouched.
// Results are cached, so a retried activity does not pay the judge twice.
func (a *Activities) JudgeShard(ctx context.Context, in workflows.ShardInput) (workflows.ShardResult, error) {
	a.inflight.Add(1)
	defer a.inflight.Done()
	ctx, release := a.haltable(ctx)
	defer release()
	if activity.IsActivity(ctx) {
		// A judge request can outlast the heartbeat timeout.
		stop := every(a.heartbeatEvery(), func() { activity.RecordHeartbeat(ctx) })
		defer stop()
	}
	plan, err := a.plan(ctx, in.SweepID)
	if err != nil {
		return workflows.ShardResult{}, err
	}
	if plan.Judge == nil {
		return workflows.ShardResult{}, nil
	}
	red, err := a.redactor(plan)
	if err != nil {
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	store := redactingStore{Store: a.Store, red: red}
	j, err := a.newJudge(plan.Judge, store)
	if err != nil {
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrAgentConfig, nil)
	}
	var out workflows.ShardResult
	for i := in.From; i < in.To; i++ {
		key, err := plan.Trial(i)
		if err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		id := trial.ID(in.SweepID, key.Scenario.Name, key.Variant.Name, key.Arm.Name, key.Seed)
		t, calls, err := a.Store.SweepTrial(ctx, in.SweepID, storage.TrialKey{Arm: key.Arm.Name, Scenario: key.Scenario.Name, Variant: key.Variant.Name, Seed: key.Seed, TrialID: id})
		if err != nil {
			return out, fmt.Errorf("judge: read trial %s: %w", id, err)
		}
		if t.Attrition {
			continue
		}
		catalog, err := world.ToolsOf(key.Scenario.WorldRef())
		if err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		// The judge sees what storage holds: the redacted scenario and
		// variant beside the redacted rows, never a secret of the plan.
		sc, variant, err := redactedCase(red, key.Scenario, key.Variant)
		if err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		res, err := j.Score(ctx, judge.NewInput(sc, variant, catalog, judgestore.TraceFromStored(sc.Goal, t, calls)))
		switch {
		case errors.Is(err, judge.ErrNothingToJudge):
			continue
		case errors.Is(err, judge.ErrConfig):
			return out, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrAgentConfig, nil)
		case err != nil && !(errors.Is(err, judge.ErrCache) && res.Status != ""):
			return out, err
		}
		if err := judgestore.Record(ctx, store, in.SweepID, id, res); err != nil {
			return out, err
		}
		out.Trials++
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return out, nil
}

func (a *Activities) newJudge(spec *scenario.JudgeSpec, store storage.Store) (*judge.Judge, error) {
	cfg := judge.Config{BaseURL: spec.BaseURL, APIKeyEnv: spec.APIKeyEnv, Model: spec.Model, Prompt: spec.PromptText}
	opts := append([]judge.Option{judge.WithCache(judgestore.StoreCache{Store: store})}, a.JudgeOptions...)
	return judge.New(cfg, opts...)
}

// redactedCase returns copies of a scenario and variant with every string
// redacted (red.JSON), for what leaves the process about them.
func redactedCase(red *redact.Redactor, sc *scenario.Scenario, v scenario.Variant) (*scenario.Scenario, scenario.Variant, error) {
	var rs scenario.Scenario
	if err := json.Unmarshal([]byte(red.JSON(sc)), &rs); err != nil {
		return nil, v, fmt.Errorf("redact scenario %s: %w", sc.Name, err)
	}
	var rv scenario.Variant
	if err := json.Unmarshal([]byte(red.JSON(v)), &rv); err != nil {
		return nil, v, fmt.Errorf("redact variant %s: %w", v.Name, err)
	}
	rs.Name, rv.Name = sc.Name, v.Name
	return &rs, rv, nil
}
