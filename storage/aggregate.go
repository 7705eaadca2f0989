package storage

import (
	"context"
	"fmt"
)

// The aggregated reads of reports and comparisons: ClickHouse computes the
// sufficient statistics of every rate, interval and paired test, and Go
// receives one row per (arm, scenario, metric), per (fault class, scenario,
// metric) or per (metric, case), never one per trial. The formulas that use
// them live in package report and stats; the queries only sum.

// cellsCTE is the Cells aggregation without its ORDER BY: one row per
// (arm, scenario, variant, seed, metric), the unit every query below sums.
const cellsCTE = `cells AS
(
    SELECT
        arm,
        scenario,
        variant,
        seed,
        metric,
        count() AS c_trials,
        countIf(attrition = 1) AS c_attrition,
        countIf(tested = 1) AS c_n,
        countIf(success = 1) AS c_successes,
        sumIf(weight, tested = 1) AS c_sw,
        sumIf(weight, success = 1) AS c_swy
    FROM {{db}}.trial_metrics
    WHERE sweep_id = {sweep_id:String}
    GROUP BY arm, scenario, variant, seed, metric
)`

var (
	// Per arm, scenario and metric. sum_cell_weight_sq sums the squared
	// total weight of each cell: Kish's effective sample size of the
	// weighted rate treats a cell (its trials averaged) as one observation.
	// group_name is empty; by fault class (qRateTotalsByClass) it names the
	// class.
	qRateTotals = `WITH ` + cellsCTE + `
SELECT
    arm,
    '' AS group_name,
    scenario,
    metric,
    sum(c_trials) AS trials,
    sum(c_attrition) AS attrition_trials,
    count() AS cells,
    countIf(c_n > 0) AS tested_cells,
    sum(c_n) AS n,
    sum(c_successes) AS successes,
    sum(c_sw) AS sum_weight,
    sum(c_swy) AS sum_weight_y,
    sum(c_sw * c_sw) AS sum_cell_weight_sq
FROM cells
GROUP BY arm, scenario, metric
ORDER BY arm, scenario, metric`

	// The same per fault class: a case (scenario, variant, seed) counts in
	// each class scheduled for it in any arm, or in {no_fault} without one.
	qRateTotalsByClass = `WITH ` + cellsCTE + `,
faults AS
(
    SELECT scenario, variant, seed, groupUniqArrayArray(fault_classes) AS classes
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {sweep_id:String}
    GROUP BY scenario, variant, seed
)
SELECT
    c.arm AS arm,
    class AS group_name,
    c.scenario AS scenario,
    c.metric AS metric,
    sum(c.c_trials) AS trials,
    sum(c.c_attrition) AS attrition_trials,
    count() AS cells,
    countIf(c.c_n > 0) AS tested_cells,
    sum(c.c_n) AS n,
    sum(c.c_successes) AS successes,
    sum(c.c_sw) AS sum_weight,
    sum(c.c_swy) AS sum_weight_y,
    sum(c.c_sw * c.c_sw) AS sum_cell_weight_sq
FROM cells AS c
LEFT JOIN faults AS f ON c.scenario = f.scenario AND c.variant = f.variant AND c.seed = f.seed
ARRAY JOIN if(empty(f.classes), [{no_fault:String}], f.classes) AS class
GROUP BY arm, group_name, scenario, metric
ORDER BY arm, group_name, scenario, metric`

	// Per arm: the cases (scenario, variant) with two or more graded seeds
	// (a seed is graded when any metric was tested), and those whose graded
	// seeds all have the same tested counts and successes on every metric.
	qArmVariation = `WITH ` + cellsCTE + `
SELECT
    arm,
    countIf(graded >= 2) AS cases,
    countIf(graded >= 2 AND outcomes = 1) AS constant_cases
FROM
(
    SELECT arm, scenario, variant, countIf(seed_graded) AS graded, uniqExactIf(seed_outcomes, seed_graded) AS outcomes
    FROM
    (
        SELECT arm, scenario, variant, seed, max(c_n) > 0 AS seed_graded, arraySort(groupArray((metric, c_n, c_successes))) AS seed_outcomes
        FROM cells
        GROUP BY arm, scenario, variant, seed
    )
    GROUP BY arm, scenario, variant
)
GROUP BY arm
ORDER BY arm`
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
}

type rateTotalsRow struct {
	Arm             string  `json:"arm"`
	Group           string  `json:"group_name"`
	Scenario        string  `json:"scenario"`
	Metric          string  `json:"metric"`
	Trials          uint64  `json:"trials"`
	Attrition       uint64  `json:"attrition_trials"`
	Cells           uint64  `json:"cells"`
	TestedCells     uint64  `json:"tested_cells"`
	N               uint64  `json:"n"`
	Successes       uint64  `json:"successes"`
	SumWeight       float64 `json:"sum_weight"`
	SumWeightY      float64 `json:"sum_weight_y"`
	SumCellWeightSq float64 `json:"sum_cell_weight_sq"`
}

type armVariationRow struct {
	Arm           string `json:"arm"`
	Cases         uint64 `json:"cases"`
	ConstantCases uint64 `json:"constant_cases"`
}

// ReportTotals reads a sweep's report statistics. noFault names the
// fault-class group of cases without a fault.
func (s *store) ReportTotals(ctx context.Context, sweepID, noFault string) (ReportTotals, error) {
	var out ReportTotals
	p := map[string]string{"sweep_id": sweepID, "no_fault": noFault}
	read := func(q string) ([]RateTotals, error) {
		var rows []rateTotalsRow
		if err := s.t.selectRows(ctx, &rows, stmt{SQL: s.sql(q), Params: p}); err != nil {
			return nil, err
		}
		res := make([]RateTotals, len(rows))
		for i, r := range rows {
			res[i] = RateTotals{Arm: r.Arm, Group: r.Group, Scenario: r.Scenario, Metric: Metric(r.Metric),
				Trials: r.Trials, Attrition: r.Attrition, Cells: r.Cells, TestedCells: r.TestedCells,
				N: r.N, Successes: r.Successes, SumWeight: r.SumWeight, SumWeightY: r.SumWeightY, SumCellWeightSq: r.SumCellWeightSq}
		}
		return res, nil
	}
	var err error
	if out.ByScenario, err = read(qRateTotals); err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: by scenario: %w", sweepID, err)
	}
	if out.ByFaultClass, err = read(qRateTotalsByClass); err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: by fault class: %w", sweepID, err)
	}
	var vrows []armVariationRow
	if err := s.t.selectRows(ctx, &vrows, stmt{SQL: s.sql(qArmVariation), Params: p}); err != nil {
		return out, fmt.Errorf("storage: ReportTotals %s: variation: %w", sweepID, err)
	}
	for _, r := range vrows {
		out.Variation = append(out.Variation, ArmVariation(r))
	}
	return out, nil
}
