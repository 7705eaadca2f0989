package report

import "fmt"

// Statuses of one gate check.
const (
	CheckPass      = "pass"
	CheckFail      = "fail"       // a blocking regression: the gate fails
	CheckWarn      = "warn"       // a non-blocking regression: reported, exit 0
	CheckNotTested = "not tested" // no pairs: nothing to decide on
)

// Threshold rules.
const (
	RuleMaxIncrease = "max_increase"
	RuleMaxDecrease = "max_decrease"
)

// Gate is the verdict of package gate on a comparison. The rule it applies
// is documented in package gate.
type Gate struct {
	File       string // the thresholds file
	Confidence float64
	Checks     []Check // in the file's order
	Passed     bool
	Failures   int // blocking checks that failed
	Warnings   int // non-blocking checks that flagged a regression
	Blocking   int // blocking checks with pairs: the size of the Holm family
}

// Check is the gate's decision on one metric's threshold.
type Check struct {
	Metric string
	// Weighted: the check decides on the consequence-weighted difference
	// (MetricDiff.Weighted) instead of the unweighted one.
	Weighted bool
	Rule     string  // RuleMaxIncrease or RuleMaxDecrease
	Limit    float64 // the allowed change, as a fraction (0.02 = 2 points)
	Blocking bool
	MinPairs int

	Pairs          int
	Delta, Lo, Hi  float64 // the comparison's difference and decision interval
	Bound          float64 // the bound compared with the limit: Hi for max_increase, Lo for max_decrease
	Within         bool    // the bound lies within the allowed change
	P              float64 // the comparison's decision p-value
	AdjustedP      float64 // Holm (blocking) or Benjamini-Hochberg (others)
	Adjustment     string  // "holm" or "bh"
	Status         string
	Reason         string // one sentence a person can act on
	HigherIsBetter bool
	Direction      string // the comparison's direction, unadjusted
	BaselineRate   float64
	CandidateRate  float64
}

// RuleText renders the rule as written in the thresholds file.
func (c Check) RuleText() string {
	s := fmt.Sprintf("%s %s", c.Rule, trimFloat(c.Limit))
	if c.Weighted {
		s += ", weighted"
	}
	if c.Blocking {
		s += ", blocking"
	}
	if c.MinPairs > 0 {
		s += fmt.Sprintf(", min_pairs %d", c.MinPairs)
	}
	return s
}
