package storage

import (
	"context"
	"fmt"
	"strings"

	"rebound/results/record"
)

// The paired comparison's reads. Side 0 is the baseline (sweep, arm), side
// 1 the candidate; both may be arms of one sweep or of two. A pair is a case
// (scenario, variant, seed) graded in both sides (some metric tested).

// sidesCTE: per case (scenario, variant, seed) what each side holds: its
// trials and attrition, and per metric (metricsSQL order) the tested trials
// n, successes k and tested weight sw, summed over the side's trials of the
// case (a case normally holds one trial per side), and k_mask, the union of
// the fault classes scheduled for the case in either side as a bit mask
// over {classes} (the sorted classes of both sides, at most 64). The same
// (sweep, arm) on both sides is read once per side. One pass over the
// trials, grouped by case: no row per metric.
var sidesCTE = `t AS
(
    SELECT
        arrayJoin(arrayFilter(x -> x >= 0, [
            if(sweep_id = {a_sweep:String} AND arm = {a_arm:String}, 0, -1),
            if(sweep_id = {b_sweep:String} AND arm = {b_arm:String}, 1, -1)])) AS side,
        scenario,
        variant,
        seed,
        attrition,
        unsealed,
        ` + classMaskSQL + ` AS class_mask,
        arrayMap(y -> toUInt64(isNotNull(y) AND attrition = 0), ` + metricsSQL + `) AS tested,
        arrayMap(y -> toUInt64(ifNull(y, 0) = 1 AND attrition = 0), ` + metricsSQL + `) AS success,
        arrayMap(x -> x * weight, tested) AS tested_weight
    FROM {{db}}.trials FINAL
    WHERE (sweep_id = {a_sweep:String} AND arm = {a_arm:String}) OR (sweep_id = {b_sweep:String} AND arm = {b_arm:String})
),
keys AS
(
    SELECT
        scenario,
        variant,
        seed,
        countIf(side = 0) AS k_trials_a,
        countIf(side = 1) AS k_trials_b,
        k_trials_a > 0 AS k_in_a,
        k_trials_b > 0 AS k_in_b,
        countIf(side = 0 AND attrition = 1) AS k_attrition_a,
        countIf(side = 1 AND attrition = 1) AS k_attrition_b,
        countIf(side = 0 AND unsealed = 1) AS k_unsealed_a,
        countIf(side = 1 AND unsealed = 1) AS k_unsealed_b,
        sumForEachIf(tested, side = 0) AS k_n_a,
        sumForEachIf(tested, side = 1) AS k_n_b,
        sumForEachIf(success, side = 0) AS k_k_a,
        sumForEachIf(success, side = 1) AS k_k_b,
        sumForEachIf(tested_weight, side = 0) AS k_sw_a,
        sumForEachIf(tested_weight, side = 1) AS k_sw_b,
        arraySum(k_n_a) > 0 AS k_graded_a,
        arraySum(k_n_b) > 0 AS k_graded_b,
        -- A side's outcomes on the case, as text: min = max over the seeds
        -- of a case says they never varied (text compares cheaply).
        toString((k_n_a, k_k_a)) AS k_outcomes_a,
        toString((k_n_b, k_k_b)) AS k_outcomes_b,
        groupBitOr(class_mask) AS k_mask
    FROM t
    GROUP BY scenario, variant, seed
)`

// sideWhereSQL selects the trials of both sides.
const sideWhereSQL = `(sweep_id = {a_sweep:String} AND arm = {a_arm:String}) OR (sweep_id = {b_sweep:String} AND arm = {b_arm:String})`

// The fast form of the comparison, exact when every paired case holds one
// trial per side, as a sweep's cases do (CompareTotals checks multi_keys
// and otherwise reads the general form, qComparePairs): one pass over the
// trials, grouped by case with a few integers per case instead of arrays
// per metric. A trial's outcomes are two bit masks (tmask, smask); a case
// keeps per side the OR of its trials' masks and the sum of their weights,
// which are the trial's own when it is alone. A pair's a and b are then 0
// or 1 per metric, so the pairs of a case are summed per pair weight w into
// the 2×2 table of every metric (integer counts, no float state per pair),
// and the weighted sums are w times counts (pairArrays); Σa, Σb, Σd, Σd²
// and the ranges of a and b follow from the table (pairRowsFromCases). The
// cases that could not be paired come out of the same pass, on the rows of
// kind 0, so the cases are grouped once.
var (
	qComparePairsFast       = comparePairsFastSQL(false)
	qComparePairsFastHashed = comparePairsFastSQL(true)
)

// comparePairsFastSQL renders qComparePairsFast; hashed groups the cases by
// (caseKeySQL, seed), two integers, instead of (scenario, variant, seed):
// a 250,000-case comparison's per-case hash table is about 20 MB smaller
// per thread (and its keys cheaper to hash), and the names come back from a
// join of the few case rows with the pairs' names. CompareTotals reads it
// when the hashes name the pairs exactly, as the report does.
func comparePairsFastSQL(hashed bool) string {
	q := qComparePairsFastText
	if !hashed {
		return q
	}
	for _, r := range []struct{ old, new string }{
		{"keys AS\n(\n    SELECT\n        scenario,\n        variant,\n        seed,", "keys AS\n(\n    SELECT\n        " + caseKeySQL + " AS case_key,\n        seed,"},
		{"GROUP BY scenario, variant, seed", "GROUP BY case_key, seed"},
		{"per_key AS\n(\n    SELECT\n        scenario,\n        variant,\n        seed,", "per_key AS\n(\n    SELECT\n        case_key,\n        seed,"},
		{"by_case AS\n(\n    SELECT\n        scenario,\n        variant,\n        k_mask AS mask,", "by_case AS\n(\n    SELECT\n        case_key,\n        k_mask AS mask,"},
		{"GROUP BY scenario, variant, mask, w\n)", "GROUP BY case_key, mask, w\n),\n" + caseNamesCTE},
		{"FROM by_case\nARRAY JOIN", "FROM (SELECT * FROM by_case AS c INNER JOIN names AS n ON c.case_key = n.case_key)\nARRAY JOIN"},
	} {
		if strings.Count(q, r.old) != 1 {
			panic("storage: the hashed comparison's rewrite does not find " + r.old)
		}
		q = strings.Replace(q, r.old, r.new, 1)
	}
	return q
}

// compareThreads is how many threads the fast comparison may use on the
// embedded engine (Stmt.Threads). Each builds its own table of the cases
// (250,000 at 1,000,000 trials); keyed by hash, two of them kept `rebound
// compare` at 436-487 MB peak RSS on the readbench, against 407-423 MB on
// one thread (keyed by name, two had reached 495-509 MB), and at 388-410
// MB once the engine released its memory after the statement
// (ReleaseMemory).
const compareThreads = 2

// caseNamesCTE: the (scenario, variant) of each case key of both sides.
const caseNamesCTE = `names AS
(
    SELECT ` + caseKeySQL + ` AS case_key, scenario, variant
    FROM {{db}}.trials FINAL
    WHERE ` + sideWhereSQL + `
    GROUP BY scenario, variant
)`

// qComparePairsFastText is qComparePairsFast, the form keyed by names.
var qComparePairsFastText = `WITH t AS
(
    SELECT
        arrayJoin(arrayFilter(x -> x >= 0, [
            if(sweep_id = {a_sweep:String} AND arm = {a_arm:String}, 0, -1),
            if(sweep_id = {b_sweep:String} AND arm = {b_arm:String}, 1, -1)])) AS side,
        scenario,
        variant,
        seed,
        attrition,
        unsealed,
        weight,
        if({with_classes:UInt8} = 1, ` + classMaskSQL + `, 0) AS class_mask,
        tmask,
        smask
    FROM {{db}}.trials FINAL
    WHERE ` + sideWhereSQL + `
),
keys AS
(
    SELECT
        scenario,
        variant,
        seed,
        countIf(side = 0) AS k_trials_a,
        countIf(side = 1) AS k_trials_b,
        countIf(side = 0 AND attrition = 1) AS k_attrition_a,
        countIf(side = 1 AND attrition = 1) AS k_attrition_b,
        countIf(side = 0 AND unsealed = 1) AS k_unsealed_a,
        countIf(side = 1 AND unsealed = 1) AS k_unsealed_b,
        groupBitOrIf(tmask, side = 0) AS k_t_a,
        groupBitOrIf(tmask, side = 1) AS k_t_b,
        groupBitOrIf(smask, side = 0) AS k_s_a,
        groupBitOrIf(smask, side = 1) AS k_s_b,
        sumIf(weight, side = 0) AS k_w_a,
        sumIf(weight, side = 1) AS k_w_b,
        groupBitOr(class_mask) AS k_mask
    FROM t
    GROUP BY scenario, variant, seed
),
per_key AS
(
    SELECT
        scenario,
        variant,
        seed,
        k_mask,
        k_trials_a,
        k_trials_b,
        k_attrition_a,
        k_attrition_b,
        k_unsealed_a,
        k_unsealed_b,
        k_s_a,
        k_s_b,
        k_t_a != 0 AS graded_a,
        k_t_b != 0 AS graded_b,
        graded_a AND graded_b AS paired,
        -- A side's outcomes on the case as one number: min = max over the
        -- pairs of a case says they never varied.
        bitOr(bitShiftLeft(toUInt64(k_t_a), 32), k_s_a) AS out_a,
        bitOr(bitShiftLeft(toUInt64(k_t_b), 32), k_s_b) AS out_b,
        -- The metrics tested in both sides, and in one only.
        if(paired, bitAnd(k_t_a, k_t_b), 0) AS tested,
        if(paired, bitXor(k_t_a, k_t_b), 0) AS one,
        (k_w_a + k_w_b) / 2 AS w
    FROM keys
),
by_case AS
(
    SELECT
        scenario,
        variant,
        k_mask AS mask,
        w,
        countIf(paired) AS c_pair_keys,
        sum(k_trials_a) AS c_trials_a,
        sum(k_trials_b) AS c_trials_b,
        sum(k_attrition_a) AS c_attrition_a,
        sum(k_attrition_b) AS c_attrition_b,
        sum(k_unsealed_a) AS c_unsealed_a,
        sum(k_unsealed_b) AS c_unsealed_b,
        countIf(k_trials_a > 0) AS c_keys_a,
        countIf(k_trials_b > 0) AS c_keys_b,
        countIf(paired AND (k_trials_a > 1 OR k_trials_b > 1)) AS c_multi_keys,
        minIf(out_a, paired) AS c_min_out_a,
        maxIf(out_a, paired) AS c_max_out_a,
        minIf(out_b, paired) AS c_min_out_b,
        maxIf(out_b, paired) AS c_max_out_b,
        ` + pairCounts() + `,
        groupArrayIf((seed, toUInt8(k_trials_a > 0), toUInt8(k_trials_b > 0), toUInt8(graded_a), toUInt8(graded_b),
            k_attrition_a, k_attrition_b), NOT paired) AS c_unmatched
    FROM per_key
    GROUP BY scenario, variant, mask, w
)
SELECT
    g.1 AS group_kind,
    g.2 AS group_name,
    scenario,
    variant,
    sum(c_pair_keys) AS key_count,
    sum(c_trials_a) AS trials_a,
    sum(c_trials_b) AS trials_b,
    sum(c_attrition_a) AS attrition_a,
    sum(c_attrition_b) AS attrition_b,
    sum(c_unsealed_a) AS unsealed_a,
    sum(c_unsealed_b) AS unsealed_b,
    sum(c_keys_a) AS keys_a,
    sum(c_keys_b) AS keys_b,
    sum(c_multi_keys) AS multi_keys,
    minIf(c_min_out_a, c_pair_keys > 0) = maxIf(c_max_out_a, c_pair_keys > 0) AS constant_a,
    minIf(c_min_out_b, c_pair_keys > 0) = maxIf(c_max_out_b, c_pair_keys > 0) AS constant_b,` + pairArrays() + `,
    arrayMap(x -> x.1, ` + unmatchedSQL + `) AS unmatched_seed,
    arrayMap(x -> x.2, ` + unmatchedSQL + `) AS unmatched_in_a,
    arrayMap(x -> x.3, ` + unmatchedSQL + `) AS unmatched_in_b,
    arrayMap(x -> x.4, ` + unmatchedSQL + `) AS unmatched_graded_a,
    arrayMap(x -> x.5, ` + unmatchedSQL + `) AS unmatched_graded_b,
    arrayMap(x -> x.6, ` + unmatchedSQL + `) AS unmatched_attrition_a,
    arrayMap(x -> x.7, ` + unmatchedSQL + `) AS unmatched_attrition_b
FROM by_case
ARRAY JOIN arrayConcat([(0, '')],
    if({with_classes:UInt8} = 1 AND c_pair_keys > 0,
        arrayMap(x -> (1, x), ` + classesOfMaskSQL("mask") + `),
        [])) AS g
GROUP BY group_kind, group_name, scenario, variant
ORDER BY group_kind, group_name, scenario, variant`

// pairCountSQL are, per pair, the metrics of each count of the fast
// comparison as bit masks (bit i for metric i of aggMetrics): tested in one
// side only, and the four cells (a, b) of the 2×2 table among the metrics
// tested in both.
var pairCountSQL = []struct{ name, mask string }{
	{"one_arm_only", "one"},
	{"n11", "bitAnd(tested, bitAnd(k_s_a, k_s_b))"},
	{"n12", "bitAnd(tested, bitAnd(k_s_a, bitNot(k_s_b)))"},
	{"n21", "bitAnd(tested, bitAnd(bitNot(k_s_a), k_s_b))"},
	{"n22", "bitAnd(tested, bitNot(bitOr(k_s_a, k_s_b)))"},
}

// pairCounts renders the per-metric counts over the pairs of one case and
// weight: one array column c_NAME per pairCountSQL, element i counting
// the pairs with bit i set.
func pairCounts() string {
	cols := make([]string, len(pairCountSQL))
	for j, c := range pairCountSQL {
		cols[j] = fmt.Sprintf("sumForEach(arrayMap(i -> toUInt64(bitTest(%s, i)), range(%d))) AS c_%s", c.mask, len(aggMetrics), c.name)
	}
	return strings.Join(cols, ",\n        ")
}

// pairArrays renders the per-metric array columns of a pairCaseRow: the
// counts of pairCounts summed, and the weighted sums Σw, Σw·a, Σw·b, Σw·d,
// Σw², Σw²·d, Σw²·d² (d = b − a) from the counts of each pair weight w: a
// pair with a = b = 1 adds w to Σw, Σw·a and Σw·b, one with a = 0, b = 1
// adds w to Σw, Σw·b and Σw·d and w² to Σw², Σw²·d and Σw²·d², and so on.
func pairArrays() string {
	var b strings.Builder
	for _, c := range pairCountSQL {
		fmt.Fprintf(&b, "\n    sumForEach(c_%[1]s) AS %[1]s,", c.name)
	}
	weighted := []struct{ name, f string }{
		{"sum_w", "w * (n11 + n12 + n21 + n22)"},
		{"sum_wa", "w * (n11 + n12)"},
		{"sum_wb", "w * (n11 + n21)"},
		{"sum_wd", "w * (toInt64(n21) - toInt64(n12))"},
		{"sum_w2", "w * w * (n11 + n12 + n21 + n22)"},
		{"sum_w2d", "w * w * (toInt64(n21) - toInt64(n12))"},
		{"sum_w2d2", "w * w * (n12 + n21)"},
	}
	for _, x := range weighted {
		fmt.Fprintf(&b, "\n    sumForEach(arrayMap((n11, n12, n21, n22) -> %s, c_n11, c_n12, c_n21, c_n22)) AS %s,", x.f, x.name)
	}
	return strings.TrimSuffix(b.String(), ",")
}

var (
	// The general form (cases of several trials per side; see
	// qComparePairsFast): the cases that could not be paired, with what
	// each side holds.
	qCompareUnmatched = `WITH ` + sidesCTE + `
SELECT
    scenario,
    variant,
    seed,
    k_in_a AS in_a,
    k_in_b AS in_b,
    k_graded_a AS graded_a,
    k_graded_b AS graded_b,
    k_attrition_a AS attrition_a,
    k_attrition_b AS attrition_b
FROM keys
WHERE NOT (k_graded_a AND k_graded_b)
ORDER BY scenario, variant, seed`

	// Per group, metric (index into aggMetrics) and case (scenario,
	// variant): over the pairs (cases graded in both sides) the sufficient
	// statistics of the paired estimators, and over every case the counts of
	// the summary. For a pair tested in both sides a = successes/n of the
	// baseline, b the candidate's, d = b − a and w the mean weight of the
	// pair's trials averaged over the two sides. Group kind 0 is every case;
	// kind 1 one fault class (a pair counts in each class scheduled for its
	// case in either side, or in {no_fault}); with_classes = 0 leaves kind 1
	// out. Cases are first summed per (case, set of classes, paired), with
	// the metrics as arrays, and only then spread over metrics and classes.
	qComparePairs = `WITH ` + sidesCTE + `,
per_key AS
(
    SELECT
        scenario,
        variant,
        k_mask,
        k_graded_a AND k_graded_b AS paired,
        k_trials_a,
        k_trials_b,
        k_attrition_a,
        k_attrition_b,
        k_unsealed_a,
        k_unsealed_b,
        k_in_a,
        k_in_b,
        k_outcomes_a,
        k_outcomes_b,
        arrayResize(k_n_a, {metrics:UInt32}) AS na,
        arrayResize(k_k_a, {metrics:UInt32}) AS ka,
        arrayResize(k_sw_a, {metrics:UInt32}) AS swa,
        arrayResize(k_n_b, {metrics:UInt32}) AS nb,
        arrayResize(k_k_b, {metrics:UInt32}) AS kb,
        arrayResize(k_sw_b, {metrics:UInt32}) AS swb,
        arrayMap((x, y) -> toUInt8(paired AND x > 0 AND y > 0), na, nb) AS tested,
        arrayMap((x, y) -> toUInt8(paired AND (x > 0) != (y > 0)), na, nb) AS one,
        arrayMap((t, x, y) -> toUInt8(t AND x = 1 AND y = 1), tested, na, nb) AS single,
        arrayMap((t, k, n) -> if(t, k / n, 0), tested, ka, na) AS a,
        arrayMap((t, k, n) -> if(t, k / n, 0), tested, kb, nb) AS b,
        arrayMap((x, y) -> y - x, a, b) AS d,
        arrayMap((t, s1, n1, s2, n2) -> if(t, (s1 / n1 + s2 / n2) / 2, 0), tested, swa, na, swb, nb) AS w
    FROM keys
),
by_case AS
(
    SELECT
        scenario,
        variant,
        k_mask AS mask,
        count() AS c_keys,
        countIf(paired) AS c_pair_keys,
        sum(k_trials_a) AS c_trials_a,
        sum(k_trials_b) AS c_trials_b,
        sum(k_attrition_a) AS c_attrition_a,
        sum(k_attrition_b) AS c_attrition_b,
        sum(k_unsealed_a) AS c_unsealed_a,
        sum(k_unsealed_b) AS c_unsealed_b,
        countIf(k_in_a) AS c_keys_a,
        countIf(k_in_b) AS c_keys_b,
        countIf(paired AND (k_trials_a > 1 OR k_trials_b > 1)) AS c_multi_keys,
        minIf(k_outcomes_a, paired) AS c_min_out_a,
        maxIf(k_outcomes_a, paired) AS c_max_out_a,
        minIf(k_outcomes_b, paired) AS c_min_out_b,
        maxIf(k_outcomes_b, paired) AS c_max_out_b,
        sumForEach(arrayMap(x -> toUInt64(x), tested)) AS c_pairs,
        sumForEach(arrayMap(x -> toUInt64(x), one)) AS c_one,
        sumForEach(arrayMap((t, s) -> toUInt64(t AND NOT s), tested, single)) AS c_multi,
        sumForEach(arrayMap((s, x, y) -> toUInt64(s AND x = 1 AND y = 1), single, a, b)) AS c_n11,
        sumForEach(arrayMap((s, x, y) -> toUInt64(s AND x = 1 AND y = 0), single, a, b)) AS c_n12,
        sumForEach(arrayMap((s, x, y) -> toUInt64(s AND x = 0 AND y = 1), single, a, b)) AS c_n21,
        sumForEach(arrayMap((s, x, y) -> toUInt64(s AND x = 0 AND y = 0), single, a, b)) AS c_n22,
        sumForEach(a) AS c_sum_a,
        sumForEach(b) AS c_sum_b,
        sumForEach(d) AS c_sum_d,
        sumForEach(arrayMap(x -> x * x, d)) AS c_sum_d2,
        sumForEach(w) AS c_sum_w,
        sumForEach(arrayMap((x, y) -> x * y, w, a)) AS c_sum_wa,
        sumForEach(arrayMap((x, y) -> x * y, w, b)) AS c_sum_wb,
        sumForEach(arrayMap((x, y) -> x * y, w, d)) AS c_sum_wd,
        sumForEach(arrayMap(x -> x * x, w)) AS c_sum_w2,
        sumForEach(arrayMap((x, y) -> x * x * y, w, d)) AS c_sum_w2d,
        sumForEach(arrayMap((x, y) -> x * x * y * y, w, d)) AS c_sum_w2d2,
        -- Outside [0, 1], so that an untested pair never sets the range.
        minForEach(arrayMap((t, x) -> if(t, x, 2), tested, a)) AS c_min_a,
        maxForEach(arrayMap((t, x) -> if(t, x, -1), tested, a)) AS c_max_a,
        minForEach(arrayMap((t, x) -> if(t, x, 2), tested, b)) AS c_min_b,
        maxForEach(arrayMap((t, x) -> if(t, x, -1), tested, b)) AS c_max_b
    FROM per_key
    GROUP BY scenario, variant, mask, w
)
SELECT
    g.1 AS group_kind,
    g.2 AS group_name,
    i - 1 AS metric_index,
    scenario,
    variant,
    sum(c_pair_keys) AS key_count,
    sum(x_pairs) AS pairs,
    sum(x_one) AS one_arm_only,
    sum(x_multi) AS multi,
    sum(x_n11) AS n11,
    sum(x_n12) AS n12,
    sum(x_n21) AS n21,
    sum(x_n22) AS n22,
    sum(x_sum_a) AS sum_a,
    sum(x_sum_b) AS sum_b,
    sum(x_sum_d) AS sum_d,
    sum(x_sum_d2) AS sum_d2,
    sum(x_sum_w) AS sum_w,
    sum(x_sum_wa) AS sum_wa,
    sum(x_sum_wb) AS sum_wb,
    sum(x_sum_wd) AS sum_wd,
    sum(x_sum_w2) AS sum_w2,
    sum(x_sum_w2d) AS sum_w2d,
    sum(x_sum_w2d2) AS sum_w2d2,
    min(x_min_a) AS min_a,
    max(x_max_a) AS max_a,
    min(x_min_b) AS min_b,
    max(x_max_b) AS max_b,
    sum(c_trials_a) AS trials_a,
    sum(c_trials_b) AS trials_b,
    sum(c_attrition_a) AS attrition_a,
    sum(c_attrition_b) AS attrition_b,
    sum(c_unsealed_a) AS unsealed_a,
    sum(c_unsealed_b) AS unsealed_b,
    sum(c_keys_a) AS keys_a,
    sum(c_keys_b) AS keys_b,
    sum(c_multi_keys) AS multi_keys,
    minIf(c_min_out_a, c_pair_keys > 0) = maxIf(c_max_out_a, c_pair_keys > 0) AS constant_a,
    minIf(c_min_out_b, c_pair_keys > 0) = maxIf(c_max_out_b, c_pair_keys > 0) AS constant_b
FROM by_case
-- The metric arrays side by side (one row per metric, no copy of them).
ARRAY JOIN
    arrayEnumerate(c_pairs) AS i,
    c_pairs AS x_pairs,
    c_one AS x_one,
    c_multi AS x_multi,
    c_n11 AS x_n11,
    c_n12 AS x_n12,
    c_n21 AS x_n21,
    c_n22 AS x_n22,
    c_sum_a AS x_sum_a,
    c_sum_b AS x_sum_b,
    c_sum_d AS x_sum_d,
    c_sum_d2 AS x_sum_d2,
    c_sum_w AS x_sum_w,
    c_sum_wa AS x_sum_wa,
    c_sum_wb AS x_sum_wb,
    c_sum_wd AS x_sum_wd,
    c_sum_w2 AS x_sum_w2,
    c_sum_w2d AS x_sum_w2d,
    c_sum_w2d2 AS x_sum_w2d2,
    c_min_a AS x_min_a,
    c_max_a AS x_max_a,
    c_min_b AS x_min_b,
    c_max_b AS x_max_b
ARRAY JOIN arrayConcat([(0, '')],
    if({with_classes:UInt8} = 1 AND c_pair_keys > 0,
        arrayMap(x -> (1, x), if(mask = 0, [{no_fault:String}],
            arrayFilter((c, j) -> bitTest(mask, j - 1), {classes:Array(String)}, arrayEnumerate({classes:Array(String)})))),
        [])) AS g
GROUP BY group_kind, group_name, metric_index, scenario, variant
ORDER BY group_kind, group_name, metric_index, scenario, variant`

	// The fault classes of both sides, sorted (the bits of k_mask), and
	// how many (scenario, variant) and distinct 64-bit hashes of them they
	// have: equal counts mean the hashes name the pairs exactly
	// (qComparePairsFastHashed).
	qCompareCases = casesSQL(sideWhereSQL)

	// Per scenario, whether the side ran it from one file (its hash) or
	// several ('mixed').
	qScenarioHashes = `SELECT scenario, if(uniqExact(scenario_hash) > 1, 'mixed', any(scenario_hash)) AS hash
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String}
GROUP BY scenario
ORDER BY scenario`
)

type unmatchedRow struct {
	Scenario   string `ch:"scenario" json:"scenario"`
	Variant    string `ch:"variant" json:"variant"`
	Seed       uint64 `ch:"seed" json:"seed"`
	InA        uint8  `ch:"in_a" json:"in_a"`
	InB        uint8  `ch:"in_b" json:"in_b"`
	GradedA    uint8  `ch:"graded_a" json:"graded_a"`
	GradedB    uint8  `ch:"graded_b" json:"graded_b"`
	AttritionA uint64 `ch:"attrition_a" json:"attrition_a"`
	AttritionB uint64 `ch:"attrition_b" json:"attrition_b"`
}

type pairTotalsRow struct {
	Kind       uint8   `ch:"group_kind" json:"group_kind"`
	Name       string  `ch:"group_name" json:"group_name"`
	Metric     int     `ch:"metric_index" json:"metric_index"`
	Scenario   string  `ch:"scenario" json:"scenario"`
	Variant    string  `ch:"variant" json:"variant"`
	Keys       uint64  `ch:"key_count" json:"key_count"`
	Pairs      uint64  `ch:"pairs" json:"pairs"`
	OneArmOnly uint64  `ch:"one_arm_only" json:"one_arm_only"`
	Multi      uint64  `ch:"multi" json:"multi"`
	N11        uint64  `ch:"n11" json:"n11"`
	N12        uint64  `ch:"n12" json:"n12"`
	N21        uint64  `ch:"n21" json:"n21"`
	N22        uint64  `ch:"n22" json:"n22"`
	SumA       float64 `ch:"sum_a" json:"sum_a"`
	SumB       float64 `ch:"sum_b" json:"sum_b"`
	SumD       float64 `ch:"sum_d" json:"sum_d"`
	SumD2      float64 `ch:"sum_d2" json:"sum_d2"`
	SumW       float64 `ch:"sum_w" json:"sum_w"`
	SumWA      float64 `ch:"sum_wa" json:"sum_wa"`
	SumWB      float64 `ch:"sum_wb" json:"sum_wb"`
	SumWD      float64 `ch:"sum_wd" json:"sum_wd"`
	SumW2      float64 `ch:"sum_w2" json:"sum_w2"`
	SumW2D     float64 `ch:"sum_w2d" json:"sum_w2d"`
	SumW2D2    float64 `ch:"sum_w2d2" json:"sum_w2d2"`
	MinA       float64 `ch:"min_a" json:"min_a"`
	MaxA       float64 `ch:"max_a" json:"max_a"`
	MinB       float64 `ch:"min_b" json:"min_b"`
	MaxB       float64 `ch:"max_b" json:"max_b"`
	TrialsA    uint64  `ch:"trials_a" json:"trials_a"`
	TrialsB    uint64  `ch:"trials_b" json:"trials_b"`
	AttritionA uint64  `ch:"attrition_a" json:"attrition_a"`
	AttritionB uint64  `ch:"attrition_b" json:"attrition_b"`
	UnsealedA  uint64  `ch:"unsealed_a" json:"unsealed_a"`
	UnsealedB  uint64  `ch:"unsealed_b" json:"unsealed_b"`
	KeysA      uint64  `ch:"keys_a" json:"keys_a"`
	KeysB      uint64  `ch:"keys_b" json:"keys_b"`
	MultiKeys  uint64  `ch:"multi_keys" json:"multi_keys"`
	ConstantA  uint8   `ch:"constant_a" json:"constant_a"`
	ConstantB  uint8   `ch:"constant_b" json:"constant_b"`
}

// unmatchedSQL is a group's unpaired cases, sorted: written out in each
// column that reads it (the engine computes the same expression once)
// rather than selected under an alias, so the result has only the columns
// pairCaseRow names (a server transport scans every column it gets).
const unmatchedSQL = `arraySort(groupArrayArrayIf(c_unmatched, group_kind = 0))`

// pairCaseRow is a row of qComparePairsFast: one case (scenario, variant)
// of a group, with its metrics as arrays (aggMetrics order) and, on the
// rows of kind 0, the case's unpaired (scenario, variant, seed) as arrays.
type pairCaseRow struct {
	Kind       uint8     `ch:"group_kind" json:"group_kind"`
	Name       string    `ch:"group_name" json:"group_name"`
	Scenario   string    `ch:"scenario" json:"scenario"`
	Variant    string    `ch:"variant" json:"variant"`
	Keys       uint64    `ch:"key_count" json:"key_count"`
	TrialsA    uint64    `ch:"trials_a" json:"trials_a"`
	TrialsB    uint64    `ch:"trials_b" json:"trials_b"`
	AttritionA uint64    `ch:"attrition_a" json:"attrition_a"`
	AttritionB uint64    `ch:"attrition_b" json:"attrition_b"`
	UnsealedA  uint64    `ch:"unsealed_a" json:"unsealed_a"`
	UnsealedB  uint64    `ch:"unsealed_b" json:"unsealed_b"`
	KeysA      uint64    `ch:"keys_a" json:"keys_a"`
	KeysB      uint64    `ch:"keys_b" json:"keys_b"`
	MultiKeys  uint64    `ch:"multi_keys" json:"multi_keys"`
	ConstantA  uint8     `ch:"constant_a" json:"constant_a"`
	ConstantB  uint8     `ch:"constant_b" json:"constant_b"`
	OneArmOnly []uint64  `ch:"one_arm_only" json:"one_arm_only"`
	N11        []uint64  `ch:"n11" json:"n11"`
	N12        []uint64  `ch:"n12" json:"n12"`
	N21        []uint64  `ch:"n21" json:"n21"`
	N22        []uint64  `ch:"n22" json:"n22"`
	SumW       []float64 `ch:"sum_w" json:"sum_w"`
	SumWA      []float64 `ch:"sum_wa" json:"sum_wa"`
	SumWB      []float64 `ch:"sum_wb" json:"sum_wb"`
	SumWD      []float64 `ch:"sum_wd" json:"sum_wd"`
	SumW2      []float64 `ch:"sum_w2" json:"sum_w2"`
	SumW2D     []float64 `ch:"sum_w2d" json:"sum_w2d"`
	SumW2D2    []float64 `ch:"sum_w2d2" json:"sum_w2d2"`
	// The unpaired cases, by seed.
	UnmatchedSeed       []uint64 `ch:"unmatched_seed" json:"unmatched_seed"`
	UnmatchedInA        []uint8  `ch:"unmatched_in_a" json:"unmatched_in_a"`
	UnmatchedInB        []uint8  `ch:"unmatched_in_b" json:"unmatched_in_b"`
	UnmatchedGradedA    []uint8  `ch:"unmatched_graded_a" json:"unmatched_graded_a"`
	UnmatchedGradedB    []uint8  `ch:"unmatched_graded_b" json:"unmatched_graded_b"`
	UnmatchedAttritionA []uint64 `ch:"unmatched_attrition_a" json:"unmatched_attrition_a"`
	UnmatchedAttritionB []uint64 `ch:"unmatched_attrition_b" json:"unmatched_attrition_b"`
}

// pairRowsFromCases turns the rows of qComparePairsFast (ordered by kind,
// name, scenario, variant) into pairTotalsRows, passed to emit in the order
// of those of qComparePairs (kind, name, metric, scenario, variant), and
// returns the unpaired cases. Every pair holds one trial per side, so a and b are 0 or
// 1: Σa, Σb, Σd and Σd² follow from the 2×2 table and the ranges of a and
// b from which of its cells are filled (2 and −1 when none, as in
// qComparePairs).
func pairRowsFromCases(rows []pairCaseRow, emit func(*pairTotalsRow) error) ([]record.UnmatchedCase, error) {
	metrics := len(aggMetrics)
	var um []record.UnmatchedCase
	for i := range rows {
		r := &rows[i]
		for _, a := range [][]uint64{r.OneArmOnly, r.N11, r.N12, r.N21, r.N22} {
			if len(a) != metrics {
				return nil, fmt.Errorf("row %d: %d metrics, want %d", i+1, len(a), metrics)
			}
		}
		for _, a := range [][]float64{r.SumW, r.SumWA, r.SumWB, r.SumWD, r.SumW2, r.SumW2D, r.SumW2D2} {
			if len(a) != metrics {
				return nil, fmt.Errorf("row %d: %d metrics, want %d", i+1, len(a), metrics)
			}
		}
		n := len(r.UnmatchedSeed)
		if len(r.UnmatchedInA) != n || len(r.UnmatchedInB) != n || len(r.UnmatchedGradedA) != n ||
			len(r.UnmatchedGradedB) != n || len(r.UnmatchedAttritionA) != n || len(r.UnmatchedAttritionB) != n {
			return nil, fmt.Errorf("row %d: unmatched columns of different lengths", i+1)
		}
		for j := range n {
			um = append(um, record.UnmatchedCase{Scenario: r.Scenario, Variant: r.Variant, Seed: r.UnmatchedSeed[j],
				InA: r.UnmatchedInA[j] == 1, InB: r.UnmatchedInB[j] == 1,
				GradedA: r.UnmatchedGradedA[j] == 1, GradedB: r.UnmatchedGradedB[j] == 1,
				AttritionA: r.UnmatchedAttritionA[j], AttritionB: r.UnmatchedAttritionB[j]})
		}
	}
	// One block per (kind, name), its rows in (scenario, variant) order;
	// within a block, metric by metric.
	for start := 0; start < len(rows); {
		end := start
		for end < len(rows) && rows[end].Kind == rows[start].Kind && rows[end].Name == rows[start].Name {
			end++
		}
		for m := range metrics {
			for i := start; i < end; i++ {
				r := &rows[i]
				n11, n12, n21, n22 := r.N11[m], r.N12[m], r.N21[m], r.N22[m]
				minA, maxA, minB, maxB := 2.0, -1.0, 2.0, -1.0
				if n21+n22 > 0 {
					minA = 0
				}
				if n11+n12 > 0 {
					maxA = 1
					minA = min(minA, 1)
				} else if n21+n22 > 0 {
					maxA = 0
				}
				if n12+n22 > 0 {
					minB = 0
				}
				if n11+n21 > 0 {
					maxB = 1
					minB = min(minB, 1)
				} else if n12+n22 > 0 {
					maxB = 0
				}
				pt := pairTotalsRow{Kind: r.Kind, Name: r.Name, Metric: m, Scenario: r.Scenario, Variant: r.Variant,
					Keys: r.Keys, Pairs: n11 + n12 + n21 + n22, OneArmOnly: r.OneArmOnly[m],
					N11: n11, N12: n12, N21: n21, N22: n22,
					SumA: float64(n11 + n12), SumB: float64(n11 + n21), SumD: float64(n21) - float64(n12), SumD2: float64(n12 + n21),
					SumW: r.SumW[m], SumWA: r.SumWA[m], SumWB: r.SumWB[m], SumWD: r.SumWD[m],
					SumW2: r.SumW2[m], SumW2D: r.SumW2D[m], SumW2D2: r.SumW2D2[m],
					MinA: minA, MaxA: maxA, MinB: minB, MaxB: maxB,
					TrialsA: r.TrialsA, TrialsB: r.TrialsB, AttritionA: r.AttritionA, AttritionB: r.AttritionB,
					UnsealedA: r.UnsealedA, UnsealedB: r.UnsealedB,
					KeysA: r.KeysA, KeysB: r.KeysB, MultiKeys: r.MultiKeys, ConstantA: r.ConstantA, ConstantB: r.ConstantB}
				if err := emit(&pt); err != nil {
					return nil, err
				}
			}
		}
		start = end
	}
	return um, nil
}

type scenarioHashRow struct {
	Scenario string `ch:"scenario" json:"scenario"`
	Hash     string `ch:"hash" json:"hash"`
}

// CompareTotals reads the paired comparison of side b (candidate) against
// side a (baseline). withClasses adds the breakdown by fault class; noFault
// names the group of cases without a fault.
func (s *store) CompareTotals(ctx context.Context, a, b record.CompareSide, withClasses bool, noFault string) (record.CompareTotals, error) {
	var out record.CompareTotals
	wc := "0"
	if withClasses {
		wc = "1"
	}
	p := map[string]string{"a_sweep": a.SweepID, "a_arm": a.Arm, "b_sweep": b.SweepID, "b_arm": b.Arm,
		"with_classes": wc, "no_fault": noFault}
	wrap := func(what string, err error) error {
		return fmt.Errorf("storage: CompareTotals %s/%s vs %s/%s: %s: %w", a.SweepID, a.Arm, b.SweepID, b.Arm, what, err)
	}
	var cr []sweepCasesRow
	if err := s.t.Select(ctx, &cr, Stmt{SQL: s.sql(qCompareCases), Params: p}); err != nil {
		return out, wrap("fault classes", err)
	}
	classes, fast := []string{}, qComparePairsFast
	if len(cr) == 1 {
		if withClasses {
			classes = cr[0].Classes
		}
		if cr[0].Pairs == cr[0].PairKeys {
			fast = qComparePairsFastHashed
		}
	}
	if len(classes) > 64 {
		return out, wrap("fault classes", fmt.Errorf("%d distinct fault classes; the breakdown handles at most 64", len(classes)))
	}
	p["classes"] = arrayParam(classes)
	p["metrics"] = fmt.Sprint(len(aggMetrics))
	// The fast form first; when some pair holds several trials in a side
	// (multi_keys), the general form.
	var cases []pairCaseRow
	if err := s.t.Select(ctx, &cases, Stmt{SQL: s.sql(fast), Params: p, Threads: compareThreads, ReleaseMemory: true}); err != nil {
		return out, wrap("pairs", err)
	}
	multi := false
	for _, r := range cases {
		multi = multi || r.MultiKeys > 0
	}
	// add appends one pairTotalsRow to out.Pairs and, once per case (the
	// rows of kind 0 and the first metric), its counts to the summary.
	sm := &out.Summary
	lastScenario, added := "", 0
	add := func(r *pairTotalsRow) error {
		added++
		if r.Metric < 0 || r.Metric >= len(aggMetrics) {
			return fmt.Errorf("row %d: metric index %d out of range", added, r.Metric)
		}
		if r.Kind == 0 && r.Metric == 0 {
			sm.TrialsA += r.TrialsA
			sm.TrialsB += r.TrialsB
			sm.AttritionA += r.AttritionA
			sm.AttritionB += r.AttritionB
			sm.UnsealedA += r.UnsealedA
			sm.UnsealedB += r.UnsealedB
			sm.KeysA += r.KeysA
			sm.KeysB += r.KeysB
			sm.Pairs += r.Keys
			sm.Multi += r.MultiKeys
			if r.Keys > 0 {
				sm.Cases++
				if r.Scenario != lastScenario {
					sm.Scenarios++ // rows are sorted by scenario
					lastScenario = r.Scenario
				}
			}
			if r.Keys >= 2 {
				sm.RepeatedCases++
				sm.ConstantA += uint64(r.ConstantA)
				sm.ConstantB += uint64(r.ConstantB)
			}
		}
		out.Pairs = append(out.Pairs, record.PairTotals{Kind: r.Kind, Name: r.Name, Metric: aggMetrics[r.Metric], Scenario: r.Scenario, Variant: r.Variant,
			Keys: r.Keys, Pairs: r.Pairs, OneArmOnly: r.OneArmOnly, Multi: r.Multi, N11: r.N11, N12: r.N12, N21: r.N21, N22: r.N22,
			SumA: r.SumA, SumB: r.SumB, SumD: r.SumD, SumD2: r.SumD2, SumW: r.SumW, SumWA: r.SumWA, SumWB: r.SumWB, SumWD: r.SumWD,
			SumW2: r.SumW2, SumW2D: r.SumW2D, SumW2D2: r.SumW2D2, MinA: r.MinA, MaxA: r.MaxA, MinB: r.MinB, MaxB: r.MaxB})
		return nil
	}
	if !multi {
		// The per-metric rows straight into out.Pairs, sized in advance:
		// at a million trials they are ~70,000, and no intermediate copy
		// keeps peak memory down.
		out.Pairs = make([]record.PairTotals, 0, len(cases)*len(aggMetrics))
		var err error
		if out.Unmatched, err = pairRowsFromCases(cases, add); err != nil {
			return out, wrap("pairs", err)
		}
	} else {
		cases = nil
		var um []unmatchedRow
		if err := s.t.Select(ctx, &um, Stmt{SQL: s.sql(qCompareUnmatched), Params: p}); err != nil {
			return out, wrap("unmatched", err)
		}
		out.Unmatched = make([]record.UnmatchedCase, len(um))
		for i, r := range um {
			out.Unmatched[i] = record.UnmatchedCase{Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed,
				InA: r.InA == 1, InB: r.InB == 1, GradedA: r.GradedA == 1, GradedB: r.GradedB == 1,
				AttritionA: r.AttritionA, AttritionB: r.AttritionB}
		}
		var pr []pairTotalsRow
		if err := s.t.Select(ctx, &pr, Stmt{SQL: s.sql(qComparePairs), Params: p}); err != nil {
			return out, wrap("pairs", err)
		}
		out.Pairs = make([]record.PairTotals, 0, len(pr))
		for i := range pr {
			if err := add(&pr[i]); err != nil {
				return out, wrap("pairs", err)
			}
		}
	}
	if a.SweepID != b.SweepID {
		var err error
		if out.HashesA, err = s.scenarioHashes(ctx, a); err != nil {
			return out, wrap("scenario hashes", err)
		}
		if out.HashesB, err = s.scenarioHashes(ctx, b); err != nil {
			return out, wrap("scenario hashes", err)
		}
	}
	return out, nil
}

func (s *store) scenarioHashes(ctx context.Context, side record.CompareSide) (map[string]string, error) {
	var rows []scenarioHashRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qScenarioHashes), Params: map[string]string{"sweep_id": side.SweepID, "arm": side.Arm}}); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Scenario] = r.Hash
	}
	return out, nil
}

// arrayParam renders identifiers (fault classes of the taxonomy, trial ids
// rebound makes) as the text of an Array(String) query parameter. Free text
// goes through jsonStrings: chDB reads an array's quoted elements without
// backslash escapes, a server with them.
func arrayParam(v []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\'')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s))
		b.WriteByte('\'')
	}
	b.WriteByte(']')
	return b.String()
}
