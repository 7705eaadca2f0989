package storage

// Migration 14: a trial's outcome bit masks, stored with the trial.
//
// Every aggregated read (report, compare, gate, trend, the review UI's
// comparison) reduces a trial to two integers, bit i for metric i of
// aggMetrics: tmask, the metrics tested (not NULL, no attrition), and
// smask, the successes among them. Computed at read time, the expression
// cost every read a pass over a million rows and, more, the new analyzer's
// time to resolve it inside a large statement: about 110 ms of a paired
// comparison's 220 ms of analysis at 1,000,000 trials, every time, before a
// row was read. As MATERIALIZED columns the engine computes them once, on
// insert (and on merge for parts written before, which until then compute
// them on read from the same expression), and reads take two UInt32
// columns. MATERIALIZED columns take no value from an INSERT and are not in
// SELECT *: writers and users' own queries are unchanged.
//
// The expressions are frozen here, written out, because a stored column
// keeps the expression it was created with: a change to the metrics
// (outcome.Stored) needs a new migration that modifies both columns and
// materializes them again. TestStoredMasksMatchTheMetrics fails until it
// exists.
var ddlTrialsOutcomeMasks = []string{
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS tmask UInt32 MATERIALIZED ` + tmaskV14,
	`ALTER TABLE {{db}}.trials ADD COLUMN IF NOT EXISTS smask UInt32 MATERIALIZED ` + smaskV14,
	`ALTER TABLE {{db}}.trials MATERIALIZE COLUMN tmask`,
	`ALTER TABLE {{db}}.trials MATERIALIZE COLUMN smask`,
}

// tmaskV14 and smaskV14 are tmaskSQL and smaskSQL as of migration 14
// (aggMetrics: harm, then outcome.Stored).
const (
	tmaskV14 = `bitShiftLeft(toUInt32(isNotNull(if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1))) AND attrition = 0), 0) + bitShiftLeft(toUInt32(isNotNull(recovered) AND attrition = 0), 1) + bitShiftLeft(toUInt32(isNotNull(honest_block) AND attrition = 0), 2) + bitShiftLeft(toUInt32(isNotNull(premature_block) AND attrition = 0), 3) + bitShiftLeft(toUInt32(isNotNull(unsafe_action) AND attrition = 0), 4) + bitShiftLeft(toUInt32(isNotNull(duplicate_side_effect) AND attrition = 0), 5) + bitShiftLeft(toUInt32(isNotNull(fabricated_claim) AND attrition = 0), 6) + bitShiftLeft(toUInt32(isNotNull(tool_failure_injection) AND attrition = 0), 7) + bitShiftLeft(toUInt32(isNotNull(graceful_degradation) AND attrition = 0), 8) + bitShiftLeft(toUInt32(isNotNull(self_correction) AND attrition = 0), 9)`
	smaskV14 = `bitShiftLeft(toUInt32(ifNull(if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1)), 0) = 1 AND attrition = 0), 0) + bitShiftLeft(toUInt32(ifNull(recovered, 0) = 1 AND attrition = 0), 1) + bitShiftLeft(toUInt32(ifNull(honest_block, 0) = 1 AND attrition = 0), 2) + bitShiftLeft(toUInt32(ifNull(premature_block, 0) = 1 AND attrition = 0), 3) + bitShiftLeft(toUInt32(ifNull(unsafe_action, 0) = 1 AND attrition = 0), 4) + bitShiftLeft(toUInt32(ifNull(duplicate_side_effect, 0) = 1 AND attrition = 0), 5) + bitShiftLeft(toUInt32(ifNull(fabricated_claim, 0) = 1 AND attrition = 0), 6) + bitShiftLeft(toUInt32(ifNull(tool_failure_injection, 0) = 1 AND attrition = 0), 7) + bitShiftLeft(toUInt32(ifNull(graceful_degradation, 0) = 1 AND attrition = 0), 8) + bitShiftLeft(toUInt32(ifNull(self_correction, 0) = 1 AND attrition = 0), 9)`
)
