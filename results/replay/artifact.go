package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/results/artifact"
	"rebound/results/record"
)

// Source is what a replay reads: a stored trial with its tool calls, and
// its sweep (for the sealed plan). storage.Store implements it. An unknown
// trial or sweep is record.ErrNotFound.
type Source interface {
	Trial(ctx context.Context, trialID string) (record.Trial, []record.ToolCall, error)
	Sweep(ctx context.Context, id string) (record.Sweep, error)
}

// Artifact rebuilds a stored trial's failure artifact from its rows and the
// sweep's stored plan (for the goal and the allowed tools): what the trial
// did, without running it again. An unknown trial is record.ErrNotFound.
func Artifact(ctx context.Context, src Source, trialID string) (artifact.Artifact, error) {
	t, calls, err := src.Trial(ctx, trialID)
	if errors.Is(err, record.ErrNotFound) {
		return artifact.Artifact{}, fmt.Errorf("no trial %q in storage (find one with 'rebound trials SWEEP_ID'): %w", trialID, err)
	}
	if err != nil {
		return artifact.Artifact{}, err
	}
	a := artifact.Artifact{
		TrialID: t.TrialID, Scenario: t.Scenario, Variant: t.Variant, Arm: t.Arm, Seed: t.Seed,
		FaultSchedule: json.RawMessage(t.FaultSchedule), Claim: t.Claim,
		Reproduce: map[string]string{
			"sweep": t.SweepID, "scenario_hash": t.ScenarioHash, "catalog_version": t.CatalogVersion, "agent": t.Agent,
		},
	}
	if t.PromptHash != "" {
		a.Reproduce["prompt_hash"] = t.PromptHash
	}
	if t.Process != "" {
		var p agent.Process
		if err := json.Unmarshal([]byte(t.Process), &p); err != nil {
			return a, fmt.Errorf("trial %s: stored process record is unreadable: %w", t.TrialID, err)
		}
		a.Process = &p
	}
	// The plan's public part names the goal and the tools; the sealed
	// original is not needed (nor its key).
	if sw, err := src.Sweep(ctx, t.SweepID); err == nil {
		var plan scenario.Resolved
		if json.Unmarshal([]byte(sw.PlanJSON), &plan) == nil {
			if sc, ok := plan.Scenario(t.Scenario); ok {
				a.Goal, a.AllowedTools = sc.Goal, sc.Tools
			}
		}
	}
	for _, c := range calls {
		a.Calls = append(a.Calls, artifact.Call{Index: int(c.CallIndex), AtMs: int64(c.AtMS), Tool: c.Tool,
			Args: json.RawMessage(c.Args), Fault: c.FaultClass, OK: c.OK, Code: c.Code, Retryable: c.Retryable, Committed: c.Committed})
	}
	var v grade.Verdict
	if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
		return a, fmt.Errorf("trial %s: stored verdicts are unreadable: %w", t.TrialID, err)
	}
	return artifact.Build(a, v), nil
}
