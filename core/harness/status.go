package harness

// CallLimit is the number of calls the harness sends under this budget:
// ToolCalls, DefaultToolCalls when it sets none, never more than
// MaxToolCalls.
func (b Budget) CallLimit() int {
	n := b.ToolCalls
	if n <= 0 {
		n = DefaultToolCalls
	}
	return min(n, MaxToolCalls)
}

// Status is a trial's budgets and what is left of them, as an agent may ask
// for it (the tool server's trial_status, which is not a tool call). A limit
// of 0 means the scenario sets none; its "left" is then null.
type Status struct {
	CallsUsed    int      `json:"calls_used"`
	CallLimit    int      `json:"call_limit"`
	CallsLeft    int      `json:"calls_left"`
	NowMs        int64    `json:"now_ms"`
	DeadlineMs   int64    `json:"deadline_ms"`
	TimeLeftMs   *int64   `json:"time_left_ms"`
	ReplansUsed  int      `json:"replans_used"`
	ReplanLimit  int      `json:"replan_limit"`
	ReplansLeft  *int     `json:"replans_left"`
	CostUSD      float64  `json:"cost_usd"`
	CostLimitUSD float64  `json:"cost_limit_usd"`
	CostLeftUSD  *float64 `json:"cost_left_usd"`
}

// NewStatus computes the remaining allowance of budget b after callsUsed
// calls sent, replans plan updates and costUSD spent, at task time nowMs.
func NewStatus(b Budget, callsUsed, replans int, costUSD float64, nowMs int64) Status {
	s := Status{CallsUsed: callsUsed, CallLimit: b.CallLimit(), NowMs: nowMs, DeadlineMs: max(b.DeadlineMs, 0),
		ReplansUsed: replans, ReplanLimit: max(b.Replans, 0), CostUSD: costUSD, CostLimitUSD: max(b.CostUSD, 0)}
	s.CallsLeft = max(s.CallLimit-callsUsed, 0)
	if s.DeadlineMs > 0 {
		left := max(s.DeadlineMs-nowMs, 0)
		s.TimeLeftMs = &left
	}
	if s.ReplanLimit > 0 {
		left := max(s.ReplanLimit-replans, 0)
		s.ReplansLeft = &left
	}
	if s.CostLimitUSD > 0 {
		left := max(s.CostLimitUSD-costUSD, 0)
		s.CostLeftUSD = &left
	}
	return s
}

// Status returns the trial's budgets and what is left of them now.
func (d *Dispatcher) Status() Status {
	return NewStatus(d.budget, d.sent, d.replans, d.cost, d.clock.Now())
}

// StatusReporter is implemented by an agent's environment that can say
// what is left of the trial's budgets (the trial runner's, over a
// Dispatcher).
type StatusReporter interface {
	Status() Status
}
