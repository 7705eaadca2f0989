package judge

import (
	"context"
	"errors"
	"fmt"
	"math"

	"rebound/storage"
)

// StoreCache is the Cache over the store's judge_cache table.
type StoreCache struct {
	Store storage.Store
}

func (c StoreCache) Get(ctx context.Context, key CacheKey) (string, bool, error) {
	return c.Store.CachedJudgement(ctx, storeKey(key))
}

func (c StoreCache) Put(ctx context.Context, key CacheKey, output string) error {
	return c.Store.PutCachedJudgement(ctx, storeKey(key), output)
}

func storeKey(k CacheKey) storage.JudgeCacheKey {
	return storage.JudgeCacheKey{Scenario: k.Scenario, TraceHash: k.TraceHash, JudgeModel: k.Model, JudgePromptHash: k.PromptHash}
}

// Judgement is the judgements row of a Judged result.
func (r Result) Judgement(sweepID, trialID string) (storage.Judgement, error) {
	if r.Status != Judged {
		return storage.Judgement{}, fmt.Errorf("judge: trial %s was not judged (%s): it belongs in the review queue", trialID, r.Status)
	}
	o := r.Output
	return storage.Judgement{
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
func (r Result) ReviewItem(sweepID, trialID string) (storage.ReviewItem, error) {
	if r.Status != ReviewNeeded {
		return storage.ReviewItem{}, fmt.Errorf("judge: trial %s was judged: it belongs in judgements", trialID)
	}
	return storage.ReviewItem{
		SweepID: sweepID, TrialID: trialID, Scenario: r.Scenario, TraceHash: r.TraceHash,
		JudgeModel: r.Model, JudgePromptHash: r.PromptHash, Reason: r.Reason,
		RawTrace: r.Document, PartialOutput: r.PartialOutput,
		Attempts: uint8(min(r.Attempts, math.MaxUint8)),
	}, nil
}

// Record writes a result where it belongs: a Judged one to judgements, a
// ReviewNeeded one to the review queue. Both writes are idempotent (the
// latest write of a (sweep, trial) wins), so an activity may retry it.
func Record(ctx context.Context, st storage.Store, sweepID, trialID string, r Result) error {
	switch r.Status {
	case Judged:
		j, err := r.Judgement(sweepID, trialID)
		if err != nil {
			return err
		}
		return st.PutJudgement(ctx, j)
	case ReviewNeeded:
		item, err := r.ReviewItem(sweepID, trialID)
		if err != nil {
			return err
		}
		return st.EnqueueReview(ctx, item)
	}
	return errors.New("judge: Record: a result without a status (Score failed?)")
}
