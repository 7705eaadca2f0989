package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func diffSummary(d MetricDiff) string {
	if d.Pairs == 0 {
		return fmt.Sprintf("%s: not tested (no case tested it in both arms)", d.Metric)
	}
	return fmt.Sprintf("%s: baseline %s, candidate %s, Δ %s pts, CI %s, p %s, %d pairs in %d clusters: %s; weighted Δw %s pts, CI %s, p %s: %s",
		d.Metric, pct(d.Baseline), pct(d.Candidate), pts(d.Delta), ciCell(d.Lo, d.Hi, d.NotEstimable), pval(d.P), d.Pairs, d.Clusters, d.Direction,
		pts(d.Weighted.Delta), ciCell(d.Weighted.Lo, d.Weighted.Hi, d.Weighted.NotEstimable), pval(d.Weighted.P), d.Weighted.Direction)
}

// WriteJUnit renders one test case per gated metric (per metric when no
// gate was evaluated): a failure for a blocking regression (or, without a
// gate, for a metric on which the candidate is worse), skipped when not
// tested; non-blocking warnings pass with the warning in system-out.
func (c *Comparison) WriteJUnit(w io.Writer) error {
	suite := junitSuite{
		Name: fmt.Sprintf("rebound %s vs %s", c.Candidate.Arm, c.Baseline.Arm),
		Properties: []junitProperty{
			{"baseline_arm", c.Baseline.Arm}, {"baseline_sweep", c.Baseline.SweepID},
			{"candidate_arm", c.Candidate.Arm}, {"candidate_sweep", c.Candidate.SweepID},
			{"paired_cases", fmt.Sprint(c.Cases)}, {"cases", fmt.Sprint(c.DistinctCases)}, {"unit", c.Unit},
			{"harm_index", c.HarmLine()}, {"unmatched_cases", fmt.Sprint(len(c.Unmatched))},
			{"confidence", trimFloat(c.Confidence)},
		},
		SystemOut: c.HarmLine() + "\n" + c.Headline(),
	}
	if c.Unsealed() {
		suite.Properties = append(suite.Properties,
			junitProperty{"baseline_unsealed_trials", fmt.Sprint(c.BaselineUnsealed)},
			junitProperty{"candidate_unsealed_trials", fmt.Sprint(c.CandidateUnsealed)})
		suite.SystemOut += "\n" + strings.Join(c.UnsealedNotes(), "\n")
	}
	class := "rebound.compare"
	if g := c.Gate; g != nil {
		class = "rebound.gate"
		suite.Properties = append(suite.Properties, junitProperty{"thresholds", g.File})
		for _, k := range g.Checks {
			tc := junitCase{Name: fmt.Sprintf("%s (%s)", k.Metric, k.RuleText()), Classname: class}
			d, _ := c.Metric(k.Metric)
			detail := diffSummary(d)
			switch k.Status {
			case CheckFail:
				tc.Failure = &junitMessage{Message: k.Reason, Type: "regression", Text: detail}
				suite.Failures++
			case CheckWarn:
				tc.SystemOut = "WARNING (not blocking): " + k.Reason + "\n" + detail
			case CheckNotTested:
				tc.Skipped = &junitMessage{Message: k.Reason}
				suite.Skipped++
			default:
				tc.SystemOut = k.Reason + "\n" + detail
			}
			suite.Cases = append(suite.Cases, tc)
		}
	} else {
		for _, d := range c.Metrics {
			tc := junitCase{Name: d.Metric, Classname: class}
			switch d.Direction {
			case Worse:
				tc.Failure = &junitMessage{Message: fmt.Sprintf("candidate worse by %s pts", pts(d.Delta)), Type: "regression", Text: diffSummary(d)}
				suite.Failures++
			case NotTested:
				tc.Skipped = &junitMessage{Message: "not tested in both arms"}
				suite.Skipped++
			default:
				tc.SystemOut = diffSummary(d)
			}
			suite.Cases = append(suite.Cases, tc)
		}
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "rebound", Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
