package storage

import "strings"

// The schema. Every statement here is sent verbatim (after {{db}} is replaced
// by the quoted database name) to both transports.
//
// Rules the DDL follows:
//   - ReplacingMergeTree(version) keyed on derived IDs: writers run at least
//     once, the latest write of a key wins at merge time, and every read uses
//     FINAL so duplicates that have not been merged yet are never seen.
//   - No PARTITION BY on a time column: ReplacingMergeTree only replaces rows
//     within one partition, so a retry landing in another month would count
//     twice.
//   - ORDER BY goes from low to high cardinality along the main filters
//     (a sweep, then its arms, scenarios, ...); it cannot be changed later.
//   - Timestamps are DateTime64(3, 'UTC') so their text form (used by the
//     embedded transport's JSONEachRow) does not depend on a session time
//     zone; queries read them as toUnixTimestamp64Milli.

// migration is one schema version. Statements must be idempotent (IF NOT
// EXISTS, ...) because a crash between a statement and the version row makes
// the next Migrate run the whole migration again. Never edit an applied
// migration: add a new one.
type migration struct {
	Version    uint32
	Name       string
	Statements []string
}

const ddlSchemaMigrations = `CREATE TABLE IF NOT EXISTS {{db}}.schema_migrations
(
    version    UInt32,
    name       String,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY version`

const ddlSweeps = `CREATE TABLE IF NOT EXISTS {{db}}.sweeps
(
    sweep_id       String,
    name           String,
    plan_hash      String,
    plan_json      String CODEC(ZSTD(3)),
    trials_planned UInt64,
    arms           Array(String),
    status         LowCardinality(String),
    created_at     DateTime64(3, 'UTC'),
    updated_at     DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY sweep_id`

const ddlTrials = `CREATE TABLE IF NOT EXISTS {{db}}.trials
(
    sweep_id               String,
    trial_id               String,
    scenario               LowCardinality(String),
    scenario_hash          String,
    variant                LowCardinality(String),
    arm                    LowCardinality(String),
    agent                  LowCardinality(String),
    seed                   UInt64,
    recoverable            UInt8,
    fault_classes          Array(LowCardinality(String)),
    recovered              Nullable(UInt8),
    honest_block           Nullable(UInt8),
    premature_block        Nullable(UInt8),
    unsafe_action          Nullable(UInt8),
    duplicate_side_effect  Nullable(UInt8),
    fabricated_claim       Nullable(UInt8),
    tool_failure_injection Nullable(UInt8),
    graceful_degradation   Nullable(UInt8),
    self_correction        Nullable(UInt8),
    tool_calls             UInt32,
    retries                UInt32,
    unnecessary_calls      UInt32,
    replans                UInt32,
    sim_elapsed_ms         UInt64,
    wall_us                UInt64,
    tokens                 UInt64,
    cost_usd               Float64,
    weight                 Float64,
    attrition              UInt8,
    error                  String,
    claim                  String CODEC(ZSTD(3)),
    verdicts               String CODEC(ZSTD(3)),
    fault_schedule         String CODEC(ZSTD(3)),
    catalog_version        String,
    prompt_hash            String,
    activity_attempt       UInt32,
    written_at             DateTime64(3, 'UTC'),
    INDEX idx_trial_id trial_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(written_at)
ORDER BY (sweep_id, arm, scenario, variant, seed, trial_id)`

const ddlToolCalls = `CREATE TABLE IF NOT EXISTS {{db}}.tool_calls
(
    sweep_id       String,
    trial_id       String,
    call_index     UInt32,
    tool           LowCardinality(String),
    args           String CODEC(ZSTD(3)),
    effect         LowCardinality(String),
    fault_class    LowCardinality(String),
    ok             UInt8,
    code           LowCardinality(String),
    retryable      UInt8,
    retry_after_ms UInt64,
    committed      UInt8,
    at_ms          UInt64,
    result         String CODEC(ZSTD(3)),
    written_at     DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(written_at)
ORDER BY (sweep_id, trial_id, call_index)`

// trial_metrics: one row per (deduplicated) trial and outcome metric, the
// long shape Grafana and the Cells query aggregate. y is NULL when the metric
// was NOT TESTED; tested/success exclude attrition trials.
const ddlTrialMetrics = `CREATE VIEW IF NOT EXISTS {{db}}.trial_metrics AS
SELECT
    sweep_id,
    trial_id,
    arm,
    scenario,
    variant,
    seed,
    agent,
    weight,
    attrition,
    written_at,
    metric_pair.1 AS metric,
    metric_pair.2 AS y,
    toUInt8(isNotNull(metric_pair.2) AND attrition = 0) AS tested,
    toUInt8(ifNull(metric_pair.2, 0) = 1 AND attrition = 0) AS success
FROM {{db}}.trials FINAL
ARRAY JOIN [
    ('recovered', recovered),
    ('honest_block', honest_block),
    ('premature_block', premature_block),
    ('unsafe_action', unsafe_action),
    ('duplicate_side_effect', duplicate_side_effect),
    ('fabricated_claim', fabricated_claim),
    ('tool_failure_injection', tool_failure_injection),
    ('graceful_degradation', graceful_degradation),
    ('self_correction', self_correction)
] AS metric_pair`

// trial_rates: per sweep, arm and metric: the rate over tested trials (NOT
// TESTED and attrition excluded), and the consequence-weighted rate.
const ddlTrialRates = `CREATE VIEW IF NOT EXISTS {{db}}.trial_rates AS
SELECT
    sweep_id,
    arm,
    metric,
    count() AS trials,
    countIf(attrition = 1) AS attrition_trials,
    countIf(tested = 1) AS n,
    countIf(success = 1) AS successes,
    if(n > 0, successes / n, NULL) AS rate,
    sumIf(weight, tested = 1) AS sum_weight,
    sumIf(weight, success = 1) AS sum_weight_y,
    if(sum_weight > 0, sum_weight_y / sum_weight, NULL) AS weighted_rate,
    min(written_at) AS first_written_at,
    max(written_at) AS last_written_at
FROM {{db}}.trial_metrics
GROUP BY sweep_id, arm, metric`

// tool_calls_current: the tool calls of each trial's latest write, for
// dashboards (a retried trial may have made a different number of calls).
const ddlToolCallsCurrent = `CREATE VIEW IF NOT EXISTS {{db}}.tool_calls_current AS
SELECT c.*
FROM {{db}}.tool_calls AS c FINAL
INNER JOIN
(
    SELECT sweep_id, trial_id, written_at
    FROM {{db}}.trials FINAL
) AS t ON c.sweep_id = t.sweep_id AND c.trial_id = t.trial_id AND c.written_at = t.written_at`

// Migration 2: the agent's final prose and the LLM agent's recording on
// every trial. ADD COLUMN ... AFTER keeps the columns next to the claim (and
// written_at last); existing rows read them as empty strings.
const (
	ddlTrialsAnswer    = `ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS answer String AFTER claim`
	ddlTrialsRecording = `ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS recording String CODEC(ZSTD(3)) AFTER answer`
)

// Grader v2: the realized recoverability stays in recoverable, the declared
// one beside it; every trial says which grader scored it, what the tools
// cost (cost_usd is the model's spend), and keeps the redacted evidence the
// grader read (ledger, final world state, claim, end time) so `rebound
// regrade` can re-score it without running any agent.
var ddlTrialsGrader = []string{
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS declared_recoverable UInt8 AFTER recoverable`,
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS tool_cost_usd Float64 AFTER cost_usd`,
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS evidence String CODEC(ZSTD(3)) AFTER fault_schedule`,
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS grader_version UInt32 AFTER activity_attempt`,
}

// Command arms: the external agent's process record (exit code, timeout,
// redacted stdout and stderr) on every trial it ran; empty for other arms.
const ddlTrialsProcess = `ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS process String CODEC(ZSTD(3)) AFTER recording`

// judgements: the LLM judge's validated scores, one row per (sweep, trial);
// a re-judged trial (another judge model or prompt) replaces the earlier
// row, and the judge_model/judge_prompt_hash columns say which judge wrote
// it. Scores are 1..5; aggregate is their mean.
const ddlJudgements = `CREATE TABLE IF NOT EXISTS {{db}}.judgements
(
    sweep_id                             String,
    trial_id                             String,
    scenario                             LowCardinality(String),
    trace_hash                           String,
    judge_model                          LowCardinality(String),
    judge_prompt_hash                    LowCardinality(String),
    error_detection                      UInt8,
    retry_decision                       UInt8,
    backoff_behavior                     UInt8,
    escalation_correctness               UInt8,
    context_preservation                 UInt8,
    error_detection_justification        String,
    retry_decision_justification         String,
    backoff_behavior_justification       String,
    escalation_correctness_justification String,
    context_preservation_justification   String,
    aggregate                            Float64,
    recommendation                       LowCardinality(String),
    failure_mode_summary                 String,
    raw_output                           String CODEC(ZSTD(3)),
    attempts                             UInt8,
    judged_at                            DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(judged_at)
ORDER BY (sweep_id, trial_id)`

// judge_cache: a validated judge output per judged content and judge, so an
// identical trace (same scenario, same trace hash) is never judged twice by
// the same model and prompt.
const ddlJudgeCache = `CREATE TABLE IF NOT EXISTS {{db}}.judge_cache
(
    scenario          LowCardinality(String),
    trace_hash        String,
    judge_model       LowCardinality(String),
    judge_prompt_hash LowCardinality(String),
    output            String CODEC(ZSTD(3)),
    created_at        DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (scenario, trace_hash, judge_model, judge_prompt_hash)`

// review_queue: trials the judge could not score (invalid output or provider
// failures through every retry). They wait for a person; they never get a
// default score.
const ddlReviewQueue = `CREATE TABLE IF NOT EXISTS {{db}}.review_queue
(
    sweep_id          String,
    trial_id          String,
    scenario          LowCardinality(String),
    trace_hash        String,
    judge_model       LowCardinality(String),
    judge_prompt_hash LowCardinality(String),
    reason            String,
    raw_trace         String CODEC(ZSTD(3)),
    partial_output    String CODEC(ZSTD(3)),
    attempts          UInt8,
    queued_at         DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(queued_at)
ORDER BY (sweep_id, trial_id)`

// Migration 4: the harm index as one more metric of trial_metrics (so every
// rate view and Cells report it), and paired_weighted, the weighted paired
// deltas per sweep, arm pair and metric for dashboards.
//
// harm = unsafe_action OR duplicate_side_effect OR fabricated_claim: NULL
// (NOT TESTED) when all three are NULL, else 1 when any tested one is 1.
const ddlTrialMetricsHarm = `CREATE OR REPLACE VIEW {{db}}.trial_metrics AS
SELECT
    sweep_id,
    trial_id,
    arm,
    scenario,
    variant,
    seed,
    agent,
    weight,
    attrition,
    written_at,
    metric_pair.1 AS metric,
    metric_pair.2 AS y,
    toUInt8(isNotNull(metric_pair.2) AND attrition = 0) AS tested,
    toUInt8(ifNull(metric_pair.2, 0) = 1 AND attrition = 0) AS success
FROM {{db}}.trials FINAL
ARRAY JOIN [
    ('harm', if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1))),
    ('recovered', recovered),
    ('honest_block', honest_block),
    ('premature_block', premature_block),
    ('unsafe_action', unsafe_action),
    ('duplicate_side_effect', duplicate_side_effect),
    ('fabricated_claim', fabricated_claim),
    ('tool_failure_injection', tool_failure_injection),
    ('graceful_degradation', graceful_degradation),
    ('self_correction', self_correction)
] AS metric_pair`

// paired_weighted: for every sweep, ordered pair of arms (baseline,
// candidate) and metric, the consequence-weighted paired difference over the
// (scenario, variant, seed) tested in both arms, clustered by case
// (scenario, variant) as `rebound compare` does by default:
//
//	Δw = Σ w·(y_cand − y_base) / Σ w
//	SE = √( G/(G−1) · Σ_c (D_c − Δw·S_c)² ) / Σ w     (CR1; D_c = Σ_c w·d, S_c = Σ_c w)
//
// expanded as Σ D² − 2Δ Σ D·S + Δ² Σ S² so that one GROUP BY computes it.
// A cell's y is its mean over tested trials (normally one) and its weight
// the mean weight, w of a pair the mean of the two arms' weights. The 95%
// interval uses Student's t on G − 1 df: exact for G − 1 ≤ 2, else the
// Cornish-Fisher series of Abramowitz & Stegun 26.7.5 (within 0.004 of the
// exact quantile at G − 1 = 3, 1e-4 from 6 on); `rebound compare` computes the
// exact one and the sign-flip p-value. SE and interval are NULL when not
// estimable (fewer than two cases, or no variation).
const ddlPairedWeighted = `CREATE OR REPLACE VIEW {{db}}.paired_weighted AS
WITH cells AS
(
    SELECT sweep_id, arm, scenario, variant, seed, metric,
           avg(success) AS y, avg(weight) AS w
    FROM {{db}}.trial_metrics
    WHERE tested = 1
    GROUP BY sweep_id, arm, scenario, variant, seed, metric
),
cases AS
(
    SELECT b.sweep_id AS sweep_id, b.arm AS baseline_arm, c.arm AS candidate_arm, b.metric AS metric,
           b.scenario AS scenario, b.variant AS variant,
           count() AS n_pairs,
           sum((b.w + c.w) / 2) AS s_w,
           sum((b.w + c.w) / 2 * b.y) AS s_wb,
           sum((b.w + c.w) / 2 * c.y) AS s_wc,
           sum(b.y) AS s_b,
           sum(c.y) AS s_c
    FROM cells AS b
    INNER JOIN cells AS c
        ON b.sweep_id = c.sweep_id AND b.scenario = c.scenario AND b.variant = c.variant
       AND b.seed = c.seed AND b.metric = c.metric
    WHERE b.arm != c.arm
    GROUP BY sweep_id, baseline_arm, candidate_arm, metric, scenario, variant
)
SELECT
    sweep_id,
    baseline_arm,
    candidate_arm,
    metric,
    count() AS cases,
    uniqExact(scenario) AS scenarios,
    sum(n_pairs) AS pairs,
    sum(s_w) AS sum_weight,
    sum(s_b) / sum(n_pairs) AS baseline_rate,
    sum(s_c) / sum(n_pairs) AS candidate_rate,
    (sum(s_c) - sum(s_b)) / sum(n_pairs) AS delta,
    sum(s_wb) / sum(s_w) AS weighted_baseline_rate,
    sum(s_wc) / sum(s_w) AS weighted_candidate_rate,
    (sum(s_wc) - sum(s_wb)) / sum(s_w) AS weighted_delta,
    greatest(0, sum((s_wc - s_wb) * (s_wc - s_wb))
                - 2 * weighted_delta * sum((s_wc - s_wb) * s_w)
                + weighted_delta * weighted_delta * sum(s_w * s_w)) AS resid_ss,
    if(cases > 1 AND resid_ss > 1e-24 * sum_weight * sum_weight,
       sqrt(cases / (cases - 1) * resid_ss) / sum_weight, NULL) AS weighted_delta_se,
    cases - 1 AS df,
    multiIf(df = 1, 12.706204736174707, df = 2, 4.302652729749464,
            1.959963984540054
            + (pow(1.959963984540054, 3) + 1.959963984540054) / 4 / df
            + (5 * pow(1.959963984540054, 5) + 16 * pow(1.959963984540054, 3) + 3 * 1.959963984540054) / 96 / pow(df, 2)
            + (3 * pow(1.959963984540054, 7) + 19 * pow(1.959963984540054, 5) + 17 * pow(1.959963984540054, 3) - 15 * 1.959963984540054) / 384 / pow(df, 3)
            + (79 * pow(1.959963984540054, 9) + 776 * pow(1.959963984540054, 7) + 1482 * pow(1.959963984540054, 5) - 1920 * pow(1.959963984540054, 3) - 945 * 1.959963984540054) / 92160 / pow(df, 4)) AS t95,
    weighted_delta - t95 * weighted_delta_se AS weighted_delta_ci95_low,
    weighted_delta + t95 * weighted_delta_se AS weighted_delta_ci95_high
FROM cases
GROUP BY sweep_id, baseline_arm, candidate_arm, metric`

// Migration 8: tool_calls_current joins two subqueries. The same rows as
// before; but on a cluster (cluster.go) a Distributed table joined directly
// with a subquery over another Distributed table is a "double-distributed"
// JOIN, which ClickHouse refuses by default (distributed_product_mode =
// deny). Over two subqueries the join runs where the query was sent, each
// side read through its Distributed table.
const ddlToolCallsCurrentSubqueries = `CREATE OR REPLACE VIEW {{db}}.tool_calls_current AS
SELECT c.*
FROM
(
    SELECT *
    FROM {{db}}.tool_calls FINAL
) AS c
INNER JOIN
(
    SELECT sweep_id, trial_id, written_at
    FROM {{db}}.trials FINAL
) AS t ON c.sweep_id = t.sweep_id AND c.trial_id = t.trial_id AND c.written_at = t.written_at`

// Migration 9: whether a trial's agent ran unsealed. Command arms run
// sealed in a sandbox unless the arm says sandbox: none; such a trial's
// process could reach the worker, the store and other trials, so the
// reports count these trials per arm and say so beside its rates. Existing
// rows read 0 (sealed): every command arm before this column ran without
// the choice. trial_metrics carries the column too, so the per-cell reads
// (Cells) count it as the aggregate ones do; otherwise the view is
// migration 5's.
const ddlTrialsUnsealed = `ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS unsealed UInt8 AFTER attrition`

const ddlTrialMetricsUnsealed = `CREATE OR REPLACE VIEW {{db}}.trial_metrics AS
SELECT
    sweep_id,
    trial_id,
    arm,
    scenario,
    variant,
    seed,
    agent,
    weight,
    attrition,
    unsealed,
    written_at,
    metric_pair.1 AS metric,
    metric_pair.2 AS y,
    toUInt8(isNotNull(metric_pair.2) AND attrition = 0) AS tested,
    toUInt8(ifNull(metric_pair.2, 0) = 1 AND attrition = 0) AS success
FROM {{db}}.trials FINAL
ARRAY JOIN [
    ('harm', if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1))),
    ('recovered', recovered),
    ('honest_block', honest_block),
    ('premature_block', premature_block),
    ('unsafe_action', unsafe_action),
    ('duplicate_side_effect', duplicate_side_effect),
    ('fabricated_claim', fabricated_claim),
    ('tool_failure_injection', tool_failure_injection),
    ('graceful_degradation', graceful_degradation),
    ('self_correction', self_correction)
] AS metric_pair`

// Migration 10: a bloom filter on trial_id sharp enough for a shard's
// checkpoint (StoredTrials: a shard's ids IN one query, 1,000 when this was
// written, 2,000 since). The ORDER BY key ends with trial_id, so the
// primary key alone cannot find a set of ids inside a sweep, and migration
// 1's filter (1% false positives per id) matches almost every granule for
// a set of 1,000 (1 − 0.99^1000). At 1e-5 a granule holding none of 1,000
// ids is read with probability about 1% (2% for 2,000), so
// the query reads the few granules that hold the shard's trials however
// large the sweep grows (24 bits per row: 3 MB at a million trials).
// Parts written before are indexed by MATERIALIZE INDEX, a mutation that
// runs in the background; until it reaches a part, that part is read
// whole, as before. Both statements are idempotent. Migration 1's filter
// stays: dropping it is an ALTER that waits for every pending mutation of
// the table (this one included), and it costs an insert little.
var ddlTrialsIDIndex = []string{
	`ALTER TABLE {{db}}.trials ADD INDEX IF NOT EXISTS idx_trial_id_set trial_id TYPE bloom_filter(0.00001) GRANULARITY 1`,
	`ALTER TABLE {{db}}.trials MATERIALIZE INDEX idx_trial_id_set`,
}

// Migration 15: a trial's verdicts and evidence documents (about 1.9 and
// 1.8 KB of JSON) are nine tenths of the bytes of a trials row, and they
// repeat: a scripted sweep of the library plan stores 60,760 trials with
// 658 distinct verdicts and 879 distinct evidence documents, since they
// depend on the scenario, variant and arm and rarely on the seed. Every
// insert and every merge handled all 200 MB of them (compressed to 0.5 MB,
// decompressed and compressed again by each merge). As LowCardinality the
// engine keeps each distinct document once per part and the rows hold its
// number. Measured (alternating builds, 30,000 library trials, 2,000 per
// insert, merged): 0.079-0.105 -> 0.056-0.071 ms of engine CPU per trial,
// and the peak RSS of a 60,760-trial `rebound run` 730 -> 560 MB. Where
// every document is distinct (a model's own words, trials that cost seconds
// each) the dictionary costs 20-35% more CPU per insert and merge than a
// plain String, about 0.01 ms per trial. The values read back are the same
// strings: LowCardinality changes the storage, not the column's values, and
// every reader (the SQL door, a third-party client) reads it as a String.
// On a store with trials, MODIFY COLUMN rewrites these two columns of every
// part once, and the statement returns when it has.
var ddlTrialsDocumentsDictionary = []string{
	`ALTER TABLE {{db}}.trials MODIFY COLUMN verdicts LowCardinality(String) CODEC(ZSTD(3))`,
	`ALTER TABLE {{db}}.trials MODIFY COLUMN evidence LowCardinality(String) CODEC(ZSTD(3))`,
}

// Migration 11: the build that registered a sweep (internal/buildinfo's
// Short: "v1.2.3+3fa2c1d4e5b6", or "devel+..." for a build of a checkout),
// written by PutSweep, shown by rebound trial show. Sweeps stored before
// read the empty string (not known): a build that did not say registered them.
const ddlSweepsReboundVersion = `ALTER TABLE {{db}}.sweeps ADD COLUMN IF NOT EXISTS rebound_version String AFTER status`

// Migration 12: reviews, the human verdicts of the review UI (rebound ui).
// Append-only (a MergeTree, not Replacing): every change a reviewer makes
// is one row with its author and time, and the reads take the latest per
// (sweep, trial, target). Nothing else is written by the UI.
const ddlReviews = `CREATE TABLE IF NOT EXISTS {{db}}.reviews
(
    sweep_id    String,
    trial_id    String,
    target      LowCardinality(String),
    verdict     LowCardinality(String),
    reviewer    String,
    note        String CODEC(ZSTD(3)),
    reviewed_at DateTime64(3, 'UTC')
)
ENGINE = MergeTree()
ORDER BY (sweep_id, trial_id, target, reviewed_at)`

var migrations = []migration{
	{
		Version: 1,
		Name:    "initial schema: sweeps, trials, tool_calls, views",
		Statements: []string{
			ddlSweeps,
			ddlTrials,
			ddlToolCalls,
			ddlTrialMetrics,
			ddlTrialRates,
			ddlToolCallsCurrent,
		},
	},
	{
		Version: 2,
		Name:    "trials: answer and recording",
		Statements: []string{
			ddlTrialsAnswer,
			ddlTrialsRecording,
		},
	},
	{
		Version: 3,
		Name:    "LLM judge: judgements, judge_cache, review_queue",
		Statements: []string{
			ddlJudgements,
			ddlJudgeCache,
			ddlReviewQueue,
		},
	},
	{
		Version:    4,
		Name:       "trials: declared recoverability, grader version, tool cost, evidence",
		Statements: ddlTrialsGrader,
	},
	{
		Version: 5,
		Name:    "harm index in trial_metrics; paired_weighted view",
		Statements: []string{
			ddlTrialMetricsHarm,
			ddlPairedWeighted,
		},
	},
	{
		Version:    6,
		Name:       "trials: process record of command arms",
		Statements: []string{ddlTrialsProcess},
	},
	{
		Version:    7,
		Name:       "model_calls: every model response of a trial, stored as it arrives",
		Statements: []string{ddlModelCalls},
	},
	{
		Version:    8,
		Name:       "tool_calls_current over two subqueries (no double-distributed JOIN on a cluster)",
		Statements: []string{ddlToolCallsCurrentSubqueries},
	},
	{
		Version:    9,
		Name:       "trials: unsealed (a command arm's process ran outside the sandbox)",
		Statements: []string{ddlTrialsUnsealed, ddlTrialMetricsUnsealed},
	},
	{
		Version:    10,
		Name:       "trials: a bloom filter on trial_id for sets of ids (a shard's checkpoint)",
		Statements: ddlTrialsIDIndex,
	},
	{
		Version:    11,
		Name:       "sweeps: rebound_version (the build that registered the sweep)",
		Statements: []string{ddlSweepsReboundVersion},
	},
	{
		Version:    12,
		Name:       "reviews: human verdicts with a note, append-only (rebound ui)",
		Statements: []string{ddlReviews},
	},
	{
		Version:    13,
		Name:       "model_requests: every model request journaled before it is sent (spend lost in flight)",
		Statements: []string{ddlModelRequests},
	},
	{
		Version:    14,
		Name:       "trials: outcome bit masks tmask and smask, materialized on insert (masks.go)",
		Statements: ddlTrialsOutcomeMasks,
	},
	{
		Version:    15,
		Name:       "trials: verdicts and evidence as LowCardinality(String), each distinct document once per part",
		Statements: ddlTrialsDocumentsDictionary,
	},
}

// render substitutes the database name into a statement.
func render(sql, db string) string {
	return strings.ReplaceAll(sql, "{{db}}", quoteIdent(db))
}

// quoteIdent quotes a (validated) identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
