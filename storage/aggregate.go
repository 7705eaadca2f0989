package storage

import (
	"context"
	"fmt"
	"rebound/core/outcome"
	"strings"
)

// The aggregated reads of reports and comparisons: ClickHouse computes the
// sufficient statistics of every rate, interval and paired test, and Go
// receives one row per (arm, scenario, metric), per (fault class, scenario,
// metric) or per (metric, case), never one per trial. The formulas that use
// them live in package report and stats; the queries only sum.

// aggMetrics are the metrics the aggregated reads compute, in the order of
// metricsSQL: the harm index (defined as in the trial_metrics view), then
// the outcome columns.
var aggMetrics = append([]Metric{outcome.Harm}, outcome.Stored...)

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
// NOT TESTED), and metricNamesSQL the array of their names.
var metricsSQL, metricNamesSQL = func() (string, string) {
	names := make([]string, len(aggMetrics))
	for i, m := range aggMetrics {
		names[i] = "'" + string(m) + "'"
	}
	return "[" + strings.Join(metricYs, ", ") + "]", "[" + strings.Join(names, ", ") + "]"
}()

// perMetric joins f(i, y) over aggMetrics (y: the metric's outcome
// expression) with sep.
func perMetric(sep string, f func(i int, y string) string) string {
	parts := make([]string, len(metricYs))
	for i, y := range metricYs {
		parts[i] = f(i, y)
	}
	return strings.Join(parts, sep)
}

// Bit masks of a trial's outcomes, bit i for metric i of aggMetrics:
// tmaskSQL the metrics tested (not NULL, no attrition), smaskSQL the
// successes among them. Two integers per trial instead of two arrays: the
// fast queries sum bits, and a trial's whole outcome vector compares as one
// number.
var tmaskSQL, smaskSQL = func() (string, string) {
	if len(metricYs) > 32 {
		panic("storage: more than 32 metrics do not fit the outcome bit masks")
	}
	t := perMetric(" + ", func(i int, y string) string {
		return fmt.Sprintf("bitShiftLeft(toUInt32(isNotNull(%s) AND attrition = 0), %d)", y, i)
	})
	s := perMetric(" + ", func(i int, y string) string {
		return fmt.Sprintf("bitShiftLeft(toUInt32(ifNull(%s, 0) = 1 AND attrition = 0), %d)", y, i)
	})
	return t, s
}()

// trialMasksSQL: one row per trial of the sweep with its outcome masks.
var trialMasksSQL = `SELECT
        arm,
        scenario,
        variant,
        seed,
        attrition,
        weight,
        fault_classes,
        ` + tmaskSQL + ` AS tmask,
        ` + smaskSQL + ` AS smask
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}`

// metricSums renders, for every metric, the sums of one-trial cells that
// a rateTotalsRow holds, as columns prefix+"n"+i and so on: tested trials,
// successes, their weights and squared weights. A cell of one trial is
// tested when its trial is, so these are also the tested cells and Σ over
// cells of the cell's Σw².
func metricSums(prefix string) string {
	return perMetric(",\n        ", func(i int, _ string) string {
		return fmt.Sprintf(`sum(bitTest(tmask, %[1]d)) AS %[2]sn%[1]d,
        sum(bitTest(smask, %[1]d)) AS %[2]sk%[1]d,
        sum(if(bitTest(tmask, %[1]d), weight, 0)) AS %[2]ssw%[1]d,
        sum(if(bitTest(smask, %[1]d), weight, 0)) AS %[2]sswy%[1]d,
        sum(if(bitTest(tmask, %[1]d), weight * weight, 0)) AS %[2]ssww%[1]d`, i, prefix)
	})
}

// rateArrays renders the per-metric array columns of a rateTotalsRow as
// sums of the columns metricSums(prefix) named.
func rateArrays(prefix string) string {
	arr := func(col string) string {
		return "[" + perMetric(", ", func(i int, _ string) string { return fmt.Sprintf("sum(%s%s%d)", prefix, col, i) }) + "]"
	}
	return `
    ` + arr("n") + ` AS tested_cells,
    ` + arr("n") + ` AS n,
    ` + arr("k") + ` AS successes,
    ` + arr("sw") + ` AS sum_weight,
    ` + arr("swy") + ` AS sum_weight_y,
    ` + arr("sww") + ` AS sum_cell_weight_sq`
}

// trialVectorsSQL: one row per trial of the sweep with its per-metric
// tested and success flags (aggMetrics order).
var trialVectorsSQL = `SELECT
        arm,
        scenario,
        variant,
        seed,
        attrition,
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
        sumForEach(tested) AS c_n,
        sumForEach(success) AS c_k,
        sumForEach(arrayMap(x -> x * weight, tested)) AS c_sw,
        sumForEach(arrayMap(x -> x * weight, success)) AS c_swy
    FROM (` + trialVectorsSQL + `)
    GROUP BY arm, scenario, variant, seed
)`

// The fast forms of qRateTotals and qRateTotalsByClass, exact when every
// cell (arm, scenario, variant, seed) holds one trial, as a sweep's cells
// do: they group by case or fault class, never by cell, which is what a
// million cells would cost. multi_cells says whether some case holds a cell
// of several trials; ReportTotals then reads the cell-level forms.
var (
	qRateTotalsFast = `SELECT
    arm,
    '' AS group_name,
    scenario,
    sum(v_trials) AS trials,
    sum(v_attrition) AS attrition_trials,
    sum(v_trials) AS cells,` + rateArrays("v_") + `,
    countIf(v_graded >= 2) AS variation_cases,
    countIf(v_graded >= 2 AND v_outcomes = 1) AS constant_cases,
    max(v_multi) AS multi_cells
FROM
(
    SELECT
        arm,
        scenario,
        variant,
        count() AS v_trials,
        countIf(attrition = 1) AS v_attrition,
        count() > uniqExact(seed) AS v_multi,
        ` + metricSums("v_") + `,
        countIf(tmask != 0) AS v_graded,
        uniqExactIf(bitOr(bitShiftLeft(toUInt64(tmask), 32), smask), tmask != 0) AS v_outcomes
    FROM (` + trialMasksSQL + `)
    GROUP BY arm, scenario, variant
)
GROUP BY arm, scenario
ORDER BY arm, scenario`

	// The sweep's fault classes, sorted: the bits of the class masks.
	qSweepClasses = `SELECT arraySort(groupUniqArrayArray(fault_classes)) AS classes
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}`

	qRateTotalsByClassFast = `WITH faults AS
(
    SELECT scenario, variant, seed, groupBitOr(` + classMaskSQL + `) AS case_mask
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY scenario, variant, seed
)
SELECT
    arm,
    class AS group_name,
    scenario,
    sum(g_trials) AS trials,
    sum(g_attrition) AS attrition_trials,
    sum(g_trials) AS cells,` + rateArrays("g_") + `,
    0 AS variation_cases,
    0 AS constant_cases,
    0 AS multi_cells
FROM
(
    SELECT
        arm,
        scenario,
        case_mask,
        count() AS g_trials,
        countIf(attrition = 1) AS g_attrition,
        ` + metricSums("g_") + `
    FROM (` + trialMasksSQL + `) AS t
    LEFT JOIN faults AS f ON t.scenario = f.scenario AND t.variant = f.variant AND t.seed = f.seed
    GROUP BY arm, scenario, case_mask
)
ARRAY JOIN ` + classesOfMaskSQL("case_mask") + ` AS class
GROUP BY arm, group_name, scenario
ORDER BY arm, group_name, scenario`
)

// classMaskSQL is a trial's fault classes as a bit mask over
// {classes:Array(String)} (sorted, at most 64): bit j for classes[j].
const classMaskSQL = `arrayReduce('groupBitOr', arrayMap(c -> bitShiftLeft(toUInt64(1), indexOf({classes:Array(String)}, c) - 1), fault_classes))`

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
    0 AS variation_cases,
    0 AS constant_cases,
    0 AS multi_cells
FROM cells AS c
LEFT JOIN faults AS f ON c.scenario = f.scenario AND c.variant = f.variant AND c.seed = f.seed
ARRAY JOIN if(empty(f.classes), [{no_fault:String}], f.classes) AS class
GROUP BY arm, group_name, scenario
ORDER BY arm, group_name, scenario`
)

// RateTotals is one metric of one arm over the cells of one scenario (and,
// in a breakdown by fault class, of one class): the sufficient statistics of
// the rate, its clustered interval and its consequence-weighted interval.
type RateTotals struct {
	Arm      string
	Group    string // the fault class; empty in the totals by scenario
	Scenario string
	Metric   Metric
	// Trials and Attrition count the trials of the cells (the same for every
	// metric); Cells the (arm, scenario, variant, seed) cells, TestedCells
	// those where the metric was tested.
	Trials, Attrition  uint64
	Cells, TestedCells uint64
	// N and Successes are the tested trials and their successes; SumWeight
	// and SumWeightY the sums of their weights (all, successes); and
	// SumCellWeightSq the sum over cells of the square of the cell's
	// SumWeight.
	N, Successes                           uint64
	SumWeight, SumWeightY, SumCellWeightSq float64
}

// ArmVariation counts, for one arm, the cases with two or more graded seeds
// and those whose graded seeds all gave the same outcomes.
type ArmVariation struct {
	Arm                  string
	Cases, ConstantCases uint64
}

// ReportTotals is everything a sweep's report needs, aggregated in SQL.
type ReportTotals struct {
	ByScenario   []RateTotals // ordered by (arm, scenario, metric)
	ByFaultClass []RateTotals // ordered by (arm, class, scenario, metric)
	Variation    []ArmVariation
	// MultiTrialCells says some cell held several trials, so the totals were
	// summed per cell first (the slower form of the queries).
	MultiTrialCells bool
}

type rateTotalsRow struct {
	Arm             string    `json:"arm"`
	Group           string    `json:"group_name"`
	Scenario        string    `json:"scenario"`
	Trials          uint64    `json:"trials"`
	Attrition       uint64    `json:"attrition_trials"`
	Cells           uint64    `json:"cells"`
	TestedCells     []uint64  `json:"tested_cells"`
	N               []uint64  `json:"n"`
	Successes       []uint64  `json:"successes"`
	SumWeight       []float64 `json:"sum_weight"`
	SumWeightY      []float64 `json:"sum_weight_y"`
	SumCellWeightSq []float64 `json:"sum_cell_weight_sq"`
	VariationCases  uint64    `json:"variation_cases"`
	ConstantCases   uint64    `json:"constant_cases"`
	MultiCells      uint8     `json:"multi_cells"`
}

// at reads element i of a per-metric array (ClickHouse returns an empty
// array for a group with no rows).
func at[T uint64 | float64](a []T, i int) T {
	if i < len(a) {
		return a[i]
	}
	return 0
}

// ReportTotals reads a sweep's report statistics. noFault names the
// fault-class group of cases without a fault.
func (s *store) ReportTotals(ctx context.Context, sweepID, noFault string) (ReportTotals, error) {
	var out ReportTotals
	p := map[string]string{"sweep_id": sweepID, "no_fault": noFault}
	variation := map[string]*ArmVariation{}
	var arms []string
	multi := false
	read := func(q string) ([]RateTotals, error) {
		var rows []rateTotalsRow
		if err := s.t.selectRows(ctx, &rows, stmt{SQL: s.sql(q), Params: p}); err != nil {
			return nil, err
		}
		variation, arms = map[string]*ArmVariation{}, nil
		res := make([]RateTotals, 0, len(rows)*len(aggMetrics))
		for _, r := range rows {
			multi = multi || r.MultiCells == 1
			for i, m := range aggMetrics {
				res = append(res, RateTotals{Arm: r.Arm, Group: r.Group, Scenario: r.Scenario, Metric: m,
					Trials: r.Trials, Attrition: r.Attrition, Cells: r.Cells, TestedCells: at(r.TestedCells, i),
					N: at(r.N, i), Successes: at(r.Successes, i), SumWeight: at(r.SumWeight, i),
					SumWeightY: at(r.SumWeightY, i), SumCellWeightSq: at(r.SumCellWeightSq, i)})
			}
			if r.Group == "" {
				v := variation[r.Arm]
				if v == nil {
					v = &ArmVariation{Arm: r.Arm}
					variation[r.Arm] = v
					arms = append(arms, r.Arm)
				}
				v.Cases += r.VariationCases
				v.ConstantCases += r.ConstantCases
			}
		}
		return res, nil
	}
	classes, err := s.classes(ctx, stmt{SQL: s.sql(qSweepClasses), Params: p})
	if err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: fault classes: %w", sweepID, err)
	}
	p["classes"] = arrayParam(classes)
	qScenario, qClass := qRateTotalsFast, qRateTotalsByClassFast
	if out.ByScenario, err = read(qScenario); err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: by scenario: %w", sweepID, err)
	}
	if multi {
		// Some cell holds several trials: sum per cell first.
		qScenario, qClass = qRateTotals, qRateTotalsByClass
		if out.ByScenario, err = read(qScenario); err != nil {
			return out, fmt.Errorf("storage: ReportTotals %s: by scenario, per cell: %w", sweepID, err)
		}
	}
	out.MultiTrialCells = multi
	for _, arm := range arms {
		out.Variation = append(out.Variation, *variation[arm])
	}
	if out.ByFaultClass, err = read(qClass); err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: by fault class: %w", sweepID, err)
	}
	return out, nil
}

// classes reads the sorted fault classes q returns (at most 64: the class
// masks are UInt64).
func (s *store) classes(ctx context.Context, q stmt) ([]string, error) {
	var rows []struct {
		Classes []string `json:"classes"`
	}
	if err := s.t.selectRows(ctx, &rows, q); err != nil {
		return nil, err
	}
	classes := []string{}
	if len(rows) == 1 {
		classes = rows[0].Classes
	}
	if len(classes) > 64 {
		return nil, fmt.Errorf("%d distinct fault classes; the breakdown handles at most 64", len(classes))
	}
	return classes, nil
}
