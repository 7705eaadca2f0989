package record

// TrialFilter selects a sweep's trials for a list (the review UI's
// filtered trials): every field empty selects any, the fields combine with
// AND. The store answers it in SQL (storage.Store.ListTrials); its
// semantics are those of the review UI's filters, tested against an
// independent evaluation in Go on generated sweeps.
type TrialFilter struct {
	Arm, Scenario, Variant string
	// Fault keeps trials injected with this fault class.
	Fault string
	// Metric (a reported metric: the harm index or an outcome) and Value
	// ("true", "false" or "untested"; a trial lost to attrition is
	// untested) keep trials whose metric has that value; both or neither.
	Metric, Value string
	// Check keeps trials that have this check; Status (pass, fail,
	// not_tested), when set, those where it has that status.
	Check, Status string
	// Dimension keeps judged trials the judge scored below the pass score
	// (judge.PassScore) on this dimension.
	Dimension string
	// Disagree keeps judged trials where the judge and the checks disagree
	// on some dimension (judge.Mappings).
	Disagree bool
}

// Filter values of TrialFilter.Value.
const (
	ValueTrue     = "true"
	ValueFalse    = "false"
	ValueUntested = "untested"
)

// TrialPage is one page of a filtered list: the trials (only the list's
// columns are set: id, arm, scenario, variant, seed, fault classes, graded
// outcomes, weight, attrition), which of them have a human verdict in
// force, and how many trials match in all.
type TrialPage struct {
	Trials   []Trial
	Reviewed map[string]bool // by trial id
	Total    uint64
}

// Regression is one paired case where the candidate did worse than the
// baseline on a metric: both sides tested, the values differ, and the
// candidate's is the bad one. Weight is the candidate trial's consequence
// weight.
type Regression struct {
	Scenario, Variant   string
	Seed                uint64
	Weight              float64
	Baseline, Candidate bool
}

// RegressionPage is one page of a metric's regressions, heaviest first,
// and how many there are in all.
type RegressionPage struct {
	Cases []Regression
	Total uint64
}
