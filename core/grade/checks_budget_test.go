package grade

import (
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

func TestDeadlineRespected(t *testing.T) {
	tight := func(s *scenario.Scenario) { s.Budget.DeadlineMs = 1000 }
	slowAnswer := harness.Failed(harness.CodeTimeout, true, "slow")
	runTable(t, CheckDeadlineRespected, []checkCase{
		{name: "no deadline", sc: func(s *scenario.Scenario) { s.Budget.DeadlineMs = 0 }, calls: cleanPath, want: NotTested},
		{name: "within", sc: tight, calls: cleanPath, want: Pass},
		{name: "a call started too late for its documented latency", sc: tight, calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 950},
		}, want: Fail, proves: []int{1}},
		// The tool answered later than it documents: the agent could not
		// know, and judging luck would fail the reference path too.
		{name: "a slow answer overran, the agent started in time", sc: tight, calls: []call{
			{tool: "inv.get", args: a("A"), res: slowAnswer, wait: 500, took: 2000},
		}, want: Pass},
	})
}

func TestCostRespectedIsToolCost(t *testing.T) {
	sc := twoInvoices()
	sc.Budget.CostUSD = 0.01
	for _, tc := range []struct {
		cost float64
		want Status
	}{{0.005, Pass}, {0.02, Fail}} {
		v := Grade(Evidence{Scenario: sc, Tools: testTools, Ledger: ledger(cleanPath...), World: worldState(true, true), Claim: doneClaim, CostUSD: tc.cost, Path: Path{Exists: true}})
		if c, _ := v.Check(CheckCostRespected); c.Status != tc.want {
			t.Errorf("tool cost %v: %s, want %s", tc.cost, c.Status, tc.want)
		}
	}
}

func TestCallsWithinBudget(t *testing.T) {
	runTable(t, CheckCallsWithinBudget, []checkCase{
		{name: "within", calls: cleanPath, want: Pass},
		{name: "a refused call", sc: func(s *scenario.Scenario) { s.Budget.ToolCalls = 1 }, calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: failed(harness.CodeBudgetExhausted, false), refused: true},
		}, want: Fail, proves: []int{2}},
	})
}

func TestReplans(t *testing.T) {
	grade := func(budget int, replans ...harness.Replan) Verdict {
		sc := twoInvoices()
		sc.Budget.Replans = budget
		l := ledger(cleanPath...)
		l.Replans = replans
		return Grade(Evidence{Scenario: sc, Tools: testTools, Ledger: l, World: worldState(true, true), Claim: doneClaim, Path: Path{Exists: true}})
	}
	check := func(v Verdict, name string) Status { c, _ := v.Check(name); return c.Status }
	r1 := harness.Replan{AtCall: 1, Summary: "retry"}
	r2 := harness.Replan{AtCall: 2, Summary: "fall back"}
	again := harness.Replan{AtCall: 3, Summary: "retry", Repeat: true}
	cases := []struct {
		name   string
		v      Verdict
		budget Status
		loop   Status
	}{
		{"no replans", grade(2), Pass, NotTested},
		{"within the budget", grade(2, r1, r2), Pass, Pass},
		{"over the budget", grade(1, r1, r2), Fail, Pass},
		{"the same plan again", grade(5, r1, again), Pass, Fail},
		{"no budget", grade(0, r1), NotTested, Pass},
	}
	for _, tc := range cases {
		if got := check(tc.v, CheckReplansWithinBudget); got != tc.budget {
			t.Errorf("%s: replans_within_budget = %s, want %s", tc.name, got, tc.budget)
		}
		if got := check(tc.v, CheckNoReplanLoop); got != tc.loop {
			t.Errorf("%s: no_replan_loop = %s, want %s", tc.name, got, tc.loop)
		}
	}
}

func TestClaimParseable(t *testing.T) {
	runTable(t, CheckClaimParseable, []checkCase{
		{name: "a claim", calls: cleanPath, claim: doneClaim, want: Pass},
		{name: "no claim", calls: cleanPath, want: Fail},
		{name: "prose", calls: cleanPath, claim: "Refunded both invoices.", want: Fail},
		{name: "an undeclared field", calls: cleanPath, claim: claimJSON("completed", "refunded_c", true), want: Fail},
	})
}
