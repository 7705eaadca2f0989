package activities

import (
	"encoding/json"

	"rebound/grade"
	"rebound/redact"
	"rebound/storage"
	"rebound/trial"
)

// Rows converts a trial result into its storage rows, redacting arguments,
// results, the claim and the schedule before anything is persisted.
func Rows(r *trial.Result, red *redact.Redactor) (storage.Trial, []storage.ToolCall) {
	v := r.Verdict
	t := storage.Trial{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, ScenarioHash: r.ScenarioHash,
		Variant: r.Variant, Arm: r.Arm, Agent: r.Agent, Seed: r.Seed, Recoverable: r.Recoverable,
		DeclaredRecoverable: r.DeclaredRecoverable, GraderVersion: uint32(r.GraderVersion),
		ToolCostUSD: r.ToolCostUSD, Evidence: EvidenceJSON(r.Evidence(), red),
		FaultClasses: r.Schedule.Classes(),
		ToolCalls:    uint32(v.Counts.ToolCalls), Retries: uint32(v.Counts.Retries),
		UnnecessaryCalls: uint32(v.Counts.UnnecessaryCalls), Replans: uint32(v.Counts.Replans),
		SimElapsedMS: uint64(r.EndMs), WallUS: uint64(r.Wall.Microseconds()),
		Tokens: uint64(r.Outcome.Tokens), CostUSD: r.Outcome.Cost, Weight: r.Weight,
		Claim:          red.String(r.Outcome.Claim),
		Answer:         red.String(r.Outcome.Answer),
		Recording:      red.String(r.Recording),
		PromptHash:     r.PromptHash,
		Verdicts:       red.String(mustJSON(v)),
		FaultSchedule:  mustJSON(r.Schedule),
		CatalogVersion: r.CatalogVersion,
	}
	if t.FaultClasses == nil {
		t.FaultClasses = []string{}
	}
	for _, m := range grade.Metrics {
		t.SetOutcome(storage.Metric(m), v.Metric(m))
	}
	committed := map[int]bool{}
	for _, c := range r.Ledger.Commits {
		committed[c.Call] = true
	}
	calls := make([]storage.ToolCall, 0, len(r.Ledger.Attempts))
	for _, a := range r.Ledger.Attempts {
		fault := ""
		if a.Fault != nil {
			fault = string(a.Fault.Class)
		}
		res := a.Result
		res.Data, _ = red.Value(res.Data).(map[string]any)
		res.Message = red.String(res.Message)
		args, _ := red.Value(a.Args).(map[string]any)
		calls = append(calls, storage.ToolCall{
			SweepID: r.SweepID, TrialID: r.TrialID, CallIndex: uint32(a.Index), Tool: a.Tool,
			Args: mustJSON(args), Effect: string(a.Effect), FaultClass: fault, OK: a.Result.OK,
			Code: a.Result.Code, Retryable: a.Result.Retryable, RetryAfterMS: uint64(max(a.Result.RetryAfterMs, 0)),
			Committed: committed[a.Index], AtMS: uint64(a.AtMs), Result: mustJSON(res),
		})
	}
	return t, calls
}

// AttritionRow is the row of a trial lost to the provider (429s, 5xx,
// timeouts that outlived the retries): it is counted per arm as attrition
// and never graded, so every outcome stays NULL.
func AttritionRow(spec trial.Spec, agentName string, cause error, red *redact.Redactor) storage.Trial {
	return storage.Trial{
		SweepID: spec.SweepID, TrialID: spec.ID(), Scenario: spec.Scenario.Name, ScenarioHash: spec.Scenario.Hash,
		Variant: spec.Variant.Name, Arm: spec.Arm.Name, Agent: agentName, Seed: spec.Seed,
		Recoverable: spec.Variant.Recoverable, DeclaredRecoverable: spec.Variant.Recoverable,
		FaultClasses: []string{}, Weight: spec.Scenario.EffectiveWeight(),
		Attrition: true, Error: red.String(cause.Error()), Claim: "", Verdicts: "{}", FaultSchedule: "{}",
	}
}

// EvidenceJSON renders a trial's grading evidence for storage, redacted
// like every other column: secret shapes removed, idempotency keys replaced
// by their keyed hashes (consistently, so a regrade that hashes the
// scenario's own arguments with the same redactor still matches them).
func EvidenceJSON(ev trial.Evidence, red *redact.Redactor) string {
	var generic any
	if err := json.Unmarshal([]byte(mustJSON(ev)), &generic); err != nil {
		return "{}"
	}
	return mustJSON(red.Value(generic))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"unserializable"}`
	}
	return string(b)
}
