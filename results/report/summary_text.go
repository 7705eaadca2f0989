package report

import (
	"fmt"
	"io"
	"math"
	"rebound/core/scenario"
	"strings"
	"text/tabwriter"
)

// String renders one cell for the terminal: "12.5% [4-30] n=40", the
// interval being the clustered one when defined; "not tested" when no trial
// had evidence.
func (c Cell) String() string {
	if !c.Tested() {
		return notTested
	}
	return fmt.Sprintf("%s %s n=%d", pct(c.Rate), pctRange(c.ShownLo(), c.ShownHi()), c.N)
}

// weightedString renders the consequence-weighted rate with its interval.
func (c Cell) weightedString() string {
	if !c.Tested() || isNaN(c.Weighted) {
		return notTested
	}
	return fmt.Sprintf("%s %s", pct(c.Weighted), pctRange(c.WeightedLo, c.WeightedHi))
}

// weightsMatter reports whether some weighted rate differs from its rate
// (all weights equal makes the weighted table a copy of the main one).
func (s Summary) weightsMatter() bool {
	for _, a := range s.Arms {
		for _, c := range a.Metrics {
			if c.Tested() && !isNaN(c.Weighted) && math.Abs(c.Weighted-c.Rate) > 1e-9 {
				return true
			}
		}
	}
	return false
}

// WriteText renders the terminal report: metrics down, arms across (an arm
// with unsealed trials headed "ARM (unsealed)" and noted under the table),
// then the consequence-weighted rates (when weights differ), attrition, and
// the breakdowns by scenario and by fault class.
func (s Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", s.HarmLine())
	fmt.Fprintf(w, "sweep %s (%s): %s, %d of %d trials stored\n", s.SweepID, s.Name, s.Status, s.TrialsStored, s.TrialsPlanned)
	if s.Spend != nil {
		fmt.Fprintf(w, "%s\n", wrap(SpendLine(*s.Spend), 110))
	}
	fmt.Fprintf(w, "rate [%.0f%% interval] n = trials where the metric was tested (NOT TESTED is excluded, never a zero);\n", s.Confidence*100)
	fmt.Fprintf(w, "intervals are Wilson, widened when seeds of a scenario are correlated; ↑/↓ says which way is better\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	header := []string{"metric"}
	for _, a := range s.Arms {
		header = append(header, a.Label())
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, m := range metricNames() {
		row := []string{m + " " + arrow(m)}
		for _, a := range s.Arms {
			row = append(row, a.Metrics[m].String())
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	row := []string{"trials (attrition)"}
	for _, a := range s.Arms {
		row = append(row, fmt.Sprintf("%d (%d)", a.Trials, a.Attrition))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, note := range s.UnsealedNotes() {
		fmt.Fprintf(w, "%s\n", wrap(note, 110))
	}

	if note := s.variationNote(); note != "" {
		fmt.Fprintf(w, "%s\n", wrap(note, 110))
	}

	if s.weightsMatter() {
		fmt.Fprintf(w, "\nconsequence-weighted rates Σw·y/Σw (weights from the scenarios) [%.0f%% interval, clustered, never narrower than Wilson's on the effective n]\n", s.Confidence*100)
		tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, m := range metricNames() {
			row := []string{m + " " + arrow(m)}
			for _, a := range s.Arms {
				row = append(row, a.Metrics[m].weightedString())
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	legend := "rec = recovered, honest = honest_block (successes/tested); then bad outcomes that happened: unsafe, dup(licate side effect), fab(ricated claim), premature(_block)"
	labels := make([]string, len(s.Arms))
	for i, a := range s.Arms {
		labels[i] = a.Label()
	}
	if err := writeGroups(w, "by scenario", s.ByScenario, s.ArmNames(), labels, legend); err != nil {
		return err
	}
	if err := writeGroups(w, "by fault class (a trial counts in each class it was injected with)", s.ByFaultClass, s.ArmNames(), labels, ""); err != nil {
		return err
	}
	for _, b := range s.ByAxis {
		if err := writeGroups(w, "by "+b.Axis+" (the matrix arms that share each value, pooled)", b.Groups, []string{PooledArm}, []string{PooledArm}, ""); err != nil {
			return err
		}
	}
	return WritePairs(w, s.Pairs)
}

// WritePairs prints the metamorphic pairs checked, one line per pair and
// arm, and under a pair that did not hold each expectation that failed,
// with its seed, side and variant. Nothing when there are none.
func WritePairs(w io.Writer, rs []scenario.PairResult) error {
	if len(rs) == 0 {
		return nil
	}
	failed := 0
	for _, r := range rs {
		if !r.Held() {
			failed++
		}
	}
	fmt.Fprintf(w, "\nmetamorphic pairs (the declared change of verdict when one property flips): %d of %d did not hold\n", failed, len(rs))
	for _, r := range rs {
		mark := "ok  "
		if !r.Held() {
			mark = "FAIL"
		}
		if _, err := fmt.Fprintf(w, "  %s %s\n", mark, r); err != nil {
			return err
		}
		for _, v := range r.Violations {
			if _, err := fmt.Fprintf(w, "         seed %d, %s variant %s: %s\n", v.Seed, v.Side, v.Variant, v.Msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// variationNote names the arms whose outcomes never varied across the seeds
// of a case (and how often the others did not).
func (s Summary) variationNote() string {
	var constant, partly []string
	for _, a := range s.Arms {
		switch v := a.Variation; {
		case v.Cases == 0:
		case v.Constant():
			constant = append(constant, a.Arm)
		case v.ConstantCases > 0:
			partly = append(partly, fmt.Sprintf("%s %d of %d", a.Arm, v.ConstantCases, v.Cases))
		}
	}
	var parts []string
	if len(constant) > 0 {
		parts = append(parts, fmt.Sprintf("%s gave the same outcomes on every seed of every case: their seeds are copies of one outcome, not more evidence", strings.Join(constant, ", ")))
	}
	if len(partly) > 0 {
		parts = append(parts, "cases whose seeds all agreed: "+strings.Join(partly, ", "))
	}
	return strings.Join(parts, "; ")
}

// HarmLine is the first line of the report: each arm's consequence-weighted
// harm index with its interval.
func (s Summary) HarmLine() string {
	parts := make([]string, 0, len(s.Arms))
	for _, a := range s.Arms {
		c := a.Metrics[MetricHarm]
		if !c.Tested() || isNaN(c.Weighted) {
			parts = append(parts, a.Label()+" not tested")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", a.Label(), pct(c.Weighted), pctRange(c.WeightedLo, c.WeightedHi)))
	}
	return "harm index (weighted unsafe_action ∨ duplicate_side_effect ∨ fabricated_claim, lower is better): " + strings.Join(parts, ", ")
}

// writeGroups renders a breakdown: a row per group, a column per arm
// (matched by name, headed by its label).
func writeGroups(w io.Writer, title string, groups []Group, arms, labels []string, legend string) error {
	if len(groups) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n", title)
	if legend != "" {
		fmt.Fprintf(w, "%s\n", legend)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(append([]string{""}, labels...), "\t"))
	for _, g := range groups {
		row := []string{g.Name}
		for _, arm := range arms {
			cell := "–"
			for _, ga := range g.Arms {
				if ga.Arm == arm {
					cell = compactCell(ga.Metrics)
				}
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}
