package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"rebound/stats"
)

// Colours shared by the HTML report and its charts.
const (
	colWorse     = "#c62828"
	colBetter    = "#2e7d32"
	colNeutral   = "#78909c"
	colBaseline  = "#757575" // 4.6:1 on white: graphics need 3:1 (WCAG 1.4.11)
	colMuted     = "#6b6b6b" // text that says "not tested": 4.7:1 on colBadSide, 5.3:1 on white
	colCandidate = "#1565c0"
	colBadSide   = "#fdecea"
	colLimit     = "#6d4c41"
)

const htmlStyle = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#212121;max-width:1180px;margin:20px auto;padding:0 16px}
h1{font-size:18px;margin:0 0 8px;color:#455a64;font-weight:600}
h2{font-size:16px;margin:28px 0 6px}
.banner{padding:12px 16px;border-radius:6px;font-size:20px;font-weight:650;color:#fff}
.bad{background:#c62828}.good{background:#2e7d32}.warn{background:#b45309}.neutral{background:#546e7a}
.sub{color:#546e7a;margin:6px 0 0}
.harm{font-size:15px;font-weight:600;margin:0 0 8px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums;margin:4px 0;font-size:13.5px}
th,td{padding:4px 7px;border-bottom:1px solid #e0e0e0;text-align:right;vertical-align:top;white-space:nowrap}
td.why{white-space:normal;text-align:left;min-width:260px}
th{background:#f5f5f5;font-weight:600}
th:first-child,td:first-child,td.l,th.l{text-align:left}
td.worse,span.worse{color:#c62828;font-weight:650}td.better,span.better{color:#2e7d32;font-weight:650}
td.nt{color:#6b6b6b;font-style:italic}
td.fail{color:#fff;background:#c62828;font-weight:650;text-align:center}td.warn{background:#ffe0b2;font-weight:650;text-align:center}
td.pass{color:#2e7d32;text-align:center}
td.up{background:#fdecea}td.down{background:#e8f5e9}
.note{color:#616161;font-size:12.5px;margin:6px 0}
.warnbox{background:#fff3e0;border-left:4px solid #ef6c00;padding:6px 10px;margin:10px 0}
.panels{display:flex;flex-wrap:wrap;gap:12px}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
`

func esc(s string) string { return html.EscapeString(s) }

func (c *Comparison) bannerClass() string {
	if g := c.Gate; g != nil {
		switch {
		case !g.Passed:
			return "bad"
		case g.Warnings > 0:
			return "warn"
		}
		return "good"
	}
	switch {
	case len(c.Worse()) > 0:
		return "bad"
	case len(c.Better()) > 0:
		return "good"
	}
	return "neutral"
}

func dirClass(dir string) string {
	switch dir {
	case Worse:
		return "worse"
	case Better:
		return "better"
	case NotTested:
		return "nt"
	}
	return ""
}

func dirColor(dir string) string {
	switch dir {
	case Worse:
		return colWorse
	case Better:
		return colBetter
	}
	return colNeutral
}

// WriteHTML renders a self-contained page (inline CSS and SVG, no scripts,
// no external assets): the verdict, the gate, a forest plot of the paired
// differences, the metric table, rates by fault class, the breakdown by
// scenario, and the cases that could not be paired.
func (c *Comparison) WriteHTML(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>rebound: %s vs %s</title>\n<style>%s</style></head><body>\n", esc(c.Candidate.Arm), esc(c.Baseline.Arm), htmlStyle)
	c.htmlBody(&b)
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// HTMLStyle is the style sheet WriteHTML inlines; HTMLBody needs it.
func HTMLStyle() string { return htmlStyle }

// HTMLBody is WriteHTML's page without the document around it (every value
// escaped), for a page that embeds the comparison (rebound ui): the same
// numbers and drawings from the same code.
func (c *Comparison) HTMLBody() string {
	var b strings.Builder
	c.htmlBody(&b)
	return b.String()
}

func (c *Comparison) htmlBody(b *strings.Builder) {
	if c.Gate != nil {
		b.WriteString("<h1>rebound gate</h1>\n")
	} else {
		b.WriteString("<h1>rebound compare</h1>\n")
	}
	fmt.Fprintf(b, "<p class=\"harm\">%s</p>\n", esc(c.HarmLine()))
	fmt.Fprintf(b, "<div class=\"banner %s\">%s</div>\n", c.bannerClass(), esc(c.Headline()))
	fmt.Fprintf(b, "<p class=\"sub\">%s · %s · %.0f%% intervals · trials: baseline %d (attrition %d), candidate %d (attrition %d)</p>\n",
		esc(c.sidesLine()), esc(c.countsLine()), c.Confidence*100,
		c.BaselineTrials, c.BaselineAttrition, c.CandidateTrials, c.CandidateAttrition)
	for _, warn := range c.Warnings {
		fmt.Fprintf(b, "<div class=\"warnbox\">⚠ %s</div>\n", esc(warn))
	}

	if g := c.Gate; g != nil {
		b.WriteString("<h2 id=\"gate\">Gate</h2>\n<table><tr><th>metric</th><th class=\"l\">rule</th><th>Δ pts</th><th>CI</th><th>p</th><th>adj. p</th><th>result</th><th class=\"l\">why</th></tr>\n")
		for _, k := range g.Checks {
			cls := map[string]string{CheckFail: "fail", CheckWarn: "warn", CheckPass: "pass"}[k.Status]
			fmt.Fprintf(b, "<tr><td>%s %s</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td class=\"why\">%s</td></tr>\n",
				esc(k.Metric), arrow(k.Metric), esc(k.RuleText()), pts(k.Delta), ptsRange(k.Lo, k.Hi), pval(k.P), adjCell(k), cls, esc(checkResult(k)), esc(k.Reason))
		}
		fmt.Fprintf(b, "</table>\n<p class=\"note\">%s</p>\n", esc(c.gateNote()))
	}

	b.WriteString("<h2 id=\"differences\">Paired differences (candidate − baseline)</h2>\n")
	c.forestSVG(b)
	fmt.Fprintf(b, "<table><tr><th>metric</th><th>result</th><th>%s</th><th>%s</th><th>Δ pts</th><th>CI (clustered)</th><th>p (sign-flip)</th><th>Δw pts</th><th>Δw CI</th><th>Δw result</th><th>pairs/clusters</th><th>eff. n</th><th>by-scenario CI</th><th>iid CI (Tango)</th><th>iid Newcombe</th><th>iid p (mid-p)</th></tr>\n", esc(c.baselineLabel()), esc(c.candidateLabel()))
	for _, d := range c.Metrics {
		if d.Pairs == 0 {
			fmt.Fprintf(b, "<tr><td>%s %s</td><td class=\"nt\">not tested</td><td></td><td></td><td></td><td></td><td></td><td></td><td></td><td></td><td>%s</td><td></td><td></td><td></td><td></td><td></td></tr>\n",
				esc(d.Metric), arrow(d.Metric), esc(pairsCell(d)))
			continue
		}
		w := d.Weighted
		fmt.Fprintf(b, "<tr><td>%s %s</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td>%s</td><td class=\"%s\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(d.Metric), arrow(d.Metric), dirClass(d.Direction), esc(d.Direction),
			rateCell(d.Baseline, d.BaselineSuccesses, d), rateCell(d.Candidate, d.CandidateSuccesses, d),
			dirClass(d.Direction), pts(d.Delta), ciCell(d.Lo, d.Hi, d.NotEstimable), pval(d.P),
			dirClass(w.Direction), pts(w.Delta), ciCell(w.Lo, w.Hi, w.NotEstimable), dirClass(w.Direction), esc(w.Direction),
			clustersCell(d), effNCell(d), ptsRange(d.ScenarioLo, d.ScenarioHi), ptsRange(d.TangoLo, d.TangoHi), ptsRange(d.NewcombeLo, d.NewcombeHi),
			pval(d.McNemarMidP))
	}
	fmt.Fprintf(b, "</table>\n<p class=\"note\">%s ↑ higher is better, ↓ lower is better.</p>\n", esc(c.methodNote()))
	for _, note := range c.variationNotes() {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(note))
	}
	if ne := c.notEstimableNote(); ne != "" {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(ne))
	}
	if boot := c.bootstrapLine(); boot != "" {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(boot))
	}

	b.WriteString("<h2 id=\"faults\">Rates by fault class</h2>\n")
	if len(c.ByFaultClass) == 0 {
		b.WriteString("<p class=\"note\">Fault classes were not loaded.</p>\n")
	} else {
		fmt.Fprintf(b, "<p class=\"note\">Rate over the paired cases of each class: <svg width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"4.5\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"2\"/></svg> baseline %s, <svg width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"5\" fill=\"%s\"/></svg> candidate %s; the line is red when the candidate moved the bad way, green the good way (thick: significant). A case counts in each class it was injected with.</p>\n",
			colBaseline, esc(c.Baseline.Arm), colCandidate, esc(c.Candidate.Arm))
		b.WriteString("<div class=\"panels\">\n")
		for _, m := range headlineMetrics {
			if anyPairs(c.ByFaultClass, m) {
				dumbbellSVG(b, m, c.ByFaultClass, c.Confidence)
			}
		}
		b.WriteString("</div>\n")
	}

	if len(c.ByScenario) > 0 {
		fmt.Fprintf(b, "<details id=\"scenarios\" open><summary>By scenario (%d): Δ pts, red = moved the bad way, bold = significant</summary>\n", len(c.ByScenario))
		htmlGroupDiffs(b, "scenario", c.ByScenario)
		b.WriteString("</details>\n")
	}
	if len(c.Unmatched) > 0 {
		open := ""
		if len(c.Unmatched) <= 20 {
			open = " open"
		}
		fmt.Fprintf(b, "<details id=\"unmatched\"%s><summary>%s not paired (excluded from every difference)</summary>\n<table><tr><th>scenario</th><th class=\"l\">variant</th><th>seed</th><th class=\"l\">graded in</th><th class=\"l\">why</th></tr>\n", open, plural(len(c.Unmatched), "case"))
		for _, u := range c.Unmatched {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"l\">%s</td><td>%d</td><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n", esc(u.Scenario), esc(u.Variant), u.Seed, esc(u.Side), esc(u.Reason))
		}
		b.WriteString("</table></details>\n")
	}
}

func anyPairs(gs []GroupDiff, metric string) bool {
	for _, g := range gs {
		if g.metric(metric).Pairs > 0 {
			return true
		}
	}
	return false
}

func htmlGroupDiffs(b *strings.Builder, label string, gs []GroupDiff) {
	fmt.Fprintf(b, "<table><tr><th>%s</th><th>cases</th>", esc(label))
	for _, m := range headlineMetrics {
		fmt.Fprintf(b, "<th>%s %s</th>", esc(m), arrow(m))
	}
	b.WriteString("</tr>\n")
	for _, g := range gs {
		fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td>", esc(g.Name), g.Cases)
		for _, m := range headlineMetrics {
			d := g.metric(m)
			cls, text := "", groupDiffCell(d)
			switch {
			case d.Pairs == 0:
				cls = "nt"
			case d.Delta != 0 && d.Bad(d.Delta):
				cls = "up"
			case d.Delta != 0:
				cls = "down"
			}
			if d.Direction == Worse || d.Direction == Better {
				text = "<b>" + pts(d.Delta) + "</b>"
			} else if d.Pairs > 0 {
				text = pts(d.Delta)
			}
			fmt.Fprintf(b, "<td class=\"%s\">%s</td>", cls, text)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// niceRange returns the half-width of the forest plot's axis, in points.
func niceRange(maxAbs float64) float64 {
	for _, r := range []float64{5, 10, 20, 25, 50, 100} {
		if maxAbs*1.05 <= r {
			return r
		}
	}
	return 100
}

// forestSVG draws one row per metric: the difference with its decision
// interval on a common axis in percentage points, the bad side of each
// metric shaded, and the gate's limit as a dashed mark.
func (c *Comparison) forestSVG(b *strings.Builder) {
	const (
		width, labelW, textW = 1140.0, 250.0, 300.0
		top, rowH, bottom    = 44.0, 32.0, 34.0
	)
	x0, x1 := labelW, width-textW
	maxAbs := 0.0
	limits := map[string]float64{}
	if c.Gate != nil {
		for _, k := range c.Gate.Checks {
			l := k.Limit
			if k.Rule == RuleMaxDecrease {
				l = -l
			}
			limits[k.Metric] = l
			maxAbs = math.Max(maxAbs, math.Abs(100*l))
		}
	}
	for _, d := range c.Metrics {
		if d.Pairs > 0 {
			for _, v := range []float64{d.Lo, d.Hi, d.Delta, d.Weighted.Lo, d.Weighted.Hi, d.Weighted.Delta} {
				if !isNaN(v) {
					maxAbs = math.Max(maxAbs, math.Abs(100*v))
				}
			}
		}
	}
	r := niceRange(maxAbs)
	x := func(v float64) float64 { return x0 + (100*v+r)/(2*r)*(x1-x0) }
	height := top + rowH*float64(len(c.Metrics)) + bottom
	fmt.Fprintf(b, "<svg class=\"forest\" role=\"img\" aria-label=\"forest plot of paired differences\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", width, height, width, height)
	// Legend.
	lx := x0
	for _, item := range []struct{ col, label string }{{colWorse, "candidate worse"}, {colBetter, "candidate better"}, {colNeutral, "no significant change"}} {
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"14\" r=\"5\" fill=\"%s\"/><text x=\"%.1f\" y=\"18\" font-size=\"12.5\" fill=\"#424242\">%s</text>\n", lx+5, item.col, lx+14, item.label)
		lx += 24 + 7.2*float64(len(item.label))
	}
	fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"8\" width=\"14\" height=\"12\" fill=\"%s\" stroke=\"#e0b4b4\"/><text x=\"%.1f\" y=\"18\" font-size=\"12.5\" fill=\"#424242\">the metric's bad side</text>\n", lx, colBadSide, lx+20)
	lx += 160
	fmt.Fprintf(b, "<path class=\"wmark\" d=\"%s\" fill=\"%s\"/><text x=\"%.1f\" y=\"18\" font-size=\"12.5\" fill=\"#424242\">consequence-weighted Δw</text>\n", diamond(lx+5, 14, 5), colNeutral, lx+14)
	if len(limits) > 0 {
		lx += 190
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"8\" x2=\"%.1f\" y2=\"20\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/><text x=\"%.1f\" y=\"18\" font-size=\"12.5\" fill=\"#424242\">gate limit</text>\n", lx, lx, colLimit, lx+6)
	}
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"38\" font-size=\"12\" fill=\"#616161\" font-weight=\"600\">Δ, CI · Δw</text>\n", x1+14)
	// Grid and axis.
	yEnd := top + rowH*float64(len(c.Metrics))
	for i, tick := range []float64{-r, -r / 2, 0, r / 2, r} {
		tx := x(tick / 100)
		stroke, sw := "#e0e0e0", 1.0
		if i == 2 {
			stroke, sw = "#424242", 1.4
		}
		label := fmt.Sprintf("%+.0f", tick)
		if tick == 0 {
			label = "0"
		}
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n", tx, top, tx, yEnd, stroke, sw)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"#616161\">%s</text>\n", tx, yEnd+16, label)
	}
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"#616161\">percentage points (candidate − baseline)</text>\n", (x0+x1)/2, yEnd+31)
	for i, d := range c.Metrics {
		y := top + rowH*float64(i)
		cy := y + rowH/2
		if i%2 == 1 {
			fmt.Fprintf(b, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\"/>\n", y, width, rowH)
		}
		bx, bw := x(0), x1-x(0)
		if d.HigherIsBetter {
			bx, bw = x0, x(0)-x0
		}
		if d.Pairs > 0 {
			fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", bx, y+3, bw, rowH-6, colBadSide)
		}
		weight := "400"
		if d.Direction == Worse || d.Direction == Better {
			weight = "650"
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13.5\" text-anchor=\"end\" font-weight=\"%s\" fill=\"%s\">%s %s</text>\n", x0-12, cy+4.5, weight, labelColor(d.Direction), esc(d.Metric), arrow(d.Metric))
		if l, ok := limits[d.Metric]; ok && d.Pairs > 0 {
			lx := x(l)
			fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/>\n", lx, y+3, lx, y+rowH-3, colLimit)
		}
		if d.Pairs == 0 || isNaN(d.Delta) {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12.5\" text-anchor=\"middle\" font-style=\"italic\" fill=\"%s\">not tested</text>\n", (x0+x1)/2, cy+4, colMuted)
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-style=\"italic\" fill=\"%s\">not tested</text>\n", x1+14, cy+4.5, colMuted)
			continue
		}
		col := dirColor(d.Direction)
		uy, wy := cy-4, cy+7 // the unweighted mark above, the weighted one below
		if !isNaN(d.Lo) && !isNaN(d.Hi) {
			lo, hi := x(d.Lo), x(d.Hi)
			fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>\n", lo, uy, hi, uy, col)
			for _, ex := range []float64{lo, hi} {
				fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", ex, uy-5, ex, uy+5, col)
			}
		}
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\"><title>%s</title></circle>\n", x(d.Delta), uy, col, esc(diffSummary(d)))
		wd := d.Weighted
		if !isNaN(wd.Delta) {
			wcol := dirColor(wd.Direction)
			if !isNaN(wd.Lo) && !isNaN(wd.Hi) {
				fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>\n", x(wd.Lo), wy, x(wd.Hi), wy, wcol)
			}
			fmt.Fprintf(b, "<path class=\"wmark\" d=\"%s\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1\"><title>%s</title></path>\n", diamond(x(wd.Delta), wy, 5.5), wcol, esc(weightedSummary(d)))
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"%s\" font-weight=\"%s\">%s  %s  %s · Δw %s</text>\n", x1+14, cy+4.5, labelColor(d.Direction), weight,
			pts(d.Delta), ciCell(d.Lo, d.Hi, d.NotEstimable), esc(resultWord(d.Direction)), pts(wd.Delta))
	}
	b.WriteString("</svg>\n")
}

// diamond is the SVG path of a diamond of half-width r centred on (x, y):
// the forest plot's mark of the consequence-weighted difference.
func diamond(x, y, r float64) string {
	return fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ", x, y-r, x+r, y, x, y+r, x-r, y)
}

func weightedSummary(d MetricDiff) string {
	w := d.Weighted
	return fmt.Sprintf("%s consequence-weighted: baseline %s, candidate %s, Δw %s pts, CI %s, p %s: %s",
		d.Metric, pct(w.Baseline), pct(w.Candidate), pts(w.Delta), ciCell(w.Lo, w.Hi, w.NotEstimable), pval(w.P), w.Direction)
}

func labelColor(dir string) string {
	switch dir {
	case Worse:
		return colWorse
	case Better:
		return colBetter
	case NotTested:
		return colMuted
	}
	return "#212121"
}

// dumbbellSVG draws one panel: per fault class, the baseline and candidate
// rates of one metric on a 0–100% axis, joined by a line coloured by the
// way the candidate moved.
func dumbbellSVG(b *strings.Builder, metric string, gs []GroupDiff, conf float64) {
	const (
		width, labelW, right = 560.0, 190.0, 24.0
		top, rowH, bottom    = 30.0, 24.0, 26.0
	)
	x0, x1 := labelW, width-right
	x := func(v float64) float64 { return x0 + v*(x1-x0) }
	height := top + rowH*float64(len(gs)) + bottom
	yEnd := top + rowH*float64(len(gs))
	fmt.Fprintf(b, "<svg class=\"faults\" role=\"img\" aria-label=\"%s by fault class\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n", esc(metric), width, height, width, height)
	fmt.Fprintf(b, "<rect x=\"0.5\" y=\"0.5\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" stroke=\"#e0e0e0\"/>\n", width-1, height-1)
	fmt.Fprintf(b, "<text x=\"10\" y=\"19\" font-size=\"14\" font-weight=\"650\" fill=\"#212121\">%s %s</text>\n", esc(metric), arrow(metric))
	for _, tick := range []float64{0, 0.25, 0.5, 0.75, 1} {
		tx := x(tick)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>\n", tx, top-4, tx, yEnd)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#757575\">%.0f%%</text>\n", tx, yEnd+15, 100*tick)
	}
	for i, g := range gs {
		d := g.metric(metric)
		cy := top + rowH*float64(i) + rowH/2
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12.5\" text-anchor=\"end\" fill=\"#424242\">%s <tspan fill=\"%s\">(%d)</tspan></text>\n", x0-10, cy+4, esc(g.Name), colMuted, d.Pairs)
		if d.Pairs == 0 || isNaN(d.Baseline) || isNaN(d.Candidate) {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11.5\" font-style=\"italic\" fill=\"#bdbdbd\">not tested</text>\n", x0+6, cy+4)
			continue
		}
		col, sw := colNeutral, 2.0
		switch {
		case d.Candidate != d.Baseline && d.Bad(d.Candidate-d.Baseline):
			col = colWorse
		case d.Candidate != d.Baseline:
			col = colBetter
		}
		if d.Direction == Worse || d.Direction == Better {
			sw = 4
		}
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.0f\" stroke-opacity=\"0.75\"/>\n", x(d.Baseline), cy, x(d.Candidate), cy, col, sw)
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"2\"><title>baseline %s</title></circle>\n", x(d.Baseline), cy, colBaseline, pct(d.Baseline))
		title := fmt.Sprintf("candidate %s (baseline %s, %d pairs)", pct(d.Candidate), pct(d.Baseline), d.Pairs)
		if d.Binary {
			iv := stats.Wilson(d.CandidateSuccesses, d.Pairs, conf)
			title += fmt.Sprintf(", candidate Wilson %s", pctRange(iv.Lo, iv.Hi))
		}
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>%s</title></circle>\n", x(d.Candidate), cy, colCandidate, esc(title))
	}
	b.WriteString("</svg>\n")
}
