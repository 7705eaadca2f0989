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
}

// render substitutes the database name into a statement.
func render(sql, db string) string {
	return strings.ReplaceAll(sql, "{{db}}", quoteIdent(db))
}

// quoteIdent quotes a (validated) identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
