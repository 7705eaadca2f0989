// Package judgestore connects the LLM judge to storage: the judge_cache
// table as the judge's Cache, stored trials as the judge's Trace, results
// written to judgements or the review queue, and stored judgements paired
// with verdicts for the agreement report. Package judge itself reads and
// writes nothing.
package judgestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/judge"
	"rebound/results/record"
)

// CacheTable is the judge_cache table; storage.Store implements it.
type CacheTable interface {
	CachedJudgement(ctx context.Context, key record.JudgeCacheKey) (output string, found bool, err error)
	PutCachedJudgement(ctx context.Context, key record.JudgeCacheKey, output string) error
}

// StoreCache is the judge.Cache over the store's judge_cache table.
type StoreCache struct {
	Store CacheTable
}

func (c StoreCache) Get(ctx context.Context, key judge.CacheKey) (string, bool, error) {
	return c.Store.CachedJudgement(ctx, storeKey(key))
}

func (c StoreCache) Put(ctx context.Context, key judge.CacheKey, output string) error {
	return c.Store.PutCachedJudgement(ctx, storeKey(key), output)
}

func storeKey(k judge.CacheKey) record.JudgeCacheKey {
	return record.JudgeCacheKey{Scenario: k.Scenario, TraceHash: k.TraceHash, JudgeModel: k.Model, JudgePromptHash: k.PromptHash}
}

// Judgement is the judgements row of a Judged result.
func Judgement(r judge.Result, sweepID, trialID string) (record.Judgement, error) {
	if r.Status != judge.Judged {
		return record.Judgement{}, fmt.Errorf("judge: trial %s was not judged (%s): it belongs in the review queue", trialID, r.Status)
	}
	o := r.Output
	return record.Judgement{
		SweepID: sweepID, TrialID: trialID, Scenario: r.Scenario, TraceHash: r.TraceHash,
		JudgeModel: r.Model, JudgePromptHash: r.PromptHash,
		ErrorDetection:           uint8(o.ErrorDetection.Score),
		RetryDecision:            uint8(o.RetryDecision.Score),
		BackoffBehavior:          uint8(o.BackoffBehavior.Score),
		EscalationCorrectness:    uint8(o.EscalationCorrectness.Score),
		ContextPreservation:      uint8(o.ContextPreservation.Score),
		ErrorDetectionWhy:        o.ErrorDetection.Justification,
		RetryDecisionWhy:         o.RetryDecision.Justification,
		BackoffBehaviorWhy:       o.BackoffBehavior.Justification,
		EscalationCorrectnessWhy: o.EscalationCorrectness.Justification,
		ContextPreservationWhy:   o.ContextPreservation.Justification,
		Aggregate:                o.AggregateScore,
		Recommendation:           o.Recommendation,
		FailureModeSummary:       o.FailureModeSummary,
		RawOutput:                r.RawOutput,
		Attempts:                 uint8(min(r.Attempts, math.MaxUint8)),
	}, nil
}

// ReviewItem is the review_queue row of a ReviewNeeded result.
func ReviewItem(r judge.Result, sweepID, trialID string) (record.ReviewItem, error) {
	if r.Status != judge.ReviewNeeded {
		return record.ReviewItem{}, fmt.Errorf("judge: trial %s was judged: it belongs in judgements", trialID)
	}
	return record.ReviewItem{
		SweepID: sweepID, TrialID: trialID, Scenario: r.Scenario, TraceHash: r.TraceHash,
		JudgeModel: r.Model, JudgePromptHash: r.PromptHash, Reason: r.Reason,
		RawTrace: r.Document, PartialOutput: r.PartialOutput,
		Attempts: uint8(min(r.Attempts, math.MaxUint8)),
	}, nil
}

// ResultWriter writes judgements and review items; storage.Store
// implements it.
type ResultWriter interface {
	PutJudgement(ctx context.Context, j record.Judgement) error
	EnqueueReview(ctx context.Context, item record.ReviewItem) error
}

// Record writes a result where it belongs: a Judged one to judgements, a
// ReviewNeeded one to the review queue. Both writes are idempotent (the
// latest write of a (sweep, trial) wins), so an activity may retry it.
func Record(ctx context.Context, st ResultWriter, sweepID, trialID string, r judge.Result) error {
	switch r.Status {
	case judge.Judged:
		j, err := Judgement(r, sweepID, trialID)
		if err != nil {
			return err
		}
		return st.PutJudgement(ctx, j)
	case judge.ReviewNeeded:
		item, err := ReviewItem(r, sweepID, trialID)
		if err != nil {
			return err
		}
		return st.EnqueueReview(ctx, item)
	}
	return errors.New("judge: Record: a result without a status (Score failed?)")
}

// TraceFromStored builds the trace from a trial's stored rows (already
// redacted by the writer): every call with the full result the agent saw
// (message, retry-after, data), the trial's answer and claim. goal is the
// scenario's goal (from the sweep's plan).
func TraceFromStored(goal string, t record.Trial, calls []record.ToolCall) judge.Trace {
	tr := judge.Trace{Goal: goal, Answer: t.Answer, Claim: t.Claim, Calls: make([]judge.TraceCall, 0, len(calls))}
	for _, c := range calls {
		tc := judge.TraceCall{Index: int(c.CallIndex), AtMs: int64(c.AtMS), Tool: c.Tool, OK: c.OK, Code: c.Code,
			RetryAfterMs: int64(c.RetryAfterMS), Fault: c.FaultClass, Committed: c.Committed}
		if c.Args != "" {
			tc.Args = json.RawMessage(c.Args)
		}
		var res storedResult
		if c.Result != "" && json.Unmarshal([]byte(c.Result), &res) == nil {
			tc.Message, tc.Uncertain = res.Message, res.Uncertain
			tc.Data, tc.Evidence = nonNull(res.Data), nonNull(res.Evidence)
			if res.RetryAfterMs > 0 {
				tc.RetryAfterMs = res.RetryAfterMs
			}
		}
		if !c.OK {
			r := c.Retryable
			tc.Retryable = &r
		}
		tr.Calls = append(tr.Calls, tc)
	}
	return tr
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// storedResult is the normalized result as activities.Rows stores it
// (harness.Result, redacted).
type storedResult struct {
	OK           bool            `json:"ok"`
	Data         json.RawMessage `json:"data"`
	Code         string          `json:"code"`
	Retryable    bool            `json:"retryable"`
	RetryAfterMs int64           `json:"retry_after_ms"`
	Message      string          `json:"message"`
	Uncertain    bool            `json:"uncertain"`
	Evidence     json.RawMessage `json:"evidence"`
}

// ScoresOf returns a stored judgement's scores by dimension.
func ScoresOf(j record.Judgement) map[judge.Dimension]int {
	return map[judge.Dimension]int{
		judge.ErrorDetection: int(j.ErrorDetection), judge.RetryDecision: int(j.RetryDecision),
		judge.BackoffBehavior: int(j.BackoffBehavior), judge.EscalationCorrectness: int(j.EscalationCorrectness),
		judge.ContextPreservation: int(j.ContextPreservation),
	}
}

// JudgedSweep reads a sweep's judgements and trials; storage.Store
// implements it.
type JudgedSweep interface {
	Judgements(ctx context.Context, sweepID string) ([]record.Judgement, error)
	EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error
}

// PairsFromStore pairs a sweep's judgements with its trials' stored
// verdicts. Attrition trials (never graded) and trials without a judgement
// are left out.
func PairsFromStore(ctx context.Context, st JudgedSweep, sweepID string) ([]judge.Pair, error) {
	js, err := st.Judgements(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	judged := make(map[string]bool, len(js))
	for _, j := range js {
		judged[j.TrialID] = true
	}
	// Only the judged trials' verdicts are kept, read group by group.
	byID := make(map[string]record.Trial, len(js))
	err = st.EachTrial(ctx, sweepID, record.TrialSelect{}, func(t record.Trial) error {
		if judged[t.TrialID] {
			byID[t.TrialID] = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	pairs := make([]judge.Pair, 0, len(js))
	for _, j := range js {
		t, ok := byID[j.TrialID]
		if !ok || t.Attrition {
			continue
		}
		var v grade.Verdict
		if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
			return nil, fmt.Errorf("judge: trial %s: stored verdicts are unreadable: %w", t.TrialID, err)
		}
		pairs = append(pairs, judge.Pair{TrialID: j.TrialID, Scores: ScoresOf(j), Verdict: v})
	}
	return pairs, nil
}

// ReviewedSweep reads a sweep's human verdicts, judgements and trials;
// storage.Store implements it.
type ReviewedSweep interface {
	JudgedSweep
	HumanReviews(ctx context.Context, sweepID string) ([]record.Review, error)
}

// ReviewedFromStore gathers the trials of a sweep a person reviewed, each
// with its stored verdict, the judge's scores when it was judged, and the
// human verdicts in force. Attrition trials (never graded) are left out.
func ReviewedFromStore(ctx context.Context, st ReviewedSweep, sweepID string) ([]judge.Reviewed, error) {
	reviews, err := st.HumanReviews(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	human := judge.HumanVerdicts(reviews)
	if len(human) == 0 {
		return []judge.Reviewed{}, nil
	}
	js, err := st.Judgements(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	scores := map[string]map[judge.Dimension]int{}
	for _, j := range js {
		scores[j.TrialID] = ScoresOf(j)
	}
	out := []judge.Reviewed{}
	err = st.EachTrial(ctx, sweepID, record.TrialSelect{}, func(t record.Trial) error {
		h, ok := human[t.TrialID]
		if !ok || t.Attrition {
			return nil
		}
		var v grade.Verdict
		if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
			return fmt.Errorf("judge: trial %s: stored verdicts are unreadable: %w", t.TrialID, err)
		}
		out = append(out, judge.Reviewed{TrialID: t.TrialID, Verdict: v, Scores: scores[t.TrialID], Human: h})
		return nil
	})
	return out, err
}

// Agreement is what rebound judge agreement reports: the judge against
// the checks per dimension, and the judge and the checks against the
// human verdicts, each with Cohen's kappa and its interval.
type Agreement struct {
	SweepID        string                     `json:"sweep_id"`
	JudgedTrials   int                        `json:"judged_trials"`
	ReviewedTrials int                        `json:"reviewed_trials"`
	JudgeVsChecks  []judge.DimensionAgreement `json:"judge_vs_checks"`
	VsHumans       []judge.HumanAgreement     `json:"vs_humans"`
}

// LoadAgreement reads a sweep's judgements, verdicts and human verdicts
// and computes Agreement (kappa intervals at judge.AgreementConfidence).
func LoadAgreement(ctx context.Context, st ReviewedSweep, sweepID string) (Agreement, error) {
	pairs, err := PairsFromStore(ctx, st, sweepID)
	if err != nil {
		return Agreement{}, err
	}
	reviewed, err := ReviewedFromStore(ctx, st, sweepID)
	if err != nil {
		return Agreement{}, err
	}
	return Agreement{SweepID: sweepID, JudgedTrials: len(pairs), ReviewedTrials: len(reviewed),
		JudgeVsChecks: judge.Agreement(pairs), VsHumans: judge.AgreementWithHumans(reviewed, judge.AgreementConfidence)}, nil
}

// ExportRow is one human verdict with what the machines said on the same
// target: a line of the calibration dataset rebound review export writes.
type ExportRow struct {
	SweepID  string `json:"sweep_id"`
	TrialID  string `json:"trial_id"`
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	Arm      string `json:"arm"`
	Seed     uint64 `json:"seed"`
	// Target is outcome:METRIC or judge:DIMENSION; Human the person's
	// verdict (pass or fail), with Reviewer, Note and ReviewedAt.
	Target     string    `json:"target"`
	Human      string    `json:"human"`
	Reviewer   string    `json:"reviewer"`
	Note       string    `json:"note"`
	ReviewedAt time.Time `json:"reviewed_at"`
	// Checks is the executable verdict on the target (pass, fail, or ""
	// when the checks have no evidence); JudgeScore, JudgeWhy and
	// JudgeModel the judge's on a dimension it scored (0 and "" otherwise).
	Checks     string `json:"checks"`
	JudgeScore int    `json:"judge_score"`
	JudgeWhy   string `json:"judge_justification"`
	JudgeModel string `json:"judge_model"`
}

// ExportReviews lists a sweep's human verdicts in force beside the
// machines' answers on the same targets, ordered by (trial, target).
func ExportReviews(ctx context.Context, st ReviewedSweep, sweepID string) ([]ExportRow, error) {
	reviews, err := st.HumanReviews(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	out := []ExportRow{}
	if len(reviews) == 0 {
		return out, nil
	}
	byTrial := map[string][]record.Review{}
	for _, r := range reviews {
		byTrial[r.TrialID] = append(byTrial[r.TrialID], r)
	}
	js, err := st.Judgements(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	judged := map[string]record.Judgement{}
	for _, j := range js {
		judged[j.TrialID] = j
	}
	err = st.EachTrial(ctx, sweepID, record.TrialSelect{}, func(t record.Trial) error {
		rs, ok := byTrial[t.TrialID]
		if !ok {
			return nil
		}
		var v grade.Verdict
		if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
			return fmt.Errorf("review export: trial %s: stored verdicts are unreadable: %w", t.TrialID, err)
		}
		j, hasJudge := judged[t.TrialID]
		for _, r := range rs {
			row := ExportRow{SweepID: sweepID, TrialID: t.TrialID, Scenario: t.Scenario, Variant: t.Variant, Arm: t.Arm, Seed: t.Seed,
				Target: r.Target, Human: r.Verdict, Reviewer: r.Reviewer, Note: r.Note, ReviewedAt: r.ReviewedAt}
			row.Checks = checksOn(v, r.Target)
			if dim, ok := strings.CutPrefix(r.Target, record.ReviewJudge); ok && hasJudge {
				row.JudgeScore = ScoresOf(j)[judge.Dimension(dim)]
				row.JudgeWhy = Justification(j, judge.Dimension(dim))
				row.JudgeModel = j.JudgeModel
			}
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].TrialID != out[b].TrialID {
			return out[a].TrialID < out[b].TrialID
		}
		return out[a].Target < out[b].Target
	})
	return out, nil
}

// checksOn is the executable verdict on a review target: pass, fail or ""
// (no evidence).
func checksOn(v grade.Verdict, target string) string {
	pass, ok := false, false
	if m, isOutcome := strings.CutPrefix(target, record.ReviewOutcome); isOutcome {
		if b := v.Metric(outcome.Metric(m)); b != nil {
			pass, ok = *b, true
		}
	} else if d, isJudge := strings.CutPrefix(target, record.ReviewJudge); isJudge {
		for _, mp := range judge.Mappings {
			if string(mp.Dimension) == d {
				pass, ok = mp.Eval(v)
			}
		}
	}
	switch {
	case !ok:
		return ""
	case pass:
		return record.ReviewPass
	}
	return record.ReviewFail
}

// Justification is the judge's reason for its score on dimension d.
func Justification(j record.Judgement, d judge.Dimension) string {
	return map[judge.Dimension]string{
		judge.ErrorDetection: j.ErrorDetectionWhy, judge.RetryDecision: j.RetryDecisionWhy,
		judge.BackoffBehavior: j.BackoffBehaviorWhy, judge.EscalationCorrectness: j.EscalationCorrectnessWhy,
		judge.ContextPreservation: j.ContextPreservationWhy,
	}[d]
}
