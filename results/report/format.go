package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"rebound/core/outcome"
)

// notTested is how every human-readable output shows a NaN.
const notTested = "not tested"

func isNaN(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

// pct renders a rate as "12.5%".
func pct(x float64) string {
	if isNaN(x) {
		return notTested
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// pctRange renders an interval of rates as "[4-30]" (whole percents).
func pctRange(lo, hi float64) string {
	if isNaN(lo) || isNaN(hi) {
		return ""
	}
	return fmt.Sprintf("[%.0f-%.0f]", 100*lo, 100*hi)
}

// pts renders a difference of rates in percentage points, signed: "+12.0".
func pts(x float64) string {
	if isNaN(x) {
		return notTested
	}
	v := 100 * x
	if math.Abs(v) < 0.05 {
		return "0.0"
	}
	return fmt.Sprintf("%+.1f", v)
}

// ptsRange renders an interval of differences: "[+7.1, +17.3]".
func ptsRange(lo, hi float64) string {
	if isNaN(lo) || isNaN(hi) {
		return "–"
	}
	return "[" + pts(lo) + ", " + pts(hi) + "]"
}

// pval renders a p-value: "<0.001", "0.034", "1".
func pval(p float64) string {
	switch {
	case isNaN(p):
		return "–"
	case p < 0.001:
		return "<0.001"
	case p >= 0.9995:
		return "1"
	}
	return fmt.Sprintf("%.3f", p)
}

func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// arrow tells which way is better for a metric.
func arrow(metric string) string {
	if HigherIsBetter(metric) {
		return "↑"
	}
	return "↓"
}

// shortNames label metrics in compact breakdown cells.
var shortNames = map[string]string{
	string(outcome.Recovered):            "rec",
	string(outcome.HonestBlock):          "honest",
	string(outcome.UnsafeAction):         "unsafe",
	string(outcome.DuplicateSideEffect):  "dup",
	string(outcome.FabricatedClaim):      "fab",
	string(outcome.PrematureBlock):       "premature",
	string(outcome.ToolFailureInjection): "tfi",
	string(outcome.GracefulDegradation):  "graceful",
	string(outcome.SelfCorrection):       "selfcorr",
}

// badMetrics are the lower-is-better outcomes, in report order.
func badMetrics() []string {
	var out []string
	for _, m := range outcome.Graded {
		if !m.HigherIsBetter() {
			out = append(out, string(m))
		}
	}
	return out
}

// compactCell summarizes one arm in one breakdown group: the success
// outcomes as k/n, then every bad outcome that happened at least once.
func compactCell(metrics map[string]Cell) string {
	var parts []string
	for _, m := range outcome.Names([]outcome.Metric{outcome.Recovered, outcome.HonestBlock}) {
		if c, ok := metrics[m]; ok && c.Tested() {
			parts = append(parts, fmt.Sprintf("%s %d/%d", shortNames[m], c.Successes, c.N))
		}
	}
	for _, m := range badMetrics() {
		if c, ok := metrics[m]; ok && c.Successes > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", shortNames[m], c.Successes, c.N))
		}
	}
	if len(parts) == 0 {
		return notTested
	}
	return strings.Join(parts, ", ")
}

// plural returns "1 case" / "3 cases".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func (k Key) String() string {
	return fmt.Sprintf("%s / %s / seed %d", k.Scenario, k.Variant, k.Seed)
}

// FormatPoints renders a difference of rates in signed percentage points
// ("+12.0"), as every report does.
func FormatPoints(x float64) string { return pts(x) }

// FormatP renders a p-value ("<0.001", "0.034", "1"), as every report does.
func FormatP(p float64) string { return pval(p) }
