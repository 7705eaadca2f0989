package activities

import (
	"encoding/json"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/results/record"
)

// Rows converts a trial result into its storage rows, redacting every text
// column (arguments, results, the claim, the answer, the recording, the
// verdicts and the fault schedule) before anything is persisted. JSON
// columns are redacted as values, so a secret split across JSON escapes is
// still found and idempotency keys are hashed wherever they appear.
func Rows(r *trial.Result, red *redact.Redactor) (record.Trial, []record.ToolCall) {
	v := r.Verdict
	t := record.Trial{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, ScenarioHash: r.ScenarioHash,
		Variant: r.Variant, Arm: r.Arm, Agent: r.Agent, Seed: r.Seed, Recoverable: r.Recoverable,
		DeclaredRecoverable: r.DeclaredRecoverable, GraderVersion: uint32(r.GraderVersion),
		ToolCostUSD: r.ToolCostUSD, Evidence: EvidenceJSON(r.Evidence(), red),
		FaultClasses: r.Schedule.Classes(),
		ToolCalls:    uint32(v.Counts.ToolCalls), Retries: uint32(v.Counts.Retries),
		UnnecessaryCalls: uint32(v.Counts.UnnecessaryCalls), Replans: uint32(v.Counts.Replans),
		SimElapsedMS: uint64(r.EndMs), WallUS: uint64(r.Wall.Microseconds()),
		Tokens: uint64(r.Outcome.Tokens), CostUSD: r.Outcome.Cost, Weight: r.Weight,
		Claim:          redactClaim(red, r.Outcome.Claim),
		Answer:         red.String(r.Outcome.Answer),
		Recording:      redactText(red, r.Recording),
		Process:        processJSON(r.Outcome.Process, red),
		Unsealed:       r.Outcome.Process != nil && r.Outcome.Process.Sandbox == agent.SandboxNone,
		PromptHash:     r.PromptHash,
		Verdicts:       red.JSON(v),
		FaultSchedule:  red.JSON(r.Schedule),
		CatalogVersion: r.CatalogVersion,
	}
	if t.FaultClasses == nil {
		t.FaultClasses = []string{}
	}
	t.SetOutcomes(v.Metric)
	committed := map[int]bool{}
	for _, c := range r.Ledger.Commits {
		committed[c.Call] = true
	}
	calls := make([]record.ToolCall, 0, len(r.Ledger.Attempts))
	for _, a := range r.Ledger.Attempts {
		fault := ""
		if a.Fault != nil {
			fault = string(a.Fault.Class)
		}
		calls = append(calls, record.ToolCall{
			SweepID: r.SweepID, TrialID: r.TrialID, CallIndex: uint32(a.Index), Tool: red.String(a.Tool),
			Args: red.JSON(a.Args), Effect: string(a.Effect), FaultClass: fault, OK: a.Result.OK,
			Code: red.String(a.Result.Code), Retryable: a.Result.Retryable, RetryAfterMS: uint64(max(a.Result.RetryAfterMs, 0)),
			Committed: committed[a.Index], AtMS: uint64(a.AtMs), Result: red.JSON(a.Result),
		})
	}
	return t, calls
}

// AttritionRow is the row of a trial lost to the provider (429s, 5xx,
// timeouts that outlived the retries): it is counted per arm as attrition
// and never graded, so every outcome stays NULL.
func AttritionRow(spec trial.Spec, agentName string, cause error, red *redact.Redactor) record.Trial {
	return record.Trial{
		SweepID: spec.SweepID, TrialID: spec.ID(), Scenario: spec.Scenario.Name, ScenarioHash: spec.Scenario.Hash,
		Variant: spec.Variant.Name, Arm: spec.Arm.Name, Agent: agentName, Seed: spec.Seed,
		Recoverable: spec.Variant.Recoverable, DeclaredRecoverable: spec.Variant.Recoverable,
		FaultClasses: []string{}, Weight: spec.Scenario.WeightOf(spec.Variant),
		Attrition: true, Error: red.String(cause.Error()), Claim: "", Verdicts: "{}", FaultSchedule: "{}",
		Unsealed: spec.Arm.Agent == scenario.AgentCommand && spec.Arm.Sandbox == agent.SandboxNone,
	}
}

// processJSON renders a command arm's process record for storage, its
// output redacted like every other column (the agent already removed the
// values of its secret variables).
func processJSON(p *agent.Process, red *redact.Redactor) string {
	if p == nil {
		return ""
	}
	cp := *p
	cp.Stdout, cp.Stderr = red.String(cp.Stdout), red.String(cp.Stderr)
	cp.Command = make([]string, len(p.Command))
	for i, s := range p.Command {
		cp.Command[i] = red.String(s)
	}
	return mustJSON(cp)
}

// EvidenceJSON renders a trial's grading evidence for storage, redacted
// like every other column: secret shapes removed, idempotency keys replaced
// by their keyed hashes (consistently, so a regrade that hashes the
// scenario's own arguments with the same redactor still matches them).
func EvidenceJSON(ev trial.Evidence, red *redact.Redactor) string { return red.JSON(ev) }

// redactClaim redacts the agent's claim: as JSON when it is JSON (it is
// graded verbatim, so it can be anything), as text otherwise.
func redactClaim(red *redact.Redactor, claim string) string {
	if claim == "" {
		return ""
	}
	return red.JSONText(claim)
}

// redactText redacts a JSON document (the LLM recording) as values.
func redactText(red *redact.Redactor, doc string) string {
	if doc == "" {
		return ""
	}
	return red.JSONText(doc)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"unserializable"}`
	}
	return string(b)
}
