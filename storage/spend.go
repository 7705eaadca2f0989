package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"rebound/results/record"
)

// model_requests journals every model request before it is sent (the LLM
// agent's Journal.Sent, through the activities' model journal): one row per
// send, so a request sent twice (its first answer lost with a killed worker,
// then reissued when the trial ran again) has two rows. A send is answered
// when model_calls holds the answer of its (trial, step, generation); the
// other sends of that key were paid for, by the provider's bill, but never
// received: Spend counts them at the bound each row carries (prompt tokens
// bounded by the request's size, the completion by max_tokens, priced with
// the arm's prices). A table of its own rather than a state column of
// model_calls: model_calls keeps one row per answered key, which the
// journal replays from and FINAL deduplicates, while sends of one key must
// all survive deduplication (send_id keeps them apart); and reading lost
// sends is then one join of two small per-sweep ranges.
const ddlModelRequests = `CREATE TABLE IF NOT EXISTS {{db}}.model_requests
(
    sweep_id                String,
    trial_id                String,
    step                    UInt32,
    generation              UInt32,
    send_id                 String,
    kind                    LowCardinality(String),
    request_hash            String,
    prompt_tokens_bound     UInt64,
    max_tokens              UInt64,
    completion_tokens_bound UInt64,
    input_usd_per_mtok      Float64,
    output_usd_per_mtok     Float64,
    activity_attempt        UInt32,
    sent_at                 DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(sent_at)
ORDER BY (sweep_id, trial_id, step, generation, send_id)`

var modelRequestCols = []string{
	"sweep_id", "trial_id", "step", "generation", "send_id", "kind", "request_hash", "prompt_tokens_bound",
	"max_tokens", "completion_tokens_bound", "input_usd_per_mtok", "output_usd_per_mtok", "activity_attempt", "sent_at",
}

// PutModelRequest journals one model request before it is sent; it returns
// once the row is written. An empty SendID gets a random one (a retried
// write of the same send passes the same id and is deduplicated).
func (s *store) PutModelRequest(ctx context.Context, m record.ModelRequest) error {
	if m.SweepID == "" || m.TrialID == "" || m.Step == 0 {
		return fmt.Errorf("storage: model request without sweep_id, trial_id or step (sweep %q, trial %q, step %d)", m.SweepID, m.TrialID, m.Step)
	}
	if m.SendID == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("storage: model request send id: %w", err)
		}
		m.SendID = hex.EncodeToString(b[:])
	}
	vals := []any{
		text(m.SweepID), text(m.TrialID), m.Step, m.Generation, text(m.SendID), text(m.Kind), text(m.RequestHash),
		m.PromptTokensBound, m.MaxTokens, m.CompletionTokensBound, m.InputUSDPerMTok, m.OutputUSDPerMTok,
		m.ActivityAttempt, s.stamp(),
	}
	if err := s.t.Insert(ctx, s.insertSQL("model_requests", modelRequestCols), modelRequestCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutModelRequest %s step %d: %w", m.TrialID, m.Step, err)
	}
	return nil
}

const (
	// The spend of a sweep's stored trials: what each recorded (its model
	// answers, replayed ones included, and superseded ones; a command arm's
	// reported cost).
	qSpendTrials = `SELECT toUInt64(count()) AS trials, toUInt64(sum(tokens)) AS tokens, toFloat64(sum(cost_usd)) AS cost_usd
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}`

	// The sends of a sweep's model requests and those never answered: per
	// (trial, step, generation), every send but the answered one (at most
	// one: model_calls keeps one answer per key) is lost, and each lost send
	// is counted at the bound of its key (the largest, should sends of a key
	// differ).
	qSpendLost = `SELECT toUInt64(sum(r.sends)) AS sent,
       toUInt64(sum(r.sends - coalesce(c.answered, 0))) AS lost,
       toUInt64(sum((r.sends - coalesce(c.answered, 0)) * (r.prompt_bound + r.completion_bound))) AS lost_tokens,
       toFloat64(sum((r.sends - coalesce(c.answered, 0)) * r.bound_usd)) AS lost_usd,
       toUInt64(sumIf(r.sends - coalesce(c.answered, 0), r.max_tokens = 0)) AS lost_unbounded
FROM
(
    SELECT trial_id, step, generation, count() AS sends,
           max(prompt_tokens_bound) AS prompt_bound, max(completion_tokens_bound) AS completion_bound,
           min(max_tokens) AS max_tokens,
           max((prompt_tokens_bound * input_usd_per_mtok + completion_tokens_bound * output_usd_per_mtok) / 1e6) AS bound_usd
    FROM {{db}}.model_requests FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY trial_id, step, generation
) AS r
LEFT JOIN
(
    SELECT trial_id, step, generation, toUInt64(1) AS answered
    FROM {{db}}.model_calls FINAL
    WHERE sweep_id = {sweep_id:String}
) AS c ON r.trial_id = c.trial_id AND r.step = c.step AND r.generation = c.generation`

	// The answers stored for trials that are not (a sweep stopped for good,
	// or not yet resumed, in the middle of a trial): paid for exactly, priced
	// with the prices their sends carried.
	qSpendUnstored = `SELECT toUInt64(count()) AS calls, toUInt64(sum(c.prompt_tokens + c.completion_tokens)) AS tokens,
       toFloat64(sum((c.prompt_tokens * coalesce(r.input_usd_per_mtok, 0) + c.completion_tokens * coalesce(r.output_usd_per_mtok, 0)) / 1e6)) AS cost_usd
FROM
(
    SELECT trial_id, step, generation, prompt_tokens, completion_tokens
    FROM {{db}}.model_calls FINAL
    WHERE sweep_id = {sweep_id:String}
) AS c
LEFT JOIN
(
    SELECT trial_id, toUInt8(1) AS stored
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY trial_id
) AS t ON c.trial_id = t.trial_id
LEFT JOIN
(
    SELECT trial_id, step, generation, max(input_usd_per_mtok) AS input_usd_per_mtok, max(output_usd_per_mtok) AS output_usd_per_mtok
    FROM {{db}}.model_requests FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY trial_id, step, generation
) AS r ON c.trial_id = r.trial_id AND c.step = r.step AND c.generation = r.generation
WHERE coalesce(t.stored, 0) = 0`
)

type spendTrialsRow struct {
	Trials  uint64  `ch:"trials" json:"trials"`
	Tokens  uint64  `ch:"tokens" json:"tokens"`
	CostUSD float64 `ch:"cost_usd" json:"cost_usd"`
}

type spendLostRow struct {
	Sent          uint64  `ch:"sent" json:"sent"`
	Lost          uint64  `ch:"lost" json:"lost"`
	LostTokens    uint64  `ch:"lost_tokens" json:"lost_tokens"`
	LostUSD       float64 `ch:"lost_usd" json:"lost_usd"`
	LostUnbounded uint64  `ch:"lost_unbounded" json:"lost_unbounded"`
}

type spendUnstoredRow struct {
	Calls   uint64  `ch:"calls" json:"calls"`
	Tokens  uint64  `ch:"tokens" json:"tokens"`
	CostUSD float64 `ch:"cost_usd" json:"cost_usd"`
}

// Spend is what a sweep's model requests cost: exactly, for what its stored
// trials recorded and the answers stored for trials that are not, and at an
// upper bound for the requests it sent whose answers never reached the
// store.
func (s *store) Spend(ctx context.Context, sweepID string) (record.Spend, error) {
	p := map[string]string{"sweep_id": sweepID}
	var trials []spendTrialsRow
	if err := s.t.Select(ctx, &trials, Stmt{SQL: s.sql(qSpendTrials), Params: p}); err != nil {
		return record.Spend{}, fmt.Errorf("storage: Spend of %s: trials: %w", sweepID, err)
	}
	var lost []spendLostRow
	if err := s.t.Select(ctx, &lost, Stmt{SQL: s.sql(qSpendLost), Params: p}); err != nil {
		return record.Spend{}, fmt.Errorf("storage: Spend of %s: model requests: %w", sweepID, err)
	}
	var sp record.Spend
	if len(trials) == 1 {
		sp.ExactTokens, sp.ExactUSD = trials[0].Tokens, trials[0].CostUSD
	}
	if len(lost) == 1 {
		l := lost[0]
		sp.RequestsSent, sp.RequestsLost, sp.EstimatedTokens, sp.EstimatedUSD, sp.RequestsLostWithoutMaxTokens = l.Sent, l.Lost, l.LostTokens, l.LostUSD, l.LostUnbounded
	}
	if sp.RequestsSent == 0 {
		// No journaled request (no LLM arm, or a sweep stored before
		// requests were journaled): nothing else to count, and no join of
		// the sweep's trials to build.
		return sp, nil
	}
	var unstored []spendUnstoredRow
	if err := s.t.Select(ctx, &unstored, Stmt{SQL: s.sql(qSpendUnstored), Params: p}); err != nil {
		return record.Spend{}, fmt.Errorf("storage: Spend of %s: answers of unstored trials: %w", sweepID, err)
	}
	if len(unstored) == 1 {
		sp.ExactTokens += unstored[0].Tokens
		sp.ExactUSD += unstored[0].CostUSD
	}
	return sp, nil
}
