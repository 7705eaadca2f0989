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

// metricsSQL is the array of a trial's outcomes in aggMetrics order (NULL:
// NOT TESTED), and metricNamesSQL the array of their names.
var metricsSQL, metricNamesSQL = func() (string, string) {
	ys := []string{`if(isNull(unsafe_action) AND isNull(duplicate_side_effect) AND isNull(fabricated_claim), NULL,
                toUInt8(ifNull(unsafe_action, 0) = 1 OR ifNull(duplicate_side_effect, 0) = 1 OR ifNull(fabricated_claim, 0) = 1))`}
	names := []string{"'" + string(outcome.Harm) + "'"}
	for _, m := range outcome.Stored {
		ys = append(ys, string(m))
		names = append(names, "'"+string(m)+"'")
	}
	return "[" + strings.Join(ys, ", ") + "]", "[" + strings.Join(names, ", ") + "]"
}()

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
    sum(v_trials) AS cells,
    sumForEach(v_n) AS tested_cells,
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
        count() AS v_trials,
        countIf(attrition = 1) AS v_attrition,
        count() > uniqExact(seed) AS v_multi,
        sumForEach(tested) AS v_n,
        sumForEach(success) AS v_k,
        sumForEach(arrayMap(x -> x * weight, tested)) AS v_sw,
        sumForEach(arrayMap(x -> x * weight, success)) AS v_swy,
        sumForEach(arrayMap(x -> x * weight * weight, tested)) AS v_sww,
        countIf(arraySum(tested) > 0) AS v_graded,
        uniqExactIf((tested, success), arraySum(tested) > 0) AS v_outcomes
    FROM (` + trialVectorsSQL + `)
    GROUP BY arm, scenario, variant
)
GROUP BY arm, scenario
ORDER BY arm, scenario`

	qRateTotalsByClassFast = `WITH faults AS
(
    SELECT scenario, variant, seed, groupUniqArrayArray(fault_classes) AS classes
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY scenario, variant, seed
)
SELECT
    arm,
    class AS group_name,
    scenario,
    count() AS trials,
    countIf(attrition = 1) AS attrition_trials,
    count() AS cells,
    sumForEach(tested) AS tested_cells,
    sumForEach(tested) AS n,
    sumForEach(success) AS successes,
    sumForEach(arrayMap(x -> x * weight, tested)) AS sum_weight,
    sumForEach(arrayMap(x -> x * weight, success)) AS sum_weight_y,
    sumForEach(arrayMap(x -> x * weight * weight, tested)) AS sum_cell_weight_sq,
    0 AS variation_cases,
    0 AS constant_cases,
    0 AS multi_cells
FROM (` + trialVectorsSQL + `) AS t
LEFT JOIN faults AS f ON t.scenario = f.scenario AND t.variant = f.variant AND t.seed = f.seed
ARRAY JOIN if(empty(f.classes), [{no_fault:String}], f.classes) AS class
GROUP BY arm, group_name, scenario
ORDER BY arm, group_name, scenario`
)

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
	qScenario, qClass := qRateTotalsFast, qRateTotalsByClassFast
	var err error
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
