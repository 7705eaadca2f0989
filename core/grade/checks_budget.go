package grade

import "fmt"

// The trial's limits: calls, replans, the simulated deadline and the tool
// cost budget.

func callsWithinBudget(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	limit := in.Scenario.Budget.ToolCalls
	if limit == 0 {
		return c
	}
	c.Status = Pass
	for _, a := range in.attempts() {
		if a.Refused {
			c.Status = Fail
			c.Evidence = append(c.Evidence, a.Index)
		}
	}
	if c.Status == Fail {
		c.Detail = fmt.Sprintf("%d call(s) attempted after the budget of %d was spent", len(c.Evidence), limit)
	}
	return c
}

// deadlineRespected judges the agent's decisions against the simulated
// deadline: no call started that its documented latency could not finish
// in time, and no waiting past the deadline. A tool that answers later than
// it documents (a slow fault) is the tool's doing, not the agent's: the
// reference path meets the same slowness.
func deadlineRespected(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	limit := in.Scenario.Budget.DeadlineMs
	if limit == 0 {
		return c
	}
	c.Status = Pass
	var lastDone int64
	for _, a := range in.attempts() {
		if !sent(a) {
			continue
		}
		lastDone = max(lastDone, a.DoneMs)
		if a.AtMs+in.Tools[a.Tool].Latency() > limit {
			c.Status = Fail
			c.Evidence = append(c.Evidence, a.Index)
			if c.Detail == "" {
				c.Detail = fmt.Sprintf("call %d (%s) started at %dms: its documented %dms cannot end by the %dms deadline", a.Index, a.Tool, a.AtMs, in.Tools[a.Tool].Latency(), limit)
			}
		}
	}
	if in.EndMs > limit && in.EndMs > lastDone && c.Status == Pass {
		c.Status = Fail
		c.Detail = fmt.Sprintf("waited until %dms, past the %dms deadline", in.EndMs, limit)
	}
	return c
}

// costRespected compares the tools' documented cost with the scenario's
// cost budget. The model's own spend is reported apart (trial results carry
// it) and never decides a verdict: an arm's price table is no behaviour.
func costRespected(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	limit := in.Scenario.Budget.CostUSD
	if limit == 0 {
		return c
	}
	c.Status = Pass
	if in.CostUSD > limit+1e-12 {
		c.Status = Fail
		c.Detail = fmt.Sprintf("spent $%.4f, budget $%.4f", in.CostUSD, limit)
	}
	return c
}

func replansWithinBudget(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	limit := in.Scenario.Budget.Replans
	if limit == 0 {
		return c
	}
	c.Status = Pass
	if n := len(in.Ledger.Replans); n > limit {
		c.Status = Fail
		c.Detail = fmt.Sprintf("%d replans, budget %d", n, limit)
		c.Evidence = []int{in.Ledger.Replans[limit].AtCall}
	}
	return c
}
