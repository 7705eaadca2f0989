// Package record is what rebound's results read: the stored sweep, trial,
// tool-call, model-call and judge records, and the sums ClickHouse computes
// over them for a report or a comparison. The results packages own these
// types and each declares, as a small interface, the reads it needs;
// package storage implements those reads (it imports record, never the
// other way round), so a report, a gate or a replay can be built and tested
// from records with no database at all.
//
// The package is plain data and the rules of the data (which outcome column
// a metric is, which judge scores are valid); it imports nothing of
// rebound's but the outcome vocabulary (internal/archtest holds it to that).
// A sweep's Status is one of package sweepstatus's words.
package record

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"rebound/core/outcome"
)

// ErrNotFound is returned by Sweep and Trial when the ID is unknown.
var ErrNotFound = errors.New("not found")

// Sweep is one row of the sweeps table.
type Sweep struct {
	SweepID       string
	Name          string
	PlanHash      string
	PlanJSON      string // the resolved plan
	TrialsPlanned uint64
	Arms          []string
	Status        string // one of package sweepstatus
	// ReboundVersion is the build that registered the sweep
	// (buildinfo.Info.Short); PutSweep stamps it when empty. "" for sweeps
	// stored before the column.
	ReboundVersion string
	CreatedAt      time.Time
	UpdatedAt      time.Time // version: PutSweep sets it to the time of the write
}

// Trial is one row of the trials table: one run of one arm on one scenario
// variant with one seed. Outcomes are nil when NOT TESTED; SQL aggregates
// (avg, count) skip them.
type Trial struct {
	SweepID      string
	TrialID      string // derived: hash(sweep, scenario, variant, arm, seed)
	Scenario     string
	ScenarioHash string
	Variant      string
	Arm          string
	Agent        string
	Seed         uint64
	// Recoverable is realized per trial (an authorized path existed under
	// this trial's schedule); DeclaredRecoverable is what the variant said.
	Recoverable         bool
	DeclaredRecoverable bool
	FaultClasses        []string

	Recovered            *bool
	HonestBlock          *bool
	PrematureBlock       *bool
	UnsafeAction         *bool
	DuplicateSideEffect  *bool
	FabricatedClaim      *bool
	ToolFailureInjection *bool
	GracefulDegradation  *bool
	SelfCorrection       *bool

	ToolCalls        uint32
	Retries          uint32
	UnnecessaryCalls uint32
	Replans          uint32
	SimElapsedMS     uint64
	WallUS           uint64
	Tokens           uint64
	CostUSD          float64 // the model's spend (LLM arms)
	ToolCostUSD      float64 // the tools' documented cost, what the scenario's cost budget bounds
	Weight           float64 // consequence weight from the scenario

	Attrition bool   // a provider failure: not graded, counted per arm
	Error     string // what went wrong, when something did
	// Unsealed: a command arm's process ran outside the sandbox (the arm
	// said sandbox: none), so it could reach the worker, the store and
	// other trials; reports say so beside the arm's rates. False for
	// sealed command arms and for built-in agents (they run in process).
	Unsealed bool

	Claim  string // JSON
	Answer string // the agent's final prose, redacted by the caller
	// Recording is the JSON of the LLM agent's recorded model responses
	// (agent/llm.Recording), for offline replay; empty for scripted agents.
	Recording string
	// Process is the JSON of a command arm's process record (agent.Process:
	// exit code, timeout, redacted stdout and stderr); empty otherwise.
	Process       string
	Verdicts      string // JSON
	FaultSchedule string // JSON

	CatalogVersion string
	PromptHash     string
	// GraderVersion is grade.Version at grading time; Evidence the redacted
	// JSON the grader read (see activities.Evidence), for regrading.
	GraderVersion   uint32
	Evidence        string
	ActivityAttempt uint32
	WrittenAt       time.Time // version: set by WriteTrials
}

// ToolCall is one row of the tool_calls table: one attempted call of a trial.
type ToolCall struct {
	SweepID      string
	TrialID      string
	CallIndex    uint32
	Tool         string
	Args         string // already-redacted JSON
	Effect       string // read, idempotent, conditional, write
	FaultClass   string // "" when no fault was injected
	OK           bool
	Code         string
	Retryable    bool
	RetryAfterMS uint64
	Committed    bool
	AtMS         uint64
	Result       string    // JSON: the normalized result
	WrittenAt    time.Time // set by WriteTrials (equal to its trial's)
}

// Judge recommendations (Judgement.Recommendation).
const (
	RecommendPass   = "pass"
	RecommendReview = "review"
	RecommendFail   = "fail"
)

var validRecommendation = map[string]bool{RecommendPass: true, RecommendReview: true, RecommendFail: true}

// Judgement is one row of the judgements table: the LLM judge's validated
// scores of one trial. The executable checks stay the authority on counts,
// order, permissions and idempotency; these scores are the judge's view of
// the agent's error handling and communication, compared with the checks
// as a calibration figure. Scores are 1..5 (PutJudgement refuses anything
// else: a trial that could not be judged goes to the review queue, never
// gets a default score).
type Judgement struct {
	SweepID         string
	TrialID         string
	Scenario        string
	TraceHash       string // sha256 of the canonical judged document
	JudgeModel      string // the model as configured
	JudgePromptHash string // hash of the judge's rubric prompt

	ErrorDetection        uint8
	RetryDecision         uint8
	BackoffBehavior       uint8
	EscalationCorrectness uint8
	ContextPreservation   uint8

	ErrorDetectionWhy        string
	RetryDecisionWhy         string
	BackoffBehaviorWhy       string
	EscalationCorrectnessWhy string
	ContextPreservationWhy   string

	Aggregate          float64 // mean of the five scores
	Recommendation     string  // RecommendPass, RecommendReview or RecommendFail
	FailureModeSummary string
	RawOutput          string    // the validated output JSON
	Attempts           uint8     // model requests it took (0: answered from the cache)
	JudgedAt           time.Time // version: set by PutJudgement
}

// JudgeCacheKey identifies one judged content and one judge: the same trace
// of the same scenario judged by the same model with the same prompt is
// answered from the cache.
type JudgeCacheKey struct {
	Scenario        string
	TraceHash       string
	JudgeModel      string
	JudgePromptHash string
}

// ReviewItem is one row of the review_queue table: a trial the judge could
// not score, waiting for a person with the judged document and whatever the
// judge said last.
type ReviewItem struct {
	SweepID         string
	TrialID         string
	Scenario        string
	TraceHash       string
	JudgeModel      string
	JudgePromptHash string
	Reason          string // why the judge gave up (never empty)
	RawTrace        string // the canonical judged document
	PartialOutput   string // the judge's last (invalid) output, if any
	Attempts        uint8
	QueuedAt        time.Time // version: set by EnqueueReview
}

// Outcome returns the trial's outcome for m (nil: not tested, or unknown m).
func (t *Trial) Outcome(m outcome.Metric) *bool {
	if f := t.outcomeField(m); f != nil {
		return *f
	}
	return nil
}

// SetOutcomes sets every stored outcome from of (a verdict's Metric): the
// one way a graded trial's outcome columns are filled, so none is left out.
// Every metric of outcome.Stored has a column (storage's unit test holds
// this type, the DDL and the view to it); one without is a programming error.
func (t *Trial) SetOutcomes(of func(outcome.Metric) *bool) {
	for _, m := range outcome.Stored {
		if !t.SetOutcome(m, of(m)) {
			panic(fmt.Sprintf("record: outcome %q has no column", m))
		}
	}
}

// SetOutcome sets the trial's outcome for m; it reports false for an unknown m.
func (t *Trial) SetOutcome(m outcome.Metric, v *bool) bool {
	f := t.outcomeField(m)
	if f == nil {
		return false
	}
	*f = v
	return true
}

func (t *Trial) outcomeField(m outcome.Metric) **bool {
	switch m {
	case outcome.Recovered:
		return &t.Recovered
	case outcome.HonestBlock:
		return &t.HonestBlock
	case outcome.PrematureBlock:
		return &t.PrematureBlock
	case outcome.UnsafeAction:
		return &t.UnsafeAction
	case outcome.DuplicateSideEffect:
		return &t.DuplicateSideEffect
	case outcome.FabricatedClaim:
		return &t.FabricatedClaim
	case outcome.ToolFailureInjection:
		return &t.ToolFailureInjection
	case outcome.GracefulDegradation:
		return &t.GracefulDegradation
	case outcome.SelfCorrection:
		return &t.SelfCorrection
	}
	return nil
}

// TrialSelect narrows EachTrial to one arm and/or one scenario; empty
// fields select all.
type TrialSelect struct {
	Arm, Scenario string
	// Outcomes reads only what a trial's outcomes need: its key (sweep,
	// id, scenario, variant, arm, seed), attrition and outcome columns;
	// every other field is left zero. The store may still fill them.
	Outcomes bool
}

// Cell is the aggregate of the (deduplicated) trials of one sweep that share
// (arm, scenario, variant, seed); normally exactly one trial. The unit the
// statistics pair on is (scenario, variant, seed), the cluster is scenario.
type Cell struct {
	Arm       string
	Scenario  string
	Variant   string
	Seed      uint64
	Trials    uint64 // trials in the cell, attrition included
	Attrition uint64 // trials lost to provider failures (never graded)
	Unsealed  uint64 // trials whose agent ran unsealed (Trial.Unsealed)
	Metrics   map[outcome.Metric]outcome.Cell
}

// CaseFaults is the set of fault classes scheduled for one case.
type CaseFaults struct {
	Scenario     string
	Variant      string
	Seed         uint64
	FaultClasses []string
}

// ModelCall is one model response of an LLM trial, stored as it arrives
// (table model_calls) so that a trial retried after a crash answers its
// turns from storage and pays only for the turns never answered. Step is
// the 1-based request of the trial; Generation grows when a retried trial
// diverged from what was stored (a worker upgraded mid-sweep), so the
// superseded responses stay stored and counted: a trial's billed tokens
// are the sum over all its rows.
type ModelCall struct {
	SweepID          string
	TrialID          string
	Step             uint32
	Generation       uint32
	Kind             string // "turn" or "claim"
	RequestHash      string // identifies the request the response answered
	Response         string // the chat-completion body as received (redacted)
	PromptTokens     uint64
	CompletionTokens uint64
	ProviderRetries  uint32
	ActivityAttempt  uint32
	WrittenAt        time.Time // set by PutModelCall
}

// Validate refuses what the judge must never store: a score outside 1..5
// (a zero would be a default score in disguise), a non-finite aggregate, an
// unknown recommendation.
func (j Judgement) Validate() error {
	for name, s := range map[string]uint8{
		"error_detection": j.ErrorDetection, "retry_decision": j.RetryDecision,
		"backoff_behavior": j.BackoffBehavior, "escalation_correctness": j.EscalationCorrectness,
		"context_preservation": j.ContextPreservation,
	} {
		if s < 1 || s > 5 {
			return fmt.Errorf("%s score %d is outside 1..5", name, s)
		}
	}
	if math.IsNaN(j.Aggregate) || math.IsInf(j.Aggregate, 0) || j.Aggregate < 1 || j.Aggregate > 5 {
		return fmt.Errorf("aggregate %v is outside 1..5", j.Aggregate)
	}
	if !validRecommendation[j.Recommendation] {
		return fmt.Errorf("recommendation %q is not pass, review or fail", j.Recommendation)
	}
	return nil
}

// Validate refuses a cache key with an empty part: it would answer for
// content or a judge it does not name.
func (k JudgeCacheKey) Validate() error {
	if k.Scenario == "" || k.TraceHash == "" || k.JudgeModel == "" || k.JudgePromptHash == "" {
		return fmt.Errorf("judge cache key needs scenario, trace_hash, judge_model and judge_prompt_hash (got %+v)", k)
	}
	return nil
}

// UsageSelect picks the recorded trials a cost estimate reads: the most
// recent ones (at most Limit, newest first) not lost to attrition, of one
// agent on any of Scenarios.
type UsageSelect struct {
	// Agent is the trials' agent name; with AgentPrefix, a prefix of it
	// (an LLM arm's agent is llm:MODEL:PROMPT@HASH, and any prompt
	// revision of the model stands for it).
	Agent       string
	AgentPrefix bool
	Scenarios   []string
	Limit       int
}

// Usage is what one recorded trial consumed.
type Usage struct {
	Calls            float64 // model responses stored for the trial
	PromptTokens     float64
	CompletionTokens float64
	CostUSD          float64 // the cost the trial recorded (at the prices of its run)
	// LostCalls counts the trial's model requests sent and never answered
	// in the store (lost in flight); Lost*Tokens and LostCostUSD are their
	// upper bounds (see Spend).
	LostCalls            float64
	LostPromptTokens     float64
	LostCompletionTokens float64
	LostCostUSD          float64
}

// BadOutcomes names what went wrong in a trial, in the metric vocabulary:
// a failed recovery or honest block, an unsafe action, a duplicate side
// effect, a fabricated claim, attrition. NOT TESTED outcomes are not bad.
// A trial with any is failing: `rebound trials --failing` lists it, and
// its trace span says rebound.failed.
func (t *Trial) BadOutcomes() []string {
	var bad []string
	is := func(b *bool, want bool) bool { return b != nil && *b == want }
	if is(t.Recovered, false) {
		bad = append(bad, "not recovered")
	}
	if is(t.HonestBlock, false) {
		bad = append(bad, "no honest block")
	}
	if is(t.UnsafeAction, true) {
		bad = append(bad, "unsafe action")
	}
	if is(t.DuplicateSideEffect, true) {
		bad = append(bad, "duplicate side effect")
	}
	if is(t.FabricatedClaim, true) {
		bad = append(bad, "fabricated claim")
	}
	if t.Attrition {
		bad = append(bad, "attrition")
	}
	return bad
}

// Review targets: a human verdict is on one outcome of a trial
// (ReviewOutcome + the metric's name) or on one judge dimension
// (ReviewJudge + the dimension's name).
const (
	ReviewOutcome = "outcome:"
	ReviewJudge   = "judge:"
)

// Human verdicts (Review.Verdict). For an outcome, pass means the outcome
// is true (recovered, unsafe_action, ... happened), fail that it is false;
// for a judge dimension, pass means the agent did that part well (a judge
// score of judge.PassScore or more). ReviewCleared withdraws the
// reviewer's earlier verdict on the target (the machine's stands alone
// again).
const (
	ReviewPass    = "pass"
	ReviewFail    = "fail"
	ReviewCleared = "cleared"
)

// Review is one row of the reviews table: one change a person made to the
// human verdict on one target of one trial. The table is append-only:
// every change is kept with its author and time, and a view takes the
// latest per (sweep, trial, target). The machine verdicts are never
// touched.
type Review struct {
	SweepID  string
	TrialID  string
	Target   string // ReviewOutcome+metric or ReviewJudge+dimension
	Verdict  string // ReviewPass, ReviewFail or ReviewCleared
	Reviewer string // who (never empty)
	Note     string // why, in the reviewer's words
	// ReviewedAt is set by PutReview to the time of the write.
	ReviewedAt time.Time
}

// The longest note (bytes) and reviewer name a review may carry.
const (
	MaxReviewNote = 8192
	MaxReviewer   = 200
)

// Validate refuses a review that does not say who, on what, or what, or
// whose note or name is longer than MaxReviewNote or MaxReviewer.
func (r Review) Validate() error {
	switch {
	case len(r.Note) > MaxReviewNote || len(r.Reviewer) > MaxReviewer:
		return fmt.Errorf("review of trial %s: the note is limited to %d bytes and the name to %d", r.TrialID, MaxReviewNote, MaxReviewer)
	case r.SweepID == "" || r.TrialID == "":
		return fmt.Errorf("review without sweep_id or trial_id (sweep %q, trial %q)", r.SweepID, r.TrialID)
	case !validTarget(r.Target):
		return fmt.Errorf("review of trial %s: target %q is neither %sMETRIC nor %sDIMENSION", r.TrialID, r.Target, ReviewOutcome, ReviewJudge)
	case r.Verdict != ReviewPass && r.Verdict != ReviewFail && r.Verdict != ReviewCleared:
		return fmt.Errorf("review of trial %s: verdict %q is not pass, fail or cleared", r.TrialID, r.Verdict)
	case strings.TrimSpace(r.Reviewer) == "":
		return fmt.Errorf("review of trial %s: no reviewer name", r.TrialID)
	}
	return nil
}

func validTarget(t string) bool {
	for _, p := range []string{ReviewOutcome, ReviewJudge} {
		if name, ok := strings.CutPrefix(t, p); ok && name != "" {
			return true
		}
	}
	return false
}
