package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"rebound/core/outcome"
	"rebound/stats"
)

// headlineMetrics are the columns of the compact breakdowns.
var headlineMetrics = outcome.Names([]outcome.Metric{
	outcome.Recovered, outcome.HonestBlock, outcome.UnsafeAction,
	outcome.DuplicateSideEffect, outcome.FabricatedClaim,
})

// maxListed bounds the unmatched cases and scenarios listed in the terminal.
const maxListed = 10

func diffList(ds []MetricDiff) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %s pts", d.Metric, pts(d.Delta))
	}
	return strings.Join(parts, ", ")
}

// Headline is the one-line verdict: the gate's when it was evaluated, else
// which arm is worse on what.
func (c *Comparison) Headline() string {
	if g := c.Gate; g != nil {
		var failed, warned []string
		for _, k := range g.Checks {
			switch k.Status {
			case CheckFail:
				failed = append(failed, k.Metric)
			case CheckWarn:
				warned = append(warned, k.Metric)
			}
		}
		if !g.Passed {
			return fmt.Sprintf("GATE FAILED: %s in candidate %s: %s", plural(len(failed), "blocking regression"), c.Candidate.Arm, strings.Join(failed, ", "))
		}
		if len(warned) > 0 {
			return fmt.Sprintf("GATE PASSED with %s: %s", plural(len(warned), "warning"), strings.Join(warned, ", "))
		}
		return fmt.Sprintf("GATE PASSED: no regression of candidate %s beyond the thresholds", c.Candidate.Arm)
	}
	worse, better := c.Worse(), c.Better()
	switch {
	case c.Cases == 0:
		return fmt.Sprintf("nothing to compare: no case was graded in both %s and %s", c.Baseline.Arm, c.Candidate.Arm)
	case len(worse) > 0 && len(better) > 0:
		return fmt.Sprintf("candidate %s is WORSE on %s; better on %s", c.Candidate.Arm, diffList(worse), diffList(better))
	case len(worse) > 0:
		return fmt.Sprintf("candidate %s is WORSE on %s", c.Candidate.Arm, diffList(worse))
	case len(better) > 0:
		return fmt.Sprintf("candidate %s is better on %s; worse on nothing", c.Candidate.Arm, diffList(better))
	}
	return fmt.Sprintf("no significant difference between candidate %s and baseline %s", c.Candidate.Arm, c.Baseline.Arm)
}

func resultWord(dir string) string {
	switch dir {
	case Worse:
		return "WORSE"
	case Better:
		return "better"
	}
	return dir
}

func (c *Comparison) sidesLine() string {
	if c.Baseline.SweepID == c.Candidate.SweepID {
		return fmt.Sprintf("candidate %s vs baseline %s, sweep %s", c.Candidate.Arm, c.Baseline.Arm, c.Candidate.SweepID)
	}
	return fmt.Sprintf("candidate %s (sweep %s) vs baseline %s (sweep %s)", c.Candidate.Arm, c.Candidate.SweepID, c.Baseline.Arm, c.Baseline.SweepID)
}

// unitWords names the unit of evidence in prose.
func (c *Comparison) unitWords() string {
	if c.Unit == UnitScenario {
		return "the scenario (--generalize: would the result hold on new scenarios like these?); its variants and seeds are repeated measures"
	}
	return "the case (scenario × variant); its seeds are repeated measures, so a case counts once however many seeds it has"
}

// methodNote explains the columns, for every human-readable format.
func (c *Comparison) methodNote() string {
	return fmt.Sprintf("Unit of evidence: %s. "+
		"Δ = candidate − baseline in percentage points over the pairs tested in both arms; "+
		"CI: %.0f%% cluster-robust interval (CR1, Student's t on clusters − 1 df); p: exact cluster sign-flip test; "+
		"worse/better: p ≤ %s and the CI excludes 0. "+
		"Δw: the same with the scenarios' consequence weights, Σw·(y_cand − y_base)/Σw. "+
		"eff. n: the independent pairs the data are worth (pairs / design effect). "+
		"iid CI (Tango) and iid p (McNemar mid-p) count every seed as independent evidence: shown for reference, they do not decide.",
		c.unitWords(), c.Confidence*100, trimFloat(roundTo(1-c.Confidence, 6)))
}

// variationNotes say when an arm's outcomes did not vary across seeds.
func (c *Comparison) variationNotes() []string {
	var out []string
	for _, s := range []struct {
		role, arm string
		v         stats.ArmVariation
	}{{"baseline", c.Baseline.Arm, c.BaselineVariation}, {"candidate", c.Candidate.Arm, c.CandidateVariation}} {
		switch {
		case s.v.Cases == 0:
		case s.v.Constant():
			out = append(out, fmt.Sprintf("%s %s gave the same outcomes on every seed of all %s with several seeds: its seeds are copies of one outcome, not more evidence",
				s.role, s.arm, plural(s.v.Cases, "case")))
		case s.v.ConstantCases > 0:
			out = append(out, fmt.Sprintf("%s %s gave the same outcomes on every seed in %d of %s with several seeds",
				s.role, s.arm, s.v.ConstantCases, plural(s.v.Cases, "case")))
		}
	}
	return out
}

// HarmLine is the first line of every comparison: the consequence-weighted
// harm index of both arms and its paired difference.
func (c *Comparison) HarmLine() string {
	d, ok := c.Metric(MetricHarm)
	if !ok || d.Pairs == 0 {
		return "harm index (weighted unsafe_action ∨ duplicate_side_effect ∨ fabricated_claim): not tested in both arms"
	}
	w := d.Weighted
	return fmt.Sprintf("harm index (weighted unsafe_action ∨ duplicate_side_effect ∨ fabricated_claim): %s %s → %s %s, Δw %s pts %s, p %s: %s",
		c.baselineLabel(), pct(w.Baseline), c.candidateLabel(), pct(w.Candidate), pts(w.Delta), ciCell(w.Lo, w.Hi, w.NotEstimable), pval(w.P), resultWord(w.Direction))
}

// baselineLabel and candidateLabel head the sides' columns: "baseline",
// "candidate (unsealed)" when some of that side's trials ran unsealed.
func (c *Comparison) baselineLabel() string {
	return armLabel("baseline", c.BaselineUnsealed)
}

func (c *Comparison) candidateLabel() string {
	return armLabel("candidate", c.CandidateUnsealed)
}

// ciCell renders an interval, or "n/e" when it is not estimable.
func ciCell(lo, hi float64, notEstimable string) string {
	if notEstimable != "" && notEstimable != stats.NoObservations {
		return "n/e"
	}
	return ptsRange(lo, hi)
}

func clustersCell(d MetricDiff) string {
	return fmt.Sprintf("%d/%d", d.Pairs, d.Clusters)
}

func effNCell(d MetricDiff) string {
	if isNaN(d.EffectiveN) {
		return "–"
	}
	return fmt.Sprintf("%.0f", d.EffectiveN)
}

func roundTo(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func pairsCell(d MetricDiff) string {
	if d.OneArmOnly > 0 {
		return fmt.Sprintf("%d (+%d one arm)", d.Pairs, d.OneArmOnly)
	}
	return fmt.Sprint(d.Pairs)
}

func rateCell(r float64, k int, d MetricDiff) string {
	if d.Binary {
		return fmt.Sprintf("%s (%d)", pct(r), k)
	}
	return pct(r)
}

// WriteText renders the comparison (and gate) for the terminal.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", c.HarmLine())
	fmt.Fprintf(w, "%s\n", c.Headline())
	fmt.Fprintf(w, "%s: %s\n\n", c.sidesLine(), c.countsLine())
	if c.Gate != nil {
		if err := c.writeGateText(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tresult\t%s\t%s\tΔ pts\tCI\tp\tΔw pts\tΔw CI\tpairs/clusters\teff. n\tiid CI\tiid p\n", c.baselineLabel(), c.candidateLabel())
	for _, d := range c.Metrics {
		if d.Pairs == 0 {
			fmt.Fprintf(tw, "%s %s\t%s\t\t\t\t\t\t\t\t%s\t\t\t\n", d.Metric, arrow(d.Metric), notTested, pairsCell(d))
			continue
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Metric, arrow(d.Metric), resultWord(d.Direction),
			rateCell(d.Baseline, d.BaselineSuccesses, d), rateCell(d.Candidate, d.CandidateSuccesses, d),
			pts(d.Delta), ciCell(d.Lo, d.Hi, d.NotEstimable), pval(d.P),
			pts(d.Weighted.Delta), ciCell(d.Weighted.Lo, d.Weighted.Hi, d.Weighted.NotEstimable),
			clustersCell(d), effNCell(d), ptsRange(d.TangoLo, d.TangoHi), pval(d.McNemarMidP))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", wrap(c.methodNote(), 110))
	for _, note := range c.variationNotes() {
		fmt.Fprintf(w, "%s\n", wrap(note, 110))
	}
	if ne := c.notEstimableNote(); ne != "" {
		fmt.Fprintf(w, "%s\n", wrap(ne, 110))
	}
	if boot := c.bootstrapLine(); boot != "" {
		fmt.Fprintf(w, "%s\n", wrap(boot, 110))
	}
	fmt.Fprintf(w, "trials: baseline %d (attrition %d), candidate %d (attrition %d)\n",
		c.BaselineTrials, c.BaselineAttrition, c.CandidateTrials, c.CandidateAttrition)
	for _, line := range c.spendLines() {
		fmt.Fprintf(w, "%s\n", wrap(line, 110))
	}

	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "! %s\n", warn)
	}
	if len(c.Unmatched) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, u := range c.Unmatched {
			if i == maxListed {
				fmt.Fprintf(tw, "  ... and %d more (all are in --output json, markdown and html)\n", len(c.Unmatched)-maxListed)
				break
			}
			fmt.Fprintf(tw, "  %s\tgraded in %s\t%s\n", u.Key, u.Side, u.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if len(c.ByFaultClass) > 0 {
		fmt.Fprintf(w, "\nby fault class: Δ pts (a case counts in each class it was injected with)\n")
		if err := writeGroupDiffs(w, "fault class", c.ByFaultClass); err != nil {
			return err
		}
	}
	if worst := worstScenarios(c.ByScenario, maxListed); len(worst) > 0 {
		more := ""
		if n := movedBadWay(c.ByScenario); n > len(worst) {
			more = fmt.Sprintf(", the worst %d shown", len(worst))
		}
		fmt.Fprintf(w, "\nscenarios that moved the bad way (%d of %d%s): Δ pts\n", movedBadWay(c.ByScenario), len(c.ByScenario), more)
		if err := writeGroupDiffs(w, "scenario", worst); err != nil {
			return err
		}
	} else if len(c.ByScenario) > 0 {
		fmt.Fprintf(w, "\nno scenario moved the bad way on %s\n", strings.Join(headlineMetrics, ", "))
	}
	return nil
}

func groupDiffCell(d MetricDiff) string {
	if d.Pairs == 0 {
		return "–"
	}
	s := pts(d.Delta)
	if d.Direction == Worse || d.Direction == Better {
		s += " " + resultWord(d.Direction)
	}
	return s
}

func writeGroupDiffs(w io.Writer, label string, groups []GroupDiff) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{label, "cases"}
	for _, m := range headlineMetrics {
		head = append(head, shortNames[m]+" "+arrow(m))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, g := range groups {
		row := []string{g.Name, fmt.Sprint(g.Cases)}
		for _, m := range headlineMetrics {
			row = append(row, groupDiffCell(g.metric(m)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func (g GroupDiff) metric(name string) MetricDiff {
	for _, d := range g.Metrics {
		if d.Metric == name {
			return d
		}
	}
	return MetricDiff{Metric: name, Direction: NotTested, Delta: math.NaN()}
}

// badness is the largest move the bad way over the headline metrics.
func (g GroupDiff) badness() float64 {
	worst := 0.0
	for _, m := range headlineMetrics {
		d := g.metric(m)
		if d.Pairs == 0 || isNaN(d.Delta) {
			continue
		}
		bad := d.Delta
		if d.HigherIsBetter {
			bad = -d.Delta
		}
		worst = math.Max(worst, bad)
	}
	return worst
}

func movedBadWay(gs []GroupDiff) int {
	n := 0
	for _, g := range gs {
		if g.badness() > 0 {
			n++
		}
	}
	return n
}

// worstScenarios returns up to n groups that moved the bad way, worst first.
func worstScenarios(gs []GroupDiff, n int) []GroupDiff {
	var out []GroupDiff
	for _, g := range gs {
		if g.badness() > 0 {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b GroupDiff) int {
		switch ba, bb := a.badness(), b.badness(); {
		case ba > bb:
			return -1
		case ba < bb:
			return 1
		}
		return 0
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func checkResult(k Check) string {
	switch k.Status {
	case CheckFail:
		return "FAIL"
	case CheckWarn:
		return "warn"
	}
	return k.Status
}

func (c *Comparison) gateNote() string {
	g := c.Gate
	return fmt.Sprintf("thresholds %s; %.0f%% intervals; p adjusted by Holm over the %s, by Benjamini-Hochberg over the others. "+
		"A check fails (blocking) or warns when the candidate moved the bad way with adjusted p ≤ %s and the CI's bound crosses the limit.",
		g.File, g.Confidence*100, plural(g.Blocking, "blocking metric"), trimFloat(roundTo(1-g.Confidence, 6)))
}

func (c *Comparison) writeGateText(w io.Writer) error {
	g := c.Gate
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "gate\trule\tΔ pts\tCI\tp\tadj. p\tresult\twhy")
	for _, k := range g.Checks {
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Metric, arrow(k.Metric), k.RuleText(), pts(k.Delta),
			ptsRange(k.Lo, k.Hi), pval(k.P), adjCell(k), checkResult(k), k.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", wrap(c.gateNote(), 110))
	return nil
}

func adjCell(k Check) string {
	if isNaN(k.AdjustedP) {
		return "–"
	}
	return pval(k.AdjustedP) + " " + k.Adjustment
}

// wrap breaks text into lines of at most width characters.
func wrap(s string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		n := len([]rune(word))
		if i > 0 {
			if line+1+n > width {
				b.WriteByte('\n')
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// bootstrapLine lists the cluster-bootstrap cross-check intervals, when
// they were computed.
func (c *Comparison) bootstrapLine() string {
	var parts []string
	for _, d := range c.Metrics {
		if !isNaN(d.BootLo) {
			parts = append(parts, fmt.Sprintf("%s Δ %s, Δw %s", d.Metric, ptsRange(d.BootLo, d.BootHi), ptsRange(d.Weighted.BootLo, d.Weighted.BootHi)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("cluster-bootstrap cross-check (resampling %ss): %s", c.Unit, strings.Join(parts, "; "))
}

// notEstimableNote explains "n/e" cells.
func (c *Comparison) notEstimableNote() string {
	var parts []string
	for _, d := range c.Metrics {
		if d.Pairs > 0 && d.NotEstimable != "" {
			parts = append(parts, d.Metric+": "+d.NotEstimable)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "n/e = not estimable (the decision then rests on the exact test alone): " + strings.Join(parts, "; ")
}

// countsLine counts the evidence: pairs, cases, scenarios and the unit.
func (c *Comparison) countsLine() string {
	return fmt.Sprintf("%s in %s and %s; unit of evidence: %s", plural(c.Cases, "pair"), plural(c.DistinctCases, "case"),
		plural(c.Scenarios, "scenario"), c.Unit)
}
