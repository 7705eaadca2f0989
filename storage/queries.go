package storage

// The read queries. Like the DDL they are sent verbatim to both transports;
// {name:Type} are ClickHouse query parameters bound by the transport. Every
// read deduplicates with FINAL (directly or through a view).

var (
	qAppliedVersions = `SELECT version FROM {{db}}.schema_migrations FINAL ORDER BY version`

	qSweep = `SELECT ` + selectList(sweepCols) + `
FROM {{db}}.sweeps FINAL
WHERE sweep_id = {sweep_id:String}`

	qSweeps = `SELECT ` + selectList(sweepCols) + `
FROM {{db}}.sweeps FINAL
ORDER BY created_at DESC, sweep_id
LIMIT {limit:UInt64}`

	qCountTrials = `SELECT count() AS n
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}`

	qTrials = `SELECT ` + selectList(trialCols) + `
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}
ORDER BY arm, scenario, variant, seed, trial_id`

	// The (arm, scenario) groups of a sweep's trials, in key order: the
	// pages EachTrial reads, each a range of the primary key.
	qTrialGroups = `SELECT arm, scenario, count() AS n
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}
  AND ({arm:String} = '' OR arm = {arm:String})
  AND ({scenario:String} = '' OR scenario = {scenario:String})
GROUP BY arm, scenario
ORDER BY arm, scenario`

	qTrialsOfGroup = `SELECT ` + selectList(trialCols) + `
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String} AND scenario = {scenario:String}
ORDER BY variant, seed, trial_id`

	// The same trials, their outcomes only (TrialSelect.Outcomes: a
	// report's metamorphic pairs): a trial's text columns (verdicts,
	// evidence, claim, ...) are most of its bytes.
	qTrialOutcomesOfGroup = `SELECT ` + selectList(trialOutcomeCols) + `
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String} AND scenario = {scenario:String}
ORDER BY variant, seed, trial_id`

	// trial_id alone is not a key prefix; the bloom filter index skips the
	// granules that cannot hold it.
	qTrial = `SELECT ` + selectList(trialCols) + `
FROM {{db}}.trials FINAL
WHERE trial_id = {trial_id:String}
ORDER BY sweep_id
LIMIT 1`

	// A trial by its place in the primary key (SweepTrial).
	qSweepTrial = `SELECT ` + selectList(trialCols) + `
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String} AND scenario = {scenario:String}
  AND variant = {variant:String} AND seed = {seed:UInt64} AND trial_id = {trial_id:String}
LIMIT 1`

	// The calls of the trial's latest write: same written_at as the trial row.
	qTrialCalls = `SELECT ` + selectList(toolCallCols) + `
FROM {{db}}.tool_calls FINAL
WHERE sweep_id = {sweep_id:String}
  AND trial_id = {trial_id:String}
  AND toUnixTimestamp64Milli(written_at) = {written_at_ms:Int64}
ORDER BY call_index`

	qJudgements = `SELECT ` + selectList(judgementCols) + `
FROM {{db}}.judgements FINAL
WHERE sweep_id = {sweep_id:String}
ORDER BY trial_id`

	qJudgeCache = `SELECT output
FROM {{db}}.judge_cache FINAL
WHERE scenario = {scenario:String}
  AND trace_hash = {trace_hash:String}
  AND judge_model = {judge_model:String}
  AND judge_prompt_hash = {judge_prompt_hash:String}
LIMIT 1`

	// The open review items of a sweep: each trial's latest item, unless a
	// judgement of that trial was written after it (a later judge run that
	// succeeded closes it). ifNull keeps the test right whatever
	// join_use_nulls says about unmatched rows (0 or NULL: never judged).
	// The human verdicts in force in a sweep: per (trial, target) the
	// latest change, unless that change withdrew the verdict.
	qHumanReviews = `SELECT sweep_id, trial_id, target, v AS verdict, who AS reviewer, why AS note, at_ms AS reviewed_at_ms
FROM
(
    SELECT sweep_id, trial_id, target,
        argMax(verdict, reviewed_at) AS v,
        argMax(reviewer, reviewed_at) AS who,
        argMax(note, reviewed_at) AS why,
        toUnixTimestamp64Milli(max(reviewed_at)) AS at_ms
    FROM {{db}}.reviews
    WHERE sweep_id = {sweep_id:String}
    GROUP BY sweep_id, trial_id, target
)
WHERE v != 'cleared'
ORDER BY trial_id, target`

	// Every change to one trial's human verdicts, oldest first.
	qReviewHistory = `SELECT ` + selectList(humanReviewCols) + `
FROM {{db}}.reviews
WHERE trial_id = {trial_id:String}
ORDER BY reviewed_at, target`

	qReviewQueue = `SELECT ` + selectList(reviewCols) + `
FROM
(
    SELECT *
    FROM {{db}}.review_queue FINAL
    WHERE sweep_id = {sweep_id:String}
) AS q
LEFT JOIN
(
    SELECT trial_id AS judged_trial_id, max(toUnixTimestamp64Milli(judged_at)) AS last_judged_ms
    FROM {{db}}.judgements FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY trial_id
) AS j ON q.trial_id = j.judged_trial_id
WHERE ifNull(j.last_judged_ms, 0) <= toUnixTimestamp64Milli(q.queued_at)
ORDER BY trial_id`

	qCaseFaults = `SELECT
    scenario,
    variant,
    seed,
    arraySort(groupUniqArrayArray(fault_classes)) AS fault_classes
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}
GROUP BY scenario, variant, seed
ORDER BY scenario, variant, seed`

	qCells = `SELECT
    arm,
    scenario,
    variant,
    seed,
    metric,
    count() AS trials,
    countIf(attrition = 1) AS attrition_trials,
    countIf(unsealed = 1) AS unsealed_trials,
    countIf(tested = 1) AS n,
    countIf(success = 1) AS successes,
    sumIf(weight, tested = 1) AS sum_weight,
    sumIf(weight, success = 1) AS sum_weight_y
FROM {{db}}.trial_metrics
WHERE sweep_id = {sweep_id:String}
GROUP BY arm, scenario, variant, seed, metric
ORDER BY arm, scenario, variant, seed, metric`
)
