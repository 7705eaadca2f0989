package storage

import (
	"context"
	"fmt"
	"strings"

	"rebound/core/outcome"
	"rebound/results/record"
)

// The aggregated reads of reports and comparisons: ClickHouse computes the
// sufficient statistics of every rate, interval and paired test, and Go
// receives one row per (arm, scenario, metric), per (fault class, scenario,
// metric) or per (metric, case), never one per trial. The formulas that use
// them live in package report and stats; the queries only sum.

// aggMetrics are the metrics the aggregated reads compute, in the order of
// metricsSQL: the harm index (defined as in the trial_metrics view), then
// the outcome columns.
var aggMetrics = append([]outcome.Metric{outcome.Harm}, outcome.Stored...)

// metricYs are the outcome expressions of a trial in aggMetrics order
// (NULL: NOT TESTED), the elements of metricsSQL.
var metricYs = func() []string {
	ys := []string{`if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1))`}
	for _, m := range outcome.Stored {
		ys = append(ys, string(m))
	}
	return ys
}()

// metricsSQL is the array of a trial's outcomes in aggMetrics order (NULL:
// NOT TESTED).
var metricsSQL = "[" + strings.Join(metricYs, ", ") + "]"

// perMetric joins f(i, y) over aggMetrics (y: the metric's outcome
// expression) with sep.
func perMetric(sep string, f func(i int, y string) string) string {
	parts := make([]string, len(metricYs))
	for i, y := range metricYs {
		parts[i] = f(i, y)
	}
	return strings.Join(parts, sep)
}

// trialMasksSQL: one row per trial of the sweep with its outcome masks
// (masks.go: bit i for metric i of aggMetrics, tmask the metrics tested,
// smask the successes among them; two integers per trial instead of two
// arrays: the fast queries sum bits, and a trial's whole outcome vector
// compares as one number).
var trialMasksSQL = `SELECT
        arm,
        scenario,
        variant,
        seed,
        attrition,
        unsealed,
        weight,
        fault_classes,
        tmask,
        smask
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}`

// bitCounts renders, for every metric i, the tested trials and their
// successes as columns prefix+"n"+i and prefix+"k"+i, and the same as two
// arrays (metric i at element i) prefix+"n" and prefix+"k": the later
// stages sum the arrays with -ForEach over few rows, which keeps the query
// short to analyse.
func bitCounts(prefix string) string {
	counts := perMetric(",\n        ", func(i int, _ string) string {
		return fmt.Sprintf("sum(bitTest(tmask, %[1]d)) AS %[2]sn%[1]d, sum(bitTest(smask, %[1]d)) AS %[2]sk%[1]d", i, prefix)
	})
	arr := func(c string) string {
		return "[" + perMetric(", ", func(i int, _ string) string { return fmt.Sprintf("%s%s%d", prefix, c, i) }) + "] AS " + prefix + c
	}
	return counts + ",\n        " + arr("n") + ",\n        " + arr("k")
}

// weightedSums renders, from the arrays of bitCounts(from) of trials of
// one weight, the sums over them: to+"n" and to+"k" (tested trials,
// successes), to+"sw" and to+"swy" (their weights), to+"sww" (squared
// weights of the tested), arrays per metric.
func weightedSums(from, to string) string {
	return fmt.Sprintf(`sumForEach(%[1]sn) AS %[2]sn,
        sumForEach(%[1]sk) AS %[2]sk,
        sumForEach(arrayMap(x -> weight * x, %[1]sn)) AS %[2]ssw,
        sumForEach(arrayMap(x -> weight * x, %[1]sk)) AS %[2]sswy,
        sumForEach(arrayMap(x -> weight * weight * x, %[1]sn)) AS %[2]ssww`, from, to)
}

// rateArrays renders the per-metric array columns of a rateTotalsRow from
// the arrays weightedSums(_, prefix) named. A cell of one trial is tested
// when its trial is, so the tested trials are also the tested cells, and
// Σw² of the trials is Σ over cells of the cell's Σw squared.
func rateArrays(prefix string) string {
	return fmt.Sprintf(`
    sumForEach(%[1]sn) AS tested_cells,
    sumForEach(%[1]sn) AS n,
    sumForEach(%[1]sk) AS successes,
    sumForEach(%[1]ssw) AS sum_weight,
    sumForEach(%[1]sswy) AS sum_weight_y,
    sumForEach(%[1]ssww) AS sum_cell_weight_sq`, prefix)
}

// trialVectorsSQL: one row per trial of the sweep with its per-metric
// tested and success flags (aggMetrics order).
var trialVectorsSQL = `SELECT
        arm,
        scenario,
        variant,
        seed,
        attrition,
        unsealed,
        weight,
        arrayMap(y -> toUInt64(isNotNull(y) AND attrition = 0), ` + metricsSQL + `) AS tested,
        arrayMap(y -> toUInt64(ifNull(y, 0) = 1 AND attrition = 0), ` + metricsSQL + `) AS success
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}`

// wideCellsCTE: one row per cell (arm, scenario, variant, seed) with, per
// metric (aggMetrics order), the tested trials c_n, successes c_k and the
// weights of both c_sw, c_swy: one pass over the trials, no row per metric.
var wideCellsCTE = `cells AS
(
    SELECT
        arm,
        scenario,
        variant,
        seed,
        count() AS c_trials,
        countIf(attrition = 1) AS c_attrition,
        countIf(unsealed = 1) AS c_unsealed,
        sumForEach(tested) AS c_n,
        sumForEach(success) AS c_k,
        sumForEach(arrayMap(x -> x * weight, tested)) AS c_sw,
        sumForEach(arrayMap(x -> x * weight, success)) AS c_swy
    FROM (` + trialVectorsSQL + `)
    GROUP BY arm, scenario, variant, seed
)`

var (
	// The sweep's fault classes, sorted (the bits of the class masks), and
	// how many (scenario, variant) and distinct 64-bit hashes of them it
	// has: equal counts mean the hashes name the pairs exactly, so the
	// report can join on them (qReportTotalsFastHashed).
	qSweepClasses = casesSQL(`sweep_id = {sweep_id:String}`)

	// The fast form of qRateTotals and qRateTotalsByClass together, exact
	// when every cell (arm, scenario, variant, seed) holds one trial, as a
	// sweep's cells do: one pass over the trials that groups by case or
	// fault class, never by cell, which is what a million cells would
	// cost; multi_cells says whether some cell holds several trials
	// (ReportTotals then reads the cell-level forms). faults ORs the fault
	// classes of every case (scenario, variant, seed) over all arms into a
	// bit mask, joined back to the trials; by_weight counts the outcome
	// bits per (arm, scenario, variant, mask of the case, weight), integers
	// only, and by_variant spreads each over its group kind 0 (every case)
	// and its fault classes (kind 1: a case counts in each class scheduled
	// for it in any arm, or in {no_fault}), the weighted sums being weight
	// times counts. Rows of kind 0 are the totals by scenario with the seed
	// variation of the cases, rows of kind 1 the totals per fault class.
	// Trials of one cell are counted as one only within a weight, so
	// mixed_weights (weights that differ within an (arm, scenario,
	// variant), which a sweep does not produce: a variant has one weight)
	// also sends ReportTotals to the cell-level forms.
	qReportTotalsFast       = reportTotalsFastSQL(false)
	qReportTotalsFastHashed = reportTotalsFastSQL(true)
)

// reportTotalsFastSQL renders qReportTotalsFast; hashed joins the trials to
// their case on (caseKeySQL, seed), integers, instead of (scenario,
// variant, seed), strings: the join costs half as much.
func reportTotalsFastSQL(hashed bool) string {
	q := `WITH faults AS
(
    SELECT scenario, variant, seed, groupBitOr(` + classMaskSQL + `) AS case_mask
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY scenario, variant, seed
),
by_weight AS
(
    SELECT
        arm,
        scenario,
        variant,
        case_mask,
        weight,
        count() AS m_trials,
        countIf(attrition = 1) AS m_attrition,
        countIf(unsealed = 1) AS m_unsealed,
        count() > uniqExact(seed) AS m_multi,
        countIf(tmask != 0) AS m_graded,
        -- A graded trial's outcomes as one number: min = max over the
        -- graded seeds of a case says they never varied.
        minIf(bitOr(bitShiftLeft(toUInt64(tmask), 32), smask), tmask != 0) AS m_min_out,
        maxIf(bitOr(bitShiftLeft(toUInt64(tmask), 32), smask), tmask != 0) AS m_max_out,
        ` + bitCounts("m_") + `
    FROM (` + trialMasksSQL + `) AS t
    LEFT ANY JOIN faults AS f ON t.scenario = f.scenario AND t.variant = f.variant AND t.seed = f.seed
    GROUP BY arm, scenario, variant, case_mask, weight
),
by_variant AS
(
    SELECT
        g.1 AS kind,
        g.2 AS group_name,
        arm,
        scenario,
        variant,
        sum(m_trials) AS v_trials,
        sum(m_attrition) AS v_attrition,
        sum(m_unsealed) AS v_unsealed,
        max(m_multi) AS v_multi,
        min(weight) != max(weight) AS v_mixed_weights,
        sum(m_graded) AS v_graded,
        minIf(m_min_out, m_graded > 0) = maxIf(m_max_out, m_graded > 0) AS v_constant,
        ` + weightedSums("m_", "v_") + `
    FROM by_weight
    ARRAY JOIN arrayConcat([(0, '')], arrayMap(c -> (1, c), ` + classesOfMaskSQL("case_mask") + `)) AS g
    GROUP BY kind, group_name, arm, scenario, variant
)
SELECT
    kind AS group_kind,
    arm,
    group_name,
    scenario,
    sum(v_trials) AS trials,
    sum(v_attrition) AS attrition_trials,
    sum(v_unsealed) AS unsealed_trials,
    sum(v_trials) AS cells,` + rateArrays("v_") + `,
    countIf(kind = 0 AND v_graded >= 2) AS variation_cases,
    countIf(kind = 0 AND v_graded >= 2 AND v_constant) AS constant_cases,
    max(kind = 0 AND v_multi) AS multi_cells,
    max(kind = 0 AND v_mixed_weights) AS mixed_weights
FROM by_variant
GROUP BY group_kind, arm, group_name, scenario
ORDER BY group_kind, arm, group_name, scenario`
	if hashed {
		q = strings.Replace(q, `SELECT scenario, variant, seed, groupBitOr(`, `SELECT `+caseKeySQL+` AS case_key, seed, groupBitOr(`, 1)
		q = strings.Replace(q, `GROUP BY scenario, variant, seed`, `GROUP BY case_key, seed`, 1)
		q = strings.Replace(q, `FROM (`+trialMasksSQL+`) AS t
    LEFT ANY JOIN faults AS f ON t.scenario = f.scenario AND t.variant = f.variant AND t.seed = f.seed`,
			`FROM (SELECT *, `+caseKeySQL+` AS case_key FROM (`+trialMasksSQL+`)) AS t
    LEFT ANY JOIN faults AS f ON t.case_key = f.case_key AND t.seed = f.seed`, 1)
	}
	return q
}

// casesSQL renders the statement that reads, over the trials where selects,
// their fault classes, sorted, and how many (scenario, variant) pairs and
// distinct caseKeySQL hashes of them they hold (a sweepCasesRow).
func casesSQL(where string) string {
	return `SELECT
    arraySort(groupUniqArrayArray(sv_classes)) AS classes,
    count() AS pairs,
    uniqExact(sv_key) AS pair_keys
FROM
(
    SELECT scenario, variant, groupUniqArrayArray(fault_classes) AS sv_classes, any(` + caseKeySQL + `) AS sv_key
    FROM {{db}}.trials FINAL
    WHERE ` + where + `
    GROUP BY scenario, variant
)`
}

// caseKeySQL is a 64-bit hash of (scenario, variant), which names them
// exactly when a sweep has as many distinct hashes as pairs.
const caseKeySQL = `cityHash64(scenario, variant)`

// classMaskSQL is a trial's fault classes as a bit mask over
// {classes:Array(String)} (sorted, at most 64): bit j for classes[j]. A
// class not in {classes} (all of them when the list is empty, as it is
// when a comparison leaves classes out) adds no bit. The shift is never
// negative: the engine evaluates both branches of an if() here, so
// bitShiftLeft(1, indexOf(...) - 1) behind a with_classes test still
// failed on a class outside an empty list.
const classMaskSQL = `arrayReduce('groupBitOr', arrayMap(i -> bitShiftLeft(toUInt64(i > 0), greatest(i, 1) - 1), arrayMap(c -> indexOf({classes:Array(String)}, c), fault_classes)))`

// classesOfMaskSQL lists the classes of a mask, or {no_fault} for none.
func classesOfMaskSQL(mask string) string {
	return `if(` + mask + ` = 0, [{no_fault:String}],
    arrayFilter((c, j) -> bitTest(` + mask + `, j - 1), {classes:Array(String)}, arrayEnumerate({classes:Array(String)})))`
}

// rateColumns sums cells (or groups of cells) into the columns of a
// rateTotalsRow; the argument arrays are per metric.
const rateColumns = `
    sum(c_trials) AS trials,
    sum(c_attrition) AS attrition_trials,
    sum(c_unsealed) AS unsealed_trials,
    count() AS cells,
    sumForEach(arrayMap(x -> toUInt64(x > 0), c_n)) AS tested_cells,
    sumForEach(c_n) AS n,
    sumForEach(c_k) AS successes,
    sumForEach(c_sw) AS sum_weight,
    sumForEach(c_swy) AS sum_weight_y,
    sumForEach(arrayMap(x -> x * x, c_sw)) AS sum_cell_weight_sq`

var (
	// Per arm and scenario, arrays per metric: the sums of the rates and
	// their intervals (sum_cell_weight_sq sums the squared total weight of
	// each cell: Kish's effective sample size of the weighted rate treats a
	// cell, its trials averaged, as one observation), and the seed
	// variation of the scenario's cases: those with two or more graded
	// seeds (a seed is graded when any metric was tested), and those whose
	// graded seeds all have the same tested counts and successes on every
	// metric.
	qRateTotals = `WITH ` + wideCellsCTE + `
SELECT
    arm,
    '' AS group_name,
    scenario,
    sum(v_trials) AS trials,
    sum(v_attrition) AS attrition_trials,
    sum(v_unsealed) AS unsealed_trials,
    sum(v_cells) AS cells,
    sumForEach(v_tested_cells) AS tested_cells,
    sumForEach(v_n) AS n,
    sumForEach(v_k) AS successes,
    sumForEach(v_sw) AS sum_weight,
    sumForEach(v_swy) AS sum_weight_y,
    sumForEach(v_sww) AS sum_cell_weight_sq,
    countIf(v_graded >= 2) AS variation_cases,
    countIf(v_graded >= 2 AND v_outcomes = 1) AS constant_cases,
    max(v_multi) AS multi_cells
FROM
(
    SELECT
        arm,
        scenario,
        variant,
        max(c_trials) > 1 AS v_multi,
        sum(c_trials) AS v_trials,
        sum(c_attrition) AS v_attrition,
        sum(c_unsealed) AS v_unsealed,
        count() AS v_cells,
        sumForEach(arrayMap(x -> toUInt64(x > 0), c_n)) AS v_tested_cells,
        sumForEach(c_n) AS v_n,
        sumForEach(c_k) AS v_k,
        sumForEach(c_sw) AS v_sw,
        sumForEach(c_swy) AS v_swy,
        sumForEach(arrayMap(x -> x * x, c_sw)) AS v_sww,
        countIf(arraySum(c_n) > 0) AS v_graded,
        uniqExactIf((c_n, c_k), arraySum(c_n) > 0) AS v_outcomes
    FROM cells
    GROUP BY arm, scenario, variant
)
GROUP BY arm, scenario
ORDER BY arm, scenario`

	// The same per fault class (without the variation): a case (scenario,
	// variant, seed) counts in each class scheduled for it in any arm, or
	// in {no_fault} without one.
	qRateTotalsByClass = `WITH ` + wideCellsCTE + `,
faults AS
(
    SELECT scenario, variant, seed, groupUniqArrayArray(fault_classes) AS classes
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY scenario, variant, seed
)
SELECT
    arm,
    class AS group_name,
    scenario,` + rateColumns + `,
    toUInt64(0) AS variation_cases,
    toUInt64(0) AS constant_cases,
    toUInt8(0) AS multi_cells
FROM cells AS c
LEFT JOIN faults AS f ON c.scenario = f.scenario AND c.variant = f.variant AND c.seed = f.seed
ARRAY JOIN if(empty(f.classes), [{no_fault:String}], f.classes) AS class
GROUP BY arm, group_name, scenario
ORDER BY arm, group_name, scenario`
)

type rateTotalsRow struct {
	Kind            uint8     `ch:"group_kind" json:"group_kind"` // qReportTotalsFast: 0 by scenario, 1 by fault class
	Arm             string    `ch:"arm" json:"arm"`
	Group           string    `ch:"group_name" json:"group_name"`
	Scenario        string    `ch:"scenario" json:"scenario"`
	Trials          uint64    `ch:"trials" json:"trials"`
	Attrition       uint64    `ch:"attrition_trials" json:"attrition_trials"`
	Unsealed        uint64    `ch:"unsealed_trials" json:"unsealed_trials"`
	Cells           uint64    `ch:"cells" json:"cells"`
	TestedCells     []uint64  `ch:"tested_cells" json:"tested_cells"`
	N               []uint64  `ch:"n" json:"n"`
	Successes       []uint64  `ch:"successes" json:"successes"`
	SumWeight       []float64 `ch:"sum_weight" json:"sum_weight"`
	SumWeightY      []float64 `ch:"sum_weight_y" json:"sum_weight_y"`
	SumCellWeightSq []float64 `ch:"sum_cell_weight_sq" json:"sum_cell_weight_sq"`
	VariationCases  uint64    `ch:"variation_cases" json:"variation_cases"`
	ConstantCases   uint64    `ch:"constant_cases" json:"constant_cases"`
	MultiCells      uint8     `ch:"multi_cells" json:"multi_cells"`
	MixedWeights    uint8     `ch:"mixed_weights" json:"mixed_weights"` // qReportTotalsFast only
}

// at reads element i of a per-metric array (ClickHouse returns an empty
// array for a group with no rows).
func at[T uint64 | float64](a []T, i int) T {
	if i < len(a) {
		return a[i]
	}
	return 0
}

// reportTotalsThreads is how many threads the fast totals statement may
// use on the embedded engine. Its hash tables hold a case per (scenario,
// variant, seed) in the fault classes' pass and a group per (arm, scenario,
// variant, class mask, weight), small enough for one per thread: at
// 1,000,000 trials on two cores, two threads took `rebound report` from
// 1.08-1.13 s to 0.75-0.81 s wall at the same CPU, for 15-30 MB more peak
// RSS (403-420 MB to 429-438 MB; 387-392 MB once the engine releases its
// memory after the statement). The per-cell forms group by cell and keep
// one thread.
const reportTotalsThreads = 2

// ReportTotals reads a sweep's report statistics. noFault names the
// fault-class group of cases without a fault.
func (s *store) ReportTotals(ctx context.Context, sweepID, noFault string) (record.ReportTotals, error) {
	var out record.ReportTotals
	wrap := func(what string, err error) error {
		return fmt.Errorf("storage: ReportTotals %s: %s: %w", sweepID, what, err)
	}
	p := map[string]string{"sweep_id": sweepID, "no_fault": noFault}
	var cr []sweepCasesRow
	if err := s.t.Select(ctx, &cr, Stmt{SQL: s.sql(qSweepClasses), Params: p}); err != nil {
		return out, wrap("fault classes", err)
	}
	classes, fast := []string{}, qReportTotalsFast
	if len(cr) == 1 {
		classes = cr[0].Classes
		if cr[0].Pairs == cr[0].PairKeys {
			fast = qReportTotalsFastHashed
		}
	}
	if len(classes) > 64 {
		return out, wrap("fault classes", fmt.Errorf("%d distinct fault classes; the breakdown handles at most 64", len(classes)))
	}
	p["classes"] = arrayParam(classes)
	read := func(q string, threads int) ([]rateTotalsRow, error) {
		var rows []rateTotalsRow
		err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(q), Params: p, Threads: threads, ReleaseMemory: true})
		return rows, err
	}
	rows, err := read(fast, reportTotalsThreads)
	if err != nil {
		return out, wrap("totals", err)
	}
	var byScenario, byClass []rateTotalsRow
	perCell := false
	for _, r := range rows {
		out.MultiTrialCells = out.MultiTrialCells || r.MultiCells == 1
		perCell = perCell || r.MultiCells == 1 || r.MixedWeights == 1
		if r.Kind == 0 {
			byScenario = append(byScenario, r)
		} else {
			byClass = append(byClass, r)
		}
	}
	if perCell {
		// Some cell holds several trials (or may: weights differ within a
		// case): sum per cell first.
		if byScenario, err = read(qRateTotals, 1); err != nil {
			return out, wrap("by scenario, per cell", err)
		}
		if byClass, err = read(qRateTotalsByClass, 1); err != nil {
			return out, wrap("by fault class, per cell", err)
		}
		out.MultiTrialCells = false
		for _, r := range byScenario {
			out.MultiTrialCells = out.MultiTrialCells || r.MultiCells == 1
		}
	}
	out.ByScenario, out.Variation = rateTotals(byScenario, true)
	out.ByFaultClass, _ = rateTotals(byClass, false)
	return out, nil
}

// rateTotals spreads rows over metrics and, with variation, sums the seed
// variation of each arm (arms in the order of the rows).
func rateTotals(rows []rateTotalsRow, variation bool) ([]record.RateTotals, []record.ArmVariation) {
	res := make([]record.RateTotals, 0, len(rows)*len(aggMetrics))
	var vs []record.ArmVariation
	pos := map[string]int{}
	for _, r := range rows {
		for i, m := range aggMetrics {
			res = append(res, record.RateTotals{Arm: r.Arm, Group: r.Group, Scenario: r.Scenario, Metric: m,
				Trials: r.Trials, Attrition: r.Attrition, Unsealed: r.Unsealed, Cells: r.Cells, TestedCells: at(r.TestedCells, i),
				N: at(r.N, i), Successes: at(r.Successes, i), SumWeight: at(r.SumWeight, i),
				SumWeightY: at(r.SumWeightY, i), SumCellWeightSq: at(r.SumCellWeightSq, i)})
		}
		if !variation {
			continue
		}
		k, ok := pos[r.Arm]
		if !ok {
			k = len(vs)
			pos[r.Arm] = k
			vs = append(vs, record.ArmVariation{Arm: r.Arm})
		}
		vs[k].Cases += r.VariationCases
		vs[k].ConstantCases += r.ConstantCases
	}
	return res, vs
}

// sweepCasesRow is a row of qSweepClasses and qCompareCases: the sorted
// fault classes, and how many (scenario, variant) pairs and distinct
// hashes of them (caseKeySQL) the trials hold.
type sweepCasesRow struct {
	Classes  []string `ch:"classes" json:"classes"`
	Pairs    uint64   `ch:"pairs" json:"pairs"`
	PairKeys uint64   `ch:"pair_keys" json:"pair_keys"`
}
