package activities

import (
	"context"

	"rebound/internal/redact"
	"rebound/results/record"
	"rebound/storage"
)

// redactingStore redacts what the judge writes (judgements, the review
// queue, the judge cache) before it reaches storage. The judge only ever
// sees redacted input, but its own text (justifications, summaries, an
// invalid output) is stored too, and every stored column is redacted.
type redactingStore struct {
	storage.Store
	red *redact.Redactor
}

func (s redactingStore) PutJudgement(ctx context.Context, j record.Judgement) error {
	r := s.red.String
	j.ErrorDetectionWhy, j.RetryDecisionWhy, j.BackoffBehaviorWhy = r(j.ErrorDetectionWhy), r(j.RetryDecisionWhy), r(j.BackoffBehaviorWhy)
	j.EscalationCorrectnessWhy, j.ContextPreservationWhy = r(j.EscalationCorrectnessWhy), r(j.ContextPreservationWhy)
	j.FailureModeSummary = r(j.FailureModeSummary)
	j.RawOutput = s.red.JSONText(j.RawOutput)
	return s.Store.PutJudgement(ctx, j)
}

func (s redactingStore) EnqueueReview(ctx context.Context, item record.ReviewItem) error {
	item.Reason = s.red.String(item.Reason)
	item.RawTrace = s.red.JSONText(item.RawTrace)
	item.PartialOutput = s.red.String(item.PartialOutput)
	return s.Store.EnqueueReview(ctx, item)
}

func (s redactingStore) PutCachedJudgement(ctx context.Context, key record.JudgeCacheKey, output string) error {
	return s.Store.PutCachedJudgement(ctx, key, s.red.JSONText(output))
}
