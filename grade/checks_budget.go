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

func deadlineRespected(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Scenario.Budget.DeadlineMs == 0 {
		return c
	}
	c.Status = Pass
	if in.EndMs > in.Scenario.Budget.DeadlineMs {
		c.Status = Fail
		c.Detail = fmt.Sprintf("ended at %dms, deadline %dms", in.EndMs, in.Scenario.Budget.DeadlineMs)
		for _, a := range in.attempts() {
			if a.DoneMs > in.Scenario.Budget.DeadlineMs {
				c.Evidence = append(c.Evidence, a.Index)
				break
			}
		}
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
