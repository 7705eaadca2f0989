package storage

import (
	"context"
	"fmt"
)

// The paired comparison's reads. Side 0 is the baseline (sweep, arm), side
// 1 the candidate; both may be arms of one sweep or of two. A pair is a case
// (scenario, variant, seed) graded in both sides (some metric tested).

// sidesCTE: per case (scenario, variant, seed) what each side holds: its
// trials and attrition, and per metric (metricsSQL order) the tested trials
// n, successes k and tested weight sw, summed over the side's trials of the
// case (a case normally holds one trial per side). The same (sweep, arm) on
// both sides is read once per side. One pass over the trials, grouped by
// case: no row per metric.
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
        fault_classes,
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
        sumForEachIf(tested, side = 0) AS k_n_a,
        sumForEachIf(tested, side = 1) AS k_n_b,
        sumForEachIf(success, side = 0) AS k_k_a,
        sumForEachIf(success, side = 1) AS k_k_b,
        sumForEachIf(tested_weight, side = 0) AS k_sw_a,
        sumForEachIf(tested_weight, side = 1) AS k_sw_b,
        arraySum(k_n_a) > 0 AS k_graded_a,
        arraySum(k_n_b) > 0 AS k_graded_b,
        (k_n_a, k_k_a) AS k_outcomes_a,
        (k_n_b, k_k_b) AS k_outcomes_b,
        if({with_classes:UInt8} = 1, arraySort(groupUniqArrayArray(fault_classes)), []) AS k_classes
    FROM t
    GROUP BY scenario, variant, seed
)`

var (
	// Per side: trials and attrition; over the pairs: their number, the
	// pairs holding several trials in a side, the distinct cases and
	// scenarios, and per side the cases with two or more paired seeds and
	// those whose seeds all gave the same outcomes on every metric.
	qCompareSummary = `WITH ` + sidesCTE + `
SELECT
    sum(s_trials_a) AS trials_a,
    sum(s_trials_b) AS trials_b,
    sum(s_attrition_a) AS attrition_a,
    sum(s_attrition_b) AS attrition_b,
    sum(s_pairs) AS pairs,
    sum(s_multi) AS multi,
    countIf(s_pairs > 0) AS cases,
    uniqExactIf(scenario, s_pairs > 0) AS scenarios,
    countIf(s_pairs >= 2) AS repeated_cases,
    countIf(s_pairs >= 2 AND s_distinct_a = 1) AS constant_a,
    countIf(s_pairs >= 2 AND s_distinct_b = 1) AS constant_b,
    sum(s_keys_a) AS keys_a,
    sum(s_keys_b) AS keys_b
FROM
(
    SELECT
        scenario,
        variant,
        sum(k_trials_a) AS s_trials_a,
        sum(k_trials_b) AS s_trials_b,
        sum(k_attrition_a) AS s_attrition_a,
        sum(k_attrition_b) AS s_attrition_b,
        countIf(k_graded_a AND k_graded_b) AS s_pairs,
        countIf(k_graded_a AND k_graded_b AND (k_trials_a > 1 OR k_trials_b > 1)) AS s_multi,
        uniqExactIf(k_outcomes_a, k_graded_a AND k_graded_b) AS s_distinct_a,
        uniqExactIf(k_outcomes_b, k_graded_a AND k_graded_b) AS s_distinct_b,
        countIf(k_in_a) AS s_keys_a,
        countIf(k_in_b) AS s_keys_b
    FROM keys
    GROUP BY scenario, variant
)`

	// The cases that could not be paired, with what each side holds.
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

	// Per group, metric and case (scenario, variant), over its pairs: the
	// sufficient statistics of the paired estimators. For a pair tested in
	// both sides a = successes/n of the baseline, b the candidate's, d = b −
	// a and w the mean weight of the pair's trials averaged over the two
	// sides. Group kind 0 is every pair; kind 1 one fault class (a pair
	// counts in each class scheduled for its case in either side, or in
	// {no_fault}); with_classes = 0 leaves kind 1 out.
	qComparePairs = `WITH ` + sidesCTE + `,
pm AS
(
    SELECT
        scenario,
        variant,
        seed,
        k_classes AS classes,
        ` + metricNamesSQL + `[i] AS metric,
        k_n_a[i] AS na,
        k_k_a[i] AS ka,
        k_sw_a[i] AS swa,
        k_n_b[i] AS nb,
        k_k_b[i] AS kb,
        k_sw_b[i] AS swb
    FROM keys
    ARRAY JOIN arrayEnumerate(` + metricNamesSQL + `) AS i
    WHERE k_graded_a AND k_graded_b
),
obs AS
(
    SELECT
        scenario,
        variant,
        metric,
        classes,
        na > 0 AND nb > 0 AS tested,
        (na > 0) != (nb > 0) AS one,
        na = 1 AND nb = 1 AS single,
        if(tested, ka / na, 0) AS a,
        if(tested, kb / nb, 0) AS b,
        b - a AS d,
        if(tested, (swa / na + swb / nb) / 2, 0) AS w
    FROM pm
),
-- First per set of fault classes (a handful per case), then per class:
-- each pair is summed once, not once per class.
by_classes AS
(
    SELECT
        metric,
        scenario,
        variant,
        classes,
        count() AS c_keys,
        countIf(tested) AS c_pairs,
        countIf(one) AS c_one,
        countIf(tested AND NOT single) AS c_multi,
        countIf(tested AND single AND a = 1 AND b = 1) AS c_n11,
        countIf(tested AND single AND a = 1 AND b = 0) AS c_n12,
        countIf(tested AND single AND a = 0 AND b = 1) AS c_n21,
        countIf(tested AND single AND a = 0 AND b = 0) AS c_n22,
        sumIf(a, tested) AS c_sum_a,
        sumIf(b, tested) AS c_sum_b,
        sumIf(d, tested) AS c_sum_d,
        sumIf(d * d, tested) AS c_sum_d2,
        sumIf(w, tested) AS c_sum_w,
        sumIf(w * a, tested) AS c_sum_wa,
        sumIf(w * b, tested) AS c_sum_wb,
        sumIf(w * d, tested) AS c_sum_wd,
        sumIf(w * w, tested) AS c_sum_w2,
        sumIf(w * w * d, tested) AS c_sum_w2d,
        sumIf(w * w * d * d, tested) AS c_sum_w2d2,
        minIf(a, tested) AS c_min_a,
        maxIf(a, tested) AS c_max_a,
        minIf(b, tested) AS c_min_b,
        maxIf(b, tested) AS c_max_b
    FROM obs
    GROUP BY metric, scenario, variant, classes
)
SELECT
    g.1 AS group_kind,
    g.2 AS group_name,
    metric,
    scenario,
    variant,
    sum(c_keys) AS key_count,
    sum(c_pairs) AS pairs,
    sum(c_one) AS one_arm_only,
    sum(c_multi) AS multi,
    sum(c_n11) AS n11,
    sum(c_n12) AS n12,
    sum(c_n21) AS n21,
    sum(c_n22) AS n22,
    sum(c_sum_a) AS sum_a,
    sum(c_sum_b) AS sum_b,
    sum(c_sum_d) AS sum_d,
    sum(c_sum_d2) AS sum_d2,
    sum(c_sum_w) AS sum_w,
    sum(c_sum_wa) AS sum_wa,
    sum(c_sum_wb) AS sum_wb,
    sum(c_sum_wd) AS sum_wd,
    sum(c_sum_w2) AS sum_w2,
    sum(c_sum_w2d) AS sum_w2d,
    sum(c_sum_w2d2) AS sum_w2d2,
    minIf(c_min_a, c_pairs > 0) AS min_a,
    maxIf(c_max_a, c_pairs > 0) AS max_a,
    minIf(c_min_b, c_pairs > 0) AS min_b,
    maxIf(c_max_b, c_pairs > 0) AS max_b
FROM by_classes
ARRAY JOIN arrayConcat([(0, '')],
    if({with_classes:UInt8} = 1, arrayMap(x -> (1, x), if(empty(classes), [{no_fault:String}], classes)), [])) AS g
GROUP BY group_kind, group_name, metric, scenario, variant
ORDER BY group_kind, group_name, metric, scenario, variant`

	// Per scenario, whether the side ran it from one file (its hash) or
	// several ('mixed').
	qScenarioHashes = `SELECT scenario, if(uniqExact(scenario_hash) > 1, 'mixed', any(scenario_hash)) AS hash
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String}
GROUP BY scenario
ORDER BY scenario`
)

// CompareSide names one side of a comparison: an arm of a sweep.
type CompareSide struct{ SweepID, Arm string }

// CompareSummary is what a comparison counts over cases rather than
// metrics. A is the baseline, B the candidate.
type CompareSummary struct {
	TrialsA, TrialsB, AttritionA, AttritionB uint64
	// Pairs are the cases (scenario, variant, seed) graded in both sides;
	// Multi those holding more than one trial in a side; Cases the distinct
	// (scenario, variant) and Scenarios the scenarios among them.
	Pairs, Multi, Cases, Scenarios uint64
	// RepeatedCases are the cases with two or more pairs; ConstantA/B those
	// whose pairs all gave the same outcomes on every metric in that side.
	RepeatedCases, ConstantA, ConstantB uint64
	// KeysA and KeysB count the cases (scenario, variant, seed) with a trial
	// in each side.
	KeysA, KeysB uint64
}

// UnmatchedCase is a case (scenario, variant, seed) not graded in both
// sides: which side has trials and graded ones, and whether they were lost
// to attrition.
type UnmatchedCase struct {
	Scenario, Variant      string
	Seed                   uint64
	InA, InB               bool
	GradedA, GradedB       bool
	AttritionA, AttritionB uint64
}

// PairTotals is one metric over the pairs of one case (scenario, variant)
// within a group: every pair (Kind 0) or one fault class (Kind 1, Name).
// Keys counts the pairs whatever the metric; Pairs those where the metric was
// tested in both sides, OneArmOnly those where it was in one. Over the
// tested pairs (a, b, w, d = b − a, see qComparePairs): Multi counts those
// with more than one trial in a side, N11..N22 the 2×2 table of the others,
// and the Sum* fields the sums named after them; Min/Max the range of a and b.
type PairTotals struct {
	Kind                      uint8
	Name                      string
	Metric                    Metric
	Scenario, Variant         string
	Keys, Pairs, OneArmOnly   uint64
	Multi, N11, N12, N21, N22 uint64
	SumA, SumB, SumD, SumD2   float64
	SumW, SumWA, SumWB, SumWD float64
	SumW2, SumW2D, SumW2D2    float64
	MinA, MaxA, MinB, MaxB    float64
}

// CompareTotals is everything a paired comparison needs, aggregated in SQL.
type CompareTotals struct {
	Summary   CompareSummary
	Unmatched []UnmatchedCase // ordered by (scenario, variant, seed)
	Pairs     []PairTotals    // ordered by (kind, name, metric, scenario, variant)
	// HashesA and HashesB map scenario to file hash ("mixed" for several);
	// read only when the sides are in different sweeps.
	HashesA, HashesB map[string]string
}

type compareSummaryRow struct {
	TrialsA       uint64 `json:"trials_a"`
	TrialsB       uint64 `json:"trials_b"`
	AttritionA    uint64 `json:"attrition_a"`
	AttritionB    uint64 `json:"attrition_b"`
	Pairs         uint64 `json:"pairs"`
	Multi         uint64 `json:"multi"`
	Cases         uint64 `json:"cases"`
	Scenarios     uint64 `json:"scenarios"`
	RepeatedCases uint64 `json:"repeated_cases"`
	ConstantA     uint64 `json:"constant_a"`
	ConstantB     uint64 `json:"constant_b"`
	KeysA         uint64 `json:"keys_a"`
	KeysB         uint64 `json:"keys_b"`
}

type unmatchedRow struct {
	Scenario   string `json:"scenario"`
	Variant    string `json:"variant"`
	Seed       uint64 `json:"seed"`
	InA        uint8  `json:"in_a"`
	InB        uint8  `json:"in_b"`
	GradedA    uint8  `json:"graded_a"`
	GradedB    uint8  `json:"graded_b"`
	AttritionA uint64 `json:"attrition_a"`
	AttritionB uint64 `json:"attrition_b"`
}

type pairTotalsRow struct {
	Kind       uint8   `json:"group_kind"`
	Name       string  `json:"group_name"`
	Metric     string  `json:"metric"`
	Scenario   string  `json:"scenario"`
	Variant    string  `json:"variant"`
	Keys       uint64  `json:"key_count"`
	Pairs      uint64  `json:"pairs"`
	OneArmOnly uint64  `json:"one_arm_only"`
	Multi      uint64  `json:"multi"`
	N11        uint64  `json:"n11"`
	N12        uint64  `json:"n12"`
	N21        uint64  `json:"n21"`
	N22        uint64  `json:"n22"`
	SumA       float64 `json:"sum_a"`
	SumB       float64 `json:"sum_b"`
	SumD       float64 `json:"sum_d"`
	SumD2      float64 `json:"sum_d2"`
	SumW       float64 `json:"sum_w"`
	SumWA      float64 `json:"sum_wa"`
	SumWB      float64 `json:"sum_wb"`
	SumWD      float64 `json:"sum_wd"`
	SumW2      float64 `json:"sum_w2"`
	SumW2D     float64 `json:"sum_w2d"`
	SumW2D2    float64 `json:"sum_w2d2"`
	MinA       float64 `json:"min_a"`
	MaxA       float64 `json:"max_a"`
	MinB       float64 `json:"min_b"`
	MaxB       float64 `json:"max_b"`
}

type scenarioHashRow struct {
	Scenario string `json:"scenario"`
	Hash     string `json:"hash"`
}

// CompareTotals reads the paired comparison of side b (candidate) against
// side a (baseline). withClasses adds the breakdown by fault class; noFault
// names the group of cases without a fault.
func (s *store) CompareTotals(ctx context.Context, a, b CompareSide, withClasses bool, noFault string) (CompareTotals, error) {
	var out CompareTotals
	wc := "0"
	if withClasses {
		wc = "1"
	}
	p := map[string]string{"a_sweep": a.SweepID, "a_arm": a.Arm, "b_sweep": b.SweepID, "b_arm": b.Arm,
		"with_classes": wc, "no_fault": noFault}
	wrap := func(what string, err error) error {
		return fmt.Errorf("storage: CompareTotals %s/%s vs %s/%s: %s: %w", a.SweepID, a.Arm, b.SweepID, b.Arm, what, err)
	}
	var sum []compareSummaryRow
	if err := s.t.selectRows(ctx, &sum, stmt{SQL: s.sql(qCompareSummary), Params: p}); err != nil {
		return out, wrap("summary", err)
	}
	if len(sum) == 1 {
		out.Summary = CompareSummary(sum[0])
	}
	var um []unmatchedRow
	if err := s.t.selectRows(ctx, &um, stmt{SQL: s.sql(qCompareUnmatched), Params: p}); err != nil {
		return out, wrap("unmatched", err)
	}
	out.Unmatched = make([]UnmatchedCase, len(um))
	for i, r := range um {
		out.Unmatched[i] = UnmatchedCase{Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed,
			InA: r.InA == 1, InB: r.InB == 1, GradedA: r.GradedA == 1, GradedB: r.GradedB == 1,
			AttritionA: r.AttritionA, AttritionB: r.AttritionB}
	}
	var pr []pairTotalsRow
	if err := s.t.selectRows(ctx, &pr, stmt{SQL: s.sql(qComparePairs), Params: p}); err != nil {
		return out, wrap("pairs", err)
	}
	out.Pairs = make([]PairTotals, len(pr))
	for i, r := range pr {
		out.Pairs[i] = PairTotals{Kind: r.Kind, Name: r.Name, Metric: Metric(r.Metric), Scenario: r.Scenario, Variant: r.Variant,
			Keys: r.Keys, Pairs: r.Pairs, OneArmOnly: r.OneArmOnly, Multi: r.Multi, N11: r.N11, N12: r.N12, N21: r.N21, N22: r.N22,
			SumA: r.SumA, SumB: r.SumB, SumD: r.SumD, SumD2: r.SumD2, SumW: r.SumW, SumWA: r.SumWA, SumWB: r.SumWB, SumWD: r.SumWD,
			SumW2: r.SumW2, SumW2D: r.SumW2D, SumW2D2: r.SumW2D2, MinA: r.MinA, MaxA: r.MaxA, MinB: r.MinB, MaxB: r.MaxB}
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

func (s *store) scenarioHashes(ctx context.Context, side CompareSide) (map[string]string, error) {
	var rows []scenarioHashRow
	if err := s.t.selectRows(ctx, &rows, stmt{SQL: s.sql(qScenarioHashes), Params: map[string]string{"sweep_id": side.SweepID, "arm": side.Arm}}); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Scenario] = r.Hash
	}
	return out, nil
}
