package record

import "rebound/core/outcome"

// RateTotals is one metric of one arm over the cells of one scenario (and,
// in a breakdown by fault class, of one class): the sufficient statistics of
// the rate, its clustered interval and its consequence-weighted interval.
type RateTotals struct {
	Arm      string
	Group    string // the fault class; empty in the totals by scenario
	Scenario string
	Metric   outcome.Metric
	// Trials and Attrition count the trials of the cells (the same for every
	// metric), Unsealed those of them whose agent ran unsealed
	// (Trial.Unsealed); Cells the (arm, scenario, variant, seed) cells,
	// TestedCells those where the metric was tested.
	Trials, Attrition  uint64
	Unsealed           uint64
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

// CompareSide names one side of a comparison: an arm of a sweep.
type CompareSide struct{ SweepID, Arm string }

// CompareSummary is what a comparison counts over cases rather than
// metrics. A is the baseline, B the candidate.
type CompareSummary struct {
	TrialsA, TrialsB, AttritionA, AttritionB uint64
	// UnsealedA and UnsealedB count each side's trials whose agent ran
	// unsealed (Trial.Unsealed), paired or not.
	UnsealedA, UnsealedB uint64
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
	Metric                    outcome.Metric
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
