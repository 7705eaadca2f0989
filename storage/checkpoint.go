package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"rebound/results/record"
)

// StoredTrial says that a trial of a sweep is stored, and whether it was
// lost to attrition.
type StoredTrial struct {
	TrialID   string
	Attrition bool
}

var modelCallCols = []string{
	"sweep_id", "trial_id", "step", "generation", "kind", "request_hash", "response",
	"prompt_tokens", "completion_tokens", "provider_retries", "activity_attempt", "written_at",
}

const ddlModelCalls = `CREATE TABLE IF NOT EXISTS {{db}}.model_calls
(
    sweep_id          String,
    trial_id          String,
    step              UInt32,
    generation        UInt32,
    kind              LowCardinality(String),
    request_hash      String,
    response          String CODEC(ZSTD(3)),
    prompt_tokens     UInt64,
    completion_tokens UInt64,
    provider_retries  UInt32,
    activity_attempt  UInt32,
    written_at        DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(written_at)
ORDER BY (sweep_id, trial_id, step, generation)`

const (
	qModelCalls = `SELECT ` + `sweep_id, trial_id, step, generation, kind, request_hash, response,
       prompt_tokens, completion_tokens, provider_retries, activity_attempt,
       toUnixTimestamp64Milli(written_at) AS written_at_ms
FROM {{db}}.model_calls FINAL
WHERE sweep_id = {sweep_id:String} AND trial_id = {trial_id:String}
ORDER BY step, generation`

	// A shard's checkpoint, the first query of every shard: which of its
	// (up to 2,000) trials are stored. It names each trial by its place in
	// the primary key, (sweep_id, arm, scenario, variant, seed, trial_id),
	// as one IN set of tuples, so the engine reads only the granules that
	// can hold them: how many depends on the shard (its trials are a run of
	// seeds per arm), never on how many trials the sweep already stored.
	// Migration 10's bloom filter on trial_id then skips most of those.
	// The keys travel as one JSON String parameter, so the same statement
	// runs on both transports whatever the names hold. Before issue 35 it
	// was has(splitByChar(...), trial_id), which read every stored row of
	// the sweep and walked the whole list for each: in one run of
	// BenchmarkStoredTrials, 600 ms of CPU per shard at 60,720 stored
	// trials and 2.2 s at 242,880; a trial_id IN set with the bloom filter
	// alone read a tenth of the granules but still looked at every
	// granule's filter, and whole parts where the filter is not yet
	// materialized (TestHotPathReadsNoSweep).
	qStoredTrials = `SELECT trial_id, toUInt8(max(attrition)) AS attrition
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}
  AND (arm, scenario, variant, seed, trial_id) IN
      (SELECT arrayJoin(JSONExtract({keys:String}, 'Array(Tuple(String, String, String, UInt64, String))')))
GROUP BY trial_id
ORDER BY trial_id`
)

type modelCallRow struct {
	SweepID          string `ch:"sweep_id" json:"sweep_id"`
	TrialID          string `ch:"trial_id" json:"trial_id"`
	Step             uint32 `ch:"step" json:"step"`
	Generation       uint32 `ch:"generation" json:"generation"`
	Kind             string `ch:"kind" json:"kind"`
	RequestHash      string `ch:"request_hash" json:"request_hash"`
	Response         string `ch:"response" json:"response"`
	PromptTokens     uint64 `ch:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens uint64 `ch:"completion_tokens" json:"completion_tokens"`
	ProviderRetries  uint32 `ch:"provider_retries" json:"provider_retries"`
	ActivityAttempt  uint32 `ch:"activity_attempt" json:"activity_attempt"`
	WrittenAtMS      int64  `ch:"written_at_ms" json:"written_at_ms"`
}

type storedTrialRow struct {
	TrialID   string `ch:"trial_id" json:"trial_id"`
	Attrition uint8  `ch:"attrition" json:"attrition"`
}

func modelCallValues(m record.ModelCall, writtenAt time.Time) ([]any, error) {
	if m.SweepID == "" || m.TrialID == "" || m.Step == 0 {
		return nil, fmt.Errorf("storage: model call without sweep_id, trial_id or step (sweep %q, trial %q, step %d)", m.SweepID, m.TrialID, m.Step)
	}
	return []any{
		text(m.SweepID), text(m.TrialID), m.Step, m.Generation, text(m.Kind), text(m.RequestHash),
		text(m.Response), m.PromptTokens, m.CompletionTokens, m.ProviderRetries, m.ActivityAttempt, writtenAt,
	}, nil
}

// PutModelCall stores one model response durably; it returns once the row
// is written.
func (s *store) PutModelCall(ctx context.Context, m record.ModelCall) error {
	vals, err := modelCallValues(m, s.stamp())
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("model_calls", modelCallCols), modelCallCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutModelCall %s step %d: %w", m.TrialID, m.Step, err)
	}
	return nil
}

// ModelCalls returns the stored model responses of a trial, ordered by
// (step, generation).
func (s *store) ModelCalls(ctx context.Context, sweepID, trialID string) ([]record.ModelCall, error) {
	var rows []modelCallRow
	q := Stmt{SQL: s.sql(qModelCalls), Params: map[string]string{"sweep_id": sweepID, "trial_id": trialID}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("storage: ModelCalls %s: %w", trialID, err)
	}
	out := make([]record.ModelCall, len(rows))
	for i, r := range rows {
		out[i] = record.ModelCall{
			SweepID: r.SweepID, TrialID: r.TrialID, Step: r.Step, Generation: r.Generation, Kind: r.Kind,
			RequestHash: r.RequestHash, Response: r.Response, PromptTokens: r.PromptTokens,
			CompletionTokens: r.CompletionTokens, ProviderRetries: r.ProviderRetries,
			ActivityAttempt: r.ActivityAttempt, WrittenAt: fromMilli(r.WrittenAtMS),
		}
	}
	return out, nil
}

// TrialKey is a trial's place in the trials table's primary key after its
// sweep, and its id (derived from the same coordinates: trial.ID).
type TrialKey struct {
	Arm, Scenario, Variant string
	Seed                   uint64
	TrialID                string
}

// StoredTrials returns which of the given trials of a sweep are stored.
func (s *store) StoredTrials(ctx context.Context, sweepID string, trials []TrialKey) ([]StoredTrial, error) {
	if len(trials) == 0 {
		return nil, nil
	}
	keys := make([][5]any, len(trials))
	for i, k := range trials {
		if k.TrialID == "" {
			return nil, fmt.Errorf("storage: StoredTrials: trial %d of %d has no id", i+1, len(trials))
		}
		keys[i] = [5]any{k.Arm, k.Scenario, k.Variant, k.Seed, k.TrialID}
	}
	param, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("storage: StoredTrials: %w", err)
	}
	var rows []storedTrialRow
	q := Stmt{SQL: s.sql(qStoredTrials), Params: map[string]string{"sweep_id": sweepID, "keys": string(param)}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("storage: StoredTrials %s: %w", sweepID, err)
	}
	out := make([]StoredTrial, len(rows))
	for i, r := range rows {
		out[i] = StoredTrial{TrialID: r.TrialID, Attrition: r.Attrition != 0}
	}
	return out, nil
}
