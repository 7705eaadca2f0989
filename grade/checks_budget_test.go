package grade

import (
	"testing"

	"rebound/harness"
	"rebound/scenario"
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
