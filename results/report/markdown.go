package report

import (
	"fmt"
	"io"
	"strings"
)

// mdEscape keeps a name from breaking a Markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

func dirIcon(dir string) string {
	switch dir {
	case Worse:
		return "🔴 worse"
	case Better:
		return "🟢 better"
	case NoChange:
		return "⚪ no change"
	}
	return dir
}

func checkIcon(status string) string {
	switch status {
	case CheckFail:
		return "❌ FAIL"
	case CheckWarn:
		return "⚠️ warn"
	case CheckPass:
		return "✅ pass"
	}
	return status
}

// headlineIcon colours the verdict: red when something got worse (or the
// gate failed), yellow for warnings, green when better or passed.
func (c *Comparison) headlineIcon() string {
	if g := c.Gate; g != nil {
		switch {
		case !g.Passed:
			return "🔴"
		case g.Warnings > 0:
			return "🟡"
		}
		return "✅"
	}
	switch {
	case len(c.Worse()) > 0:
		return "🔴"
	case len(c.Better()) > 0:
		return "🟢"
	}
	return "⚪"
}

// WriteMarkdown renders the comparison as a pull-request comment: the
// verdict first, then the gate, the metrics, and the details folded.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n", mdEscape(c.HarmLine()))
	fmt.Fprintf(&b, "### %s rebound: %s\n\n", c.headlineIcon(), mdEscape(c.Headline()))
	fmt.Fprintf(&b, "%s · %s · %.0f%% intervals\n\n", mdEscape(c.sidesLine()), mdEscape(c.countsLine()), c.Confidence*100)
	if g := c.Gate; g != nil {
		b.WriteString("| gate | rule | Δ pts | CI | p | adj. p | result | why |\n|---|---|---:|---|---:|---:|---|---|\n")
		for _, k := range g.Checks {
			fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s | %s | %s |\n", k.Metric, arrow(k.Metric), k.RuleText(), pts(k.Delta),
				ptsRange(k.Lo, k.Hi), pval(k.P), adjCell(k), checkIcon(k.Status), mdEscape(k.Reason))
		}
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n\n", mdEscape(c.gateNote()))
	}
	fmt.Fprintf(&b, "| metric | result | %s | %s | Δ pts | CI | p | Δw pts | Δw CI | pairs/clusters | eff. n | by-scenario CI | iid CI (Tango) | iid p (mid-p) |\n|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|---|---|---:|\n",
		c.baselineLabel(), c.candidateLabel())
	for _, d := range c.Metrics {
		if d.Pairs == 0 {
			fmt.Fprintf(&b, "| %s %s | %s | | | | | | | | %s | | | | |\n", d.Metric, arrow(d.Metric), notTested, pairsCell(d))
			continue
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", d.Metric, arrow(d.Metric), dirIcon(d.Direction),
			rateCell(d.Baseline, d.BaselineSuccesses, d), rateCell(d.Candidate, d.CandidateSuccesses, d),
			pts(d.Delta), ciCell(d.Lo, d.Hi, d.NotEstimable), pval(d.P), pts(d.Weighted.Delta), ciCell(d.Weighted.Lo, d.Weighted.Hi, d.Weighted.NotEstimable),
			clustersCell(d), effNCell(d), ptsRange(d.ScenarioLo, d.ScenarioHi), ptsRange(d.TangoLo, d.TangoHi), pval(d.McNemarMidP))
	}
	fmt.Fprintf(&b, "\n<sub>%s Trials: baseline %d (attrition %d), candidate %d (attrition %d).</sub>\n",
		mdEscape(c.methodNote()), c.BaselineTrials, c.BaselineAttrition, c.CandidateTrials, c.CandidateAttrition)
	for _, line := range c.spendLines() {
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n", mdEscape(line))
	}
	for _, note := range c.variationNotes() {
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n", mdEscape(note))
	}
	if ne := c.notEstimableNote(); ne != "" {
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n", mdEscape(ne))
	}
	if boot := c.bootstrapLine(); boot != "" {
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n", mdEscape(boot))
	}
	if len(c.Warnings) > 0 {
		b.WriteString("\n")
		for _, warn := range c.Warnings {
			fmt.Fprintf(&b, "> ⚠️ %s\n", mdEscape(warn))
		}
	}
	if len(c.ByFaultClass) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>By fault class (%d)</summary>\n\n", len(c.ByFaultClass))
		mdGroupDiffs(&b, "fault class", c.ByFaultClass)
		b.WriteString("\n</details>\n")
	}
	if len(c.ByScenario) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>By scenario (%d)</summary>\n\n", len(c.ByScenario))
		mdGroupDiffs(&b, "scenario", c.ByScenario)
		b.WriteString("\n</details>\n")
	}
	if len(c.Unmatched) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%s not paired</summary>\n\n| scenario | variant | seed | graded in | why |\n|---|---|---:|---|---|\n", plural(len(c.Unmatched), "case"))
		for _, u := range c.Unmatched {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", mdEscape(u.Scenario), mdEscape(u.Variant), u.Seed, u.Side, mdEscape(u.Reason))
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdGroupDiffs(b *strings.Builder, label string, groups []GroupDiff) {
	fmt.Fprintf(b, "| %s | cases |", label)
	for _, m := range headlineMetrics {
		fmt.Fprintf(b, " %s %s |", m, arrow(m))
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(headlineMetrics)) + "\n")
	for _, g := range groups {
		fmt.Fprintf(b, "| %s | %d |", mdEscape(g.Name), g.Cases)
		for _, m := range headlineMetrics {
			d := g.metric(m)
			cell := groupDiffCell(d)
			if d.Direction == Worse {
				cell = "🔴 " + pts(d.Delta)
			} else if d.Direction == Better {
				cell = "🟢 " + pts(d.Delta)
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
}
