package estimate

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteText prints the estimate for a person: totals first, then one line
// per arm, then the power section.
func (e *Estimate) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: %d trials (%d cases x %d seeds x %d arms)\n", e.Plan, e.Trials, e.Cases, e.Seeds, len(e.Arms))
	switch {
	case e.NoModelArms():
		b.WriteString("model calls: none (no arm calls a model); cost $0\n")
	case e.Projected:
		fmt.Fprintf(&b, "model calls: ~%s (%s-%s)\n", count(e.Calls.Expected), count(e.Calls.Low), count(e.Calls.High))
		fmt.Fprintf(&b, "tokens:      ~%s (%s-%s) exact + ≤ %s estimated\n", count(e.Tokens.Expected), count(e.Tokens.Low), count(e.Tokens.High), count(e.EstimatedTokens.Expected))
		fmt.Fprintf(&b, "cost:        ~%s (%s-%s; p10-p90 per trial x trials) exact + ≤ %s estimated\n", usd(e.CostUSD.Expected), usd(e.CostUSD.Low), usd(e.CostUSD.High), usd(e.EstimatedCostUSD.Expected))
		fmt.Fprintf(&b, "             (estimated: requests lost in flight, at their prompt's size and max_tokens; %s of %s recorded model requests were)\n",
			count(e.HistoryLostCalls), count(e.HistoryCalls))
	default:
		b.WriteString("model calls, tokens, cost: unknown (no recorded history)\n")
	}
	if e.History != "" {
		fmt.Fprintf(&b, "note: %s\n", e.History)
	}
	if e.MaxUSD > 0 {
		verdict := "within"
		switch {
		case !e.Projected && !e.NoModelArms():
			verdict = "not checkable before the start (no history); enforced while running"
		case e.CheckBudget(e.MaxUSD) != nil:
			verdict = "EXCEEDED: the sweep would refuse to start"
		}
		fmt.Fprintf(&b, "max_usd:     %s (%s)\n", usd(e.MaxUSD), verdict)
	}
	b.WriteString("\n")
	wid := len("arm")
	for _, a := range e.Arms {
		wid = max(wid, len(a.Name))
	}
	fmt.Fprintf(&b, "%-*s %7s %9s %11s %12s %s\n", wid, "arm", "trials", "history", "calls/trial", "tokens/trial", "cost/trial p10-p90")
	for _, a := range e.Arms {
		if a.HistoryTrials == 0 {
			what := "no history"
			if !a.Model {
				what = "no model calls"
			}
			fmt.Fprintf(&b, "%-*s %7d %9d %s\n", wid, a.Name, a.Trials, 0, what)
			continue
		}
		src := "recorded"
		if a.PricedByPlan {
			src = "plan prices"
		}
		fmt.Fprintf(&b, "%-*s %7d %9d %11.1f %12s %s-%s (%s)\n", wid, a.Name, a.Trials, a.HistoryTrials,
			a.CallsPerTrial.Mean, count(a.TokensPerTrial.Mean), usd(a.CostPerTrial.P10), usd(a.CostPerTrial.P90), src)
	}
	if p := e.Power; p != nil {
		b.WriteString("\n")
		fmt.Fprintf(&b, "power: %d pairs per arm pair (%d cases x %d seeds), alpha %g, power %g, baseline %g, ICC %g\n",
			p.Pairs, p.Cases, p.Seeds, p.Alpha, p.Power, p.Baseline, p.ICC)
		if p.MDD > 0 {
			fmt.Fprintf(&b, "  minimum detectable difference: %.1f points\n", 100*p.MDD)
		} else {
			b.WriteString("  minimum detectable difference: none (too few cases for any difference)\n")
		}
		switch {
		case p.NeededCases == 0:
			fmt.Fprintf(&b, "  target %.1f points: impossible from baseline %g\n", 100*p.Effect, p.Baseline)
		case p.Enough:
			fmt.Fprintf(&b, "  target %.1f points: detectable (needs %d cases, plan has %d)\n", 100*p.Effect, p.NeededCases, p.Cases)
		default:
			fmt.Fprintf(&b, "  target %.1f points: NOT detectable (needs %d cases at %d seeds, plan has %d)\n", 100*p.Effect, p.NeededCases, p.Seeds, p.Cases)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func usd(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// count prints a large number compactly: 1234 -> 1.2k, 3.4M.
func count(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
