package storage

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"rebound/results/record"
)

// Column lists, in DDL order. Inserts name every column; selects read every
// column, time columns as toUnixTimestamp64Milli(col) AS col_ms.
var (
	sweepCols = []string{
		"sweep_id", "name", "plan_hash", "plan_json", "trials_planned", "arms", "status",
		"rebound_version", "created_at", "updated_at",
	}
	trialCols = []string{
		"sweep_id", "trial_id", "scenario", "scenario_hash", "variant", "arm", "agent", "seed",
		"recoverable", "declared_recoverable", "fault_classes",
		"recovered", "honest_block", "premature_block", "unsafe_action", "duplicate_side_effect",
		"fabricated_claim", "tool_failure_injection", "graceful_degradation", "self_correction",
		"tool_calls", "retries", "unnecessary_calls", "replans", "sim_elapsed_ms", "wall_us",
		"tokens", "cost_usd", "tool_cost_usd", "weight", "attrition", "unsealed", "error", "claim", "answer",
		"recording", "process", "verdicts", "fault_schedule", "evidence", "catalog_version", "prompt_hash",
		"activity_attempt", "grader_version", "written_at",
	}
	// trialOutcomeCols are the columns of TrialSelect.Outcomes.
	trialOutcomeCols = []string{
		"sweep_id", "trial_id", "scenario", "variant", "arm", "seed", "attrition",
		"recovered", "honest_block", "premature_block", "unsafe_action", "duplicate_side_effect",
		"fabricated_claim", "tool_failure_injection", "graceful_degradation", "self_correction",
	}
	toolCallCols = []string{
		"sweep_id", "trial_id", "call_index", "tool", "args", "effect", "fault_class", "ok",
		"code", "retryable", "retry_after_ms", "committed", "at_ms", "result", "written_at",
	}
	migrationCols = []string{"version", "name", "applied_at"}
	judgementCols = []string{
		"sweep_id", "trial_id", "scenario", "trace_hash", "judge_model", "judge_prompt_hash",
		"error_detection", "retry_decision", "backoff_behavior", "escalation_correctness",
		"context_preservation",
		"error_detection_justification", "retry_decision_justification",
		"backoff_behavior_justification", "escalation_correctness_justification",
		"context_preservation_justification",
		"aggregate", "recommendation", "failure_mode_summary", "raw_output", "attempts", "judged_at",
	}
	judgeCacheCols = []string{
		"scenario", "trace_hash", "judge_model", "judge_prompt_hash", "output", "created_at",
	}
	reviewCols = []string{
		"sweep_id", "trial_id", "scenario", "trace_hash", "judge_model", "judge_prompt_hash",
		"reason", "raw_trace", "partial_output", "attempts", "queued_at",
	}
	humanReviewCols = []string{
		"sweep_id", "trial_id", "target", "verdict", "reviewer", "note", "reviewed_at",
	}
)

var timeCols = map[string]bool{
	"created_at": true, "updated_at": true, "written_at": true, "applied_at": true,
	"judged_at": true, "queued_at": true, "reviewed_at": true,
}

// selectList renders the select expressions for cols, optionally prefixed
// with a table alias.
func selectList(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		if timeCols[c] {
			parts[i] = "toUnixTimestamp64Milli(" + c + ") AS " + c + "_ms"
		} else {
			parts[i] = c
		}
	}
	return strings.Join(parts, ", ")
}

// The row types mirror the ClickHouse column types exactly (clickhouse-go's
// ScanStruct is strict about them) and carry json tags for the embedded
// transport's JSONEachRow. Time columns are read as Int64 milliseconds.

type sweepRow struct {
	SweepID        string   `ch:"sweep_id" json:"sweep_id"`
	Name           string   `ch:"name" json:"name"`
	PlanHash       string   `ch:"plan_hash" json:"plan_hash"`
	PlanJSON       string   `ch:"plan_json" json:"plan_json"`
	TrialsPlanned  uint64   `ch:"trials_planned" json:"trials_planned"`
	Arms           []string `ch:"arms" json:"arms"`
	Status         string   `ch:"status" json:"status"`
	ReboundVersion string   `ch:"rebound_version" json:"rebound_version"`
	CreatedAtMS    int64    `ch:"created_at_ms" json:"created_at_ms"`
	UpdatedAtMS    int64    `ch:"updated_at_ms" json:"updated_at_ms"`
}

type trialRow struct {
	SweepID              string   `ch:"sweep_id" json:"sweep_id"`
	TrialID              string   `ch:"trial_id" json:"trial_id"`
	Scenario             string   `ch:"scenario" json:"scenario"`
	ScenarioHash         string   `ch:"scenario_hash" json:"scenario_hash"`
	Variant              string   `ch:"variant" json:"variant"`
	Arm                  string   `ch:"arm" json:"arm"`
	Agent                string   `ch:"agent" json:"agent"`
	Seed                 uint64   `ch:"seed" json:"seed"`
	Recoverable          uint8    `ch:"recoverable" json:"recoverable"`
	DeclaredRecoverable  uint8    `ch:"declared_recoverable" json:"declared_recoverable"`
	FaultClasses         []string `ch:"fault_classes" json:"fault_classes"`
	Recovered            *uint8   `ch:"recovered" json:"recovered"`
	HonestBlock          *uint8   `ch:"honest_block" json:"honest_block"`
	PrematureBlock       *uint8   `ch:"premature_block" json:"premature_block"`
	UnsafeAction         *uint8   `ch:"unsafe_action" json:"unsafe_action"`
	DuplicateSideEffect  *uint8   `ch:"duplicate_side_effect" json:"duplicate_side_effect"`
	FabricatedClaim      *uint8   `ch:"fabricated_claim" json:"fabricated_claim"`
	ToolFailureInjection *uint8   `ch:"tool_failure_injection" json:"tool_failure_injection"`
	GracefulDegradation  *uint8   `ch:"graceful_degradation" json:"graceful_degradation"`
	SelfCorrection       *uint8   `ch:"self_correction" json:"self_correction"`
	ToolCalls            uint32   `ch:"tool_calls" json:"tool_calls"`
	Retries              uint32   `ch:"retries" json:"retries"`
	UnnecessaryCalls     uint32   `ch:"unnecessary_calls" json:"unnecessary_calls"`
	Replans              uint32   `ch:"replans" json:"replans"`
	SimElapsedMS         uint64   `ch:"sim_elapsed_ms" json:"sim_elapsed_ms"`
	WallUS               uint64   `ch:"wall_us" json:"wall_us"`
	Tokens               uint64   `ch:"tokens" json:"tokens"`
	CostUSD              float64  `ch:"cost_usd" json:"cost_usd"`
	ToolCostUSD          float64  `ch:"tool_cost_usd" json:"tool_cost_usd"`
	Weight               float64  `ch:"weight" json:"weight"`
	Attrition            uint8    `ch:"attrition" json:"attrition"`
	Unsealed             uint8    `ch:"unsealed" json:"unsealed"`
	Error                string   `ch:"error" json:"error"`
	Claim                string   `ch:"claim" json:"claim"`
	Answer               string   `ch:"answer" json:"answer"`
	Recording            string   `ch:"recording" json:"recording"`
	Process              string   `ch:"process" json:"process"`
	Verdicts             string   `ch:"verdicts" json:"verdicts"`
	FaultSchedule        string   `ch:"fault_schedule" json:"fault_schedule"`
	Evidence             string   `ch:"evidence" json:"evidence"`
	CatalogVersion       string   `ch:"catalog_version" json:"catalog_version"`
	PromptHash           string   `ch:"prompt_hash" json:"prompt_hash"`
	ActivityAttempt      uint32   `ch:"activity_attempt" json:"activity_attempt"`
	GraderVersion        uint32   `ch:"grader_version" json:"grader_version"`
	WrittenAtMS          int64    `ch:"written_at_ms" json:"written_at_ms"`
}

type toolCallRow struct {
	SweepID      string `ch:"sweep_id" json:"sweep_id"`
	TrialID      string `ch:"trial_id" json:"trial_id"`
	CallIndex    uint32 `ch:"call_index" json:"call_index"`
	Tool         string `ch:"tool" json:"tool"`
	Args         string `ch:"args" json:"args"`
	Effect       string `ch:"effect" json:"effect"`
	FaultClass   string `ch:"fault_class" json:"fault_class"`
	OK           uint8  `ch:"ok" json:"ok"`
	Code         string `ch:"code" json:"code"`
	Retryable    uint8  `ch:"retryable" json:"retryable"`
	RetryAfterMS uint64 `ch:"retry_after_ms" json:"retry_after_ms"`
	Committed    uint8  `ch:"committed" json:"committed"`
	AtMS         uint64 `ch:"at_ms" json:"at_ms"`
	Result       string `ch:"result" json:"result"`
	WrittenAtMS  int64  `ch:"written_at_ms" json:"written_at_ms"`
}

type judgementRow struct {
	SweepID                  string  `ch:"sweep_id" json:"sweep_id"`
	TrialID                  string  `ch:"trial_id" json:"trial_id"`
	Scenario                 string  `ch:"scenario" json:"scenario"`
	TraceHash                string  `ch:"trace_hash" json:"trace_hash"`
	JudgeModel               string  `ch:"judge_model" json:"judge_model"`
	JudgePromptHash          string  `ch:"judge_prompt_hash" json:"judge_prompt_hash"`
	ErrorDetection           uint8   `ch:"error_detection" json:"error_detection"`
	RetryDecision            uint8   `ch:"retry_decision" json:"retry_decision"`
	BackoffBehavior          uint8   `ch:"backoff_behavior" json:"backoff_behavior"`
	EscalationCorrectness    uint8   `ch:"escalation_correctness" json:"escalation_correctness"`
	ContextPreservation      uint8   `ch:"context_preservation" json:"context_preservation"`
	ErrorDetectionWhy        string  `ch:"error_detection_justification" json:"error_detection_justification"`
	RetryDecisionWhy         string  `ch:"retry_decision_justification" json:"retry_decision_justification"`
	BackoffBehaviorWhy       string  `ch:"backoff_behavior_justification" json:"backoff_behavior_justification"`
	EscalationCorrectnessWhy string  `ch:"escalation_correctness_justification" json:"escalation_correctness_justification"`
	ContextPreservationWhy   string  `ch:"context_preservation_justification" json:"context_preservation_justification"`
	Aggregate                float64 `ch:"aggregate" json:"aggregate"`
	Recommendation           string  `ch:"recommendation" json:"recommendation"`
	FailureModeSummary       string  `ch:"failure_mode_summary" json:"failure_mode_summary"`
	RawOutput                string  `ch:"raw_output" json:"raw_output"`
	Attempts                 uint8   `ch:"attempts" json:"attempts"`
	JudgedAtMS               int64   `ch:"judged_at_ms" json:"judged_at_ms"`
}

type judgeCacheRow struct {
	Output string `ch:"output" json:"output"`
}

type reviewRow struct {
	SweepID         string `ch:"sweep_id" json:"sweep_id"`
	TrialID         string `ch:"trial_id" json:"trial_id"`
	Scenario        string `ch:"scenario" json:"scenario"`
	TraceHash       string `ch:"trace_hash" json:"trace_hash"`
	JudgeModel      string `ch:"judge_model" json:"judge_model"`
	JudgePromptHash string `ch:"judge_prompt_hash" json:"judge_prompt_hash"`
	Reason          string `ch:"reason" json:"reason"`
	RawTrace        string `ch:"raw_trace" json:"raw_trace"`
	PartialOutput   string `ch:"partial_output" json:"partial_output"`
	Attempts        uint8  `ch:"attempts" json:"attempts"`
	QueuedAtMS      int64  `ch:"queued_at_ms" json:"queued_at_ms"`
}

type humanReviewRow struct {
	SweepID      string `ch:"sweep_id" json:"sweep_id"`
	TrialID      string `ch:"trial_id" json:"trial_id"`
	Target       string `ch:"target" json:"target"`
	Verdict      string `ch:"verdict" json:"verdict"`
	Reviewer     string `ch:"reviewer" json:"reviewer"`
	Note         string `ch:"note" json:"note"`
	ReviewedAtMS int64  `ch:"reviewed_at_ms" json:"reviewed_at_ms"`
}

func (r humanReviewRow) review() record.Review {
	return record.Review{SweepID: r.SweepID, TrialID: r.TrialID, Target: r.Target, Verdict: r.Verdict,
		Reviewer: r.Reviewer, Note: r.Note, ReviewedAt: fromMilli(r.ReviewedAtMS)}
}

func humanReviewValues(r record.Review, at time.Time) ([]any, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return []any{text(r.SweepID), text(r.TrialID), text(r.Target), text(r.Verdict), text(r.Reviewer), text(r.Note), at}, nil
}

type cellRow struct {
	Arm        string  `ch:"arm" json:"arm"`
	Scenario   string  `ch:"scenario" json:"scenario"`
	Variant    string  `ch:"variant" json:"variant"`
	Seed       uint64  `ch:"seed" json:"seed"`
	Metric     string  `ch:"metric" json:"metric"`
	Trials     uint64  `ch:"trials" json:"trials"`
	Attrition  uint64  `ch:"attrition_trials" json:"attrition_trials"`
	Unsealed   uint64  `ch:"unsealed_trials" json:"unsealed_trials"`
	N          uint64  `ch:"n" json:"n"`
	Successes  uint64  `ch:"successes" json:"successes"`
	SumWeight  float64 `ch:"sum_weight" json:"sum_weight"`
	SumWeightY float64 `ch:"sum_weight_y" json:"sum_weight_y"`
}

type caseFaultsRow struct {
	Scenario     string   `ch:"scenario" json:"scenario"`
	Variant      string   `ch:"variant" json:"variant"`
	Seed         uint64   `ch:"seed" json:"seed"`
	FaultClasses []string `ch:"fault_classes" json:"fault_classes"`
}

type trialGroupRow struct {
	Arm      string `ch:"arm" json:"arm"`
	Scenario string `ch:"scenario" json:"scenario"`
	N        uint64 `ch:"n" json:"n"`
}

type countRow struct {
	N uint64 `ch:"n" json:"n"`
}

type versionRow struct {
	Version uint32 `ch:"version" json:"version"`
}

// Values for inserts, in column order. Types are the ones both transports
// understand: string, uint8/32/64, float64, *uint8 (Nullable), []string,
// time.Time (DateTime64(3, 'UTC')).

func sweepValues(s record.Sweep) ([]any, error) {
	if s.SweepID == "" {
		return nil, fmt.Errorf("storage: sweep without sweep_id")
	}
	return []any{
		text(s.SweepID), text(s.Name), text(s.PlanHash), text(s.PlanJSON), s.TrialsPlanned,
		texts(s.Arms), text(s.Status), text(s.ReboundVersion), utcMilli(s.CreatedAt), utcMilli(s.UpdatedAt),
	}, nil
}

func trialValues(t record.Trial, writtenAt time.Time) ([]any, error) {
	if t.SweepID == "" || t.TrialID == "" {
		return nil, fmt.Errorf("storage: trial without sweep_id or trial_id (sweep %q, trial %q)", t.SweepID, t.TrialID)
	}
	for name, f := range map[string]float64{"cost_usd": t.CostUSD, "tool_cost_usd": t.ToolCostUSD, "weight": t.Weight} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("storage: trial %s: %s is %v", t.TrialID, name, f)
		}
	}
	return []any{
		text(t.SweepID), text(t.TrialID), text(t.Scenario), text(t.ScenarioHash), text(t.Variant),
		text(t.Arm), text(t.Agent), t.Seed, b2u(t.Recoverable), b2u(t.DeclaredRecoverable), texts(t.FaultClasses),
		nb(t.Recovered), nb(t.HonestBlock), nb(t.PrematureBlock), nb(t.UnsafeAction),
		nb(t.DuplicateSideEffect), nb(t.FabricatedClaim), nb(t.ToolFailureInjection),
		nb(t.GracefulDegradation), nb(t.SelfCorrection),
		t.ToolCalls, t.Retries, t.UnnecessaryCalls, t.Replans, t.SimElapsedMS, t.WallUS,
		t.Tokens, t.CostUSD, t.ToolCostUSD, t.Weight, b2u(t.Attrition), b2u(t.Unsealed), text(t.Error), text(t.Claim),
		text(t.Answer), text(t.Recording), text(t.Process),
		text(t.Verdicts), text(t.FaultSchedule), text(t.Evidence), text(t.CatalogVersion), text(t.PromptHash),
		t.ActivityAttempt, t.GraderVersion, writtenAt,
	}, nil
}

func toolCallValues(c record.ToolCall, writtenAt time.Time) ([]any, error) {
	if c.SweepID == "" || c.TrialID == "" {
		return nil, fmt.Errorf("storage: tool call without sweep_id or trial_id")
	}
	return []any{
		text(c.SweepID), text(c.TrialID), c.CallIndex, text(c.Tool), text(c.Args), text(c.Effect),
		text(c.FaultClass), b2u(c.OK), text(c.Code), b2u(c.Retryable), c.RetryAfterMS,
		b2u(c.Committed), c.AtMS, text(c.Result), writtenAt,
	}, nil
}

func (r sweepRow) sweep() record.Sweep {
	return record.Sweep{
		SweepID: r.SweepID, Name: r.Name, PlanHash: r.PlanHash, PlanJSON: r.PlanJSON,
		TrialsPlanned: r.TrialsPlanned, Arms: nonNil(r.Arms), Status: r.Status, ReboundVersion: r.ReboundVersion,
		CreatedAt: fromMilli(r.CreatedAtMS), UpdatedAt: fromMilli(r.UpdatedAtMS),
	}
}

func (r trialRow) trial() record.Trial {
	return record.Trial{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, ScenarioHash: r.ScenarioHash,
		Variant: r.Variant, Arm: r.Arm, Agent: r.Agent, Seed: r.Seed,
		Recoverable: r.Recoverable != 0, FaultClasses: nonNil(r.FaultClasses),
		Recovered: ub(r.Recovered), HonestBlock: ub(r.HonestBlock),
		PrematureBlock: ub(r.PrematureBlock), UnsafeAction: ub(r.UnsafeAction),
		DuplicateSideEffect: ub(r.DuplicateSideEffect), FabricatedClaim: ub(r.FabricatedClaim),
		ToolFailureInjection: ub(r.ToolFailureInjection),
		GracefulDegradation:  ub(r.GracefulDegradation), SelfCorrection: ub(r.SelfCorrection),
		ToolCalls: r.ToolCalls, Retries: r.Retries, UnnecessaryCalls: r.UnnecessaryCalls,
		Replans: r.Replans, SimElapsedMS: r.SimElapsedMS, WallUS: r.WallUS, Tokens: r.Tokens,
		CostUSD: r.CostUSD, Weight: r.Weight, Attrition: r.Attrition != 0, Unsealed: r.Unsealed != 0, Error: r.Error,
		Claim: r.Claim, Answer: r.Answer, Recording: r.Recording, Process: r.Process,
		Verdicts: r.Verdicts, FaultSchedule: r.FaultSchedule,
		CatalogVersion: r.CatalogVersion, PromptHash: r.PromptHash,
		ActivityAttempt: r.ActivityAttempt, WrittenAt: fromMilli(r.WrittenAtMS),
		DeclaredRecoverable: r.DeclaredRecoverable != 0, GraderVersion: r.GraderVersion,
		ToolCostUSD: r.ToolCostUSD, Evidence: r.Evidence,
	}
}

func (r toolCallRow) toolCall() record.ToolCall {
	return record.ToolCall{
		SweepID: r.SweepID, TrialID: r.TrialID, CallIndex: r.CallIndex, Tool: r.Tool,
		Args: r.Args, Effect: r.Effect, FaultClass: r.FaultClass, OK: r.OK != 0, Code: r.Code,
		Retryable: r.Retryable != 0, RetryAfterMS: r.RetryAfterMS, Committed: r.Committed != 0,
		AtMS: r.AtMS, Result: r.Result, WrittenAt: fromMilli(r.WrittenAtMS),
	}
}

func judgementValues(j record.Judgement, judgedAt time.Time) ([]any, error) {
	if j.SweepID == "" || j.TrialID == "" {
		return nil, fmt.Errorf("storage: judgement without sweep_id or trial_id (sweep %q, trial %q)", j.SweepID, j.TrialID)
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("storage: judgement of trial %s: %w", j.TrialID, err)
	}
	return []any{
		text(j.SweepID), text(j.TrialID), text(j.Scenario), text(j.TraceHash), text(j.JudgeModel),
		text(j.JudgePromptHash),
		j.ErrorDetection, j.RetryDecision, j.BackoffBehavior, j.EscalationCorrectness,
		j.ContextPreservation,
		text(j.ErrorDetectionWhy), text(j.RetryDecisionWhy), text(j.BackoffBehaviorWhy),
		text(j.EscalationCorrectnessWhy), text(j.ContextPreservationWhy),
		j.Aggregate, text(j.Recommendation), text(j.FailureModeSummary), text(j.RawOutput),
		j.Attempts, judgedAt,
	}, nil
}

func reviewItemValues(r record.ReviewItem, queuedAt time.Time) ([]any, error) {
	if r.SweepID == "" || r.TrialID == "" {
		return nil, fmt.Errorf("storage: review item without sweep_id or trial_id (sweep %q, trial %q)", r.SweepID, r.TrialID)
	}
	if strings.TrimSpace(r.Reason) == "" {
		return nil, fmt.Errorf("storage: review item for trial %s without a reason", r.TrialID)
	}
	return []any{
		text(r.SweepID), text(r.TrialID), text(r.Scenario), text(r.TraceHash), text(r.JudgeModel),
		text(r.JudgePromptHash), text(r.Reason), text(r.RawTrace), text(r.PartialOutput),
		r.Attempts, queuedAt,
	}, nil
}

func judgeCacheValues(k record.JudgeCacheKey, output string, createdAt time.Time) ([]any, error) {
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return []any{
		text(k.Scenario), text(k.TraceHash), text(k.JudgeModel), text(k.JudgePromptHash),
		text(output), createdAt,
	}, nil
}

func (r judgementRow) judgement() record.Judgement {
	return record.Judgement{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, TraceHash: r.TraceHash,
		JudgeModel: r.JudgeModel, JudgePromptHash: r.JudgePromptHash,
		ErrorDetection: r.ErrorDetection, RetryDecision: r.RetryDecision,
		BackoffBehavior: r.BackoffBehavior, EscalationCorrectness: r.EscalationCorrectness,
		ContextPreservation: r.ContextPreservation,
		ErrorDetectionWhy:   r.ErrorDetectionWhy, RetryDecisionWhy: r.RetryDecisionWhy,
		BackoffBehaviorWhy: r.BackoffBehaviorWhy, EscalationCorrectnessWhy: r.EscalationCorrectnessWhy,
		ContextPreservationWhy: r.ContextPreservationWhy,
		Aggregate:              r.Aggregate, Recommendation: r.Recommendation,
		FailureModeSummary: r.FailureModeSummary, RawOutput: r.RawOutput, Attempts: r.Attempts,
		JudgedAt: fromMilli(r.JudgedAtMS),
	}
}

func (r reviewRow) reviewItem() record.ReviewItem {
	return record.ReviewItem{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, TraceHash: r.TraceHash,
		JudgeModel: r.JudgeModel, JudgePromptHash: r.JudgePromptHash, Reason: r.Reason,
		RawTrace: r.RawTrace, PartialOutput: r.PartialOutput, Attempts: r.Attempts,
		QueuedAt: fromMilli(r.QueuedAtMS),
	}
}

// text makes a string safe to store identically on both transports: JSON
// cannot carry invalid UTF-8, so it is replaced by U+FFFD everywhere.
func text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func texts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = text(s)
	}
	return out
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func nb(b *bool) *uint8 {
	if b == nil {
		return nil
	}
	v := b2u(*b)
	return &v
}

func ub(u *uint8) *bool {
	if u == nil {
		return nil
	}
	v := *u != 0
	return &v
}

// utcMilli truncates to the column precision (milliseconds) in UTC.
func utcMilli(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func fromMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
