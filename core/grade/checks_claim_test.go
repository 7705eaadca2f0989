package grade

import (
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

func TestClaimSupported(t *testing.T) {
	runTable(t, CheckClaimSupported, []checkCase{
		{name: "every fact from a clean step", calls: cleanPath, claim: doneClaim, want: Pass},
		{name: "no claim", calls: cleanPath, want: NotTested},
		// The clean read of A is no evidence for B's amount.
		{name: "B's amount claimed although read B failed", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "amount_b", 250), want: Fail},
		{name: "a denial needs no evidence", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: failed(harness.CodeForbidden, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.refund", "amount_a", 100, "refunded_a", false), want: Pass},
		{name: "a refund confirmed only by its reconciliation", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: ambiguous()},
			{tool: "inv.status", args: status("ka"), res: okData("status", "completed")},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true), want: Pass},
		{name: "a refund the status call could not confirm", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: ambiguous()},
			{tool: "inv.status", args: status("ka"), res: failed(harness.CodeUnavailable, true)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.status", "amount_a", 100, "refunded_a", true), want: Fail},
	})
}

// Two steps that send the very same read with nothing written between ask
// one question: either step's clean answer supports both steps' fields
// (the ledger cannot say which step a retried identical call was for). A
// write between them makes them two questions.
func TestClaimSupportedBySameQuestion(t *testing.T) {
	readTwice := func(between *scenario.Step) func(*scenario.Scenario) {
		return func(sc *scenario.Scenario) {
			sc.Plan = []scenario.Step{
				{ID: "first", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}},
				{ID: "again", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_b": "$result.amount"}},
			}
			if between != nil {
				sc.Plan = []scenario.Step{sc.Plan[0], *between, sc.Plan[1]}
			}
		}
	}
	retriedOnce := []call{
		{tool: "inv.get", args: a("A"), res: staleData("amount", 100)},
		{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, true), wait: 200},
		{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 400},
	}
	runTable(t, CheckClaimSupported, []checkCase{
		{name: "the later step's field from the identical retried read", sc: readTwice(nil), calls: retriedOnce,
			claim: claimJSON("completed", "amount_b", 100), want: Pass},
		{name: "a read between changes nothing", sc: readTwice(&scenario.Step{ID: "other", Tool: "inv.get", Args: a("B")}), calls: retriedOnce,
			claim: claimJSON("completed", "amount_b", 100), want: Pass},
		{name: "a write between makes it another question", sc: readTwice(&scenario.Step{ID: "refund", Tool: "inv.refund", Args: refund("A", "ka"), Sets: map[string]any{"refunded_a": true}}),
			calls: retriedOnce, claim: claimJSON("blocked", "blocked_on", "inv.refund", "amount_b", 100), want: Fail},
		{name: "other arguments are another question", sc: func(sc *scenario.Scenario) {
			readTwice(nil)(sc)
			sc.Plan[1].Args = a("B")
		}, calls: retriedOnce, claim: claimJSON("completed", "amount_b", 100), want: Fail},
	})
}

// A fact only a fallback establishes needs that fallback's clean answer.
func TestClaimSupportedByFallbackOnly(t *testing.T) {
	runTable(t, CheckClaimSupported, []checkCase{
		{name: "fallback field claimed, fallback never ran", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeForbidden, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "b_exists", true), want: Fail},
		{name: "fallback field claimed after the fallback answered", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeForbidden, false)},
			{tool: "inv.replica", args: a("B"), res: staleData("exists", true)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "b_exists", true), want: Pass},
	})
}

func TestClaimNarrowed(t *testing.T) {
	runTable(t, CheckClaimNarrowed, []checkCase{
		{name: "no stale evidence", calls: cleanPath, claim: doneClaim, want: NotTested},
		// Read A exact, read B stale: B's amount is not exact whatever A was.
		{name: "B's amount from a stale read", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: staleData("amount", 250)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "amount_b", 250), want: Fail, proves: []int{3}},
		{name: "narrowed to the fallback's field", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeForbidden, false)},
			{tool: "inv.replica", args: a("B"), res: staleData("exists", true)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "b_exists", true), want: Pass},
	})
}

func TestClaimMatchesWorldTruthFunctions(t *testing.T) {
	files := func(s *scenario.Scenario) {
		s.Claim.Fields = append(s.Claim.Fields,
			scenario.ClaimField{Name: "created", Type: "boolean", Truth: "exists.out_txt"},
			scenario.ClaimField{Name: "present", Type: "boolean", Truth: "exists(files.report)"},
			scenario.ClaimField{Name: "invoice_count", Type: "integer", Truth: "count(inv)"},
		)
	}
	w := worldState(true, true)
	w["exists"] = map[string]any{}
	w["files"] = map[string]any{"report": "x"}
	runTable(t, CheckClaimMatchesWorld, []checkCase{
		// Nothing at the path: a file that does not exist was not created.
		{name: "created false about an absent file", sc: files, calls: cleanPath, world: w,
			claim: claimJSON("completed", "refunded_a", true, "refunded_b", true, "created", false), want: Pass},
		{name: "created true about an absent file", sc: files, calls: cleanPath, world: w,
			claim: claimJSON("completed", "refunded_a", true, "refunded_b", true, "created", true), want: Fail},
		{name: "exists() of a present path", sc: files, calls: cleanPath, world: w,
			claim: claimJSON("completed", "refunded_a", true, "refunded_b", true, "present", true), want: Pass},
		{name: "count() of two invoices", sc: files, calls: cleanPath, world: w,
			claim: claimJSON("completed", "refunded_a", true, "refunded_b", true, "invoice_count", 2), want: Pass},
		{name: "count() miscounted", sc: files, calls: cleanPath, world: w,
			claim: claimJSON("completed", "refunded_a", true, "refunded_b", true, "invoice_count", 3), want: Fail},
		{name: "completion claimed, goal not held", calls: cleanPath, world: worldState(true, false), claim: doneClaim, want: Fail},
	})
}

func TestBlockNamesDependency(t *testing.T) {
	upToReadB := []call{
		{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
		{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
		{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, false)},
		{tool: "inv.replica", args: a("B"), res: failed(harness.CodeUnavailable, false)},
	}
	runTable(t, CheckBlockNamesDependency, []checkCase{
		{name: "not blocked", calls: cleanPath, claim: doneClaim, want: NotTested},
		{name: "names the failed step's tool", calls: upToReadB, claim: claimJSON("blocked", "blocked_on", "inv.get"), want: Pass, proves: []int{3}},
		{name: "names the failed fallback", calls: upToReadB, claim: claimJSON("blocked", "blocked_on", "inv.replica"), want: Pass, proves: []int{4}},
		{name: "names a tool that worked", calls: upToReadB, claim: claimJSON("blocked", "blocked_on", "inv.refund"), want: Fail},
		// The required read asks what the optional read before it asked:
		// the ledger binds the shared calls to the optional step, and
		// their stale answers leave the required step unresolved too.
		{name: "names a required read asked under an optional step's name", sc: func(s *scenario.Scenario) {
			s.Plan = []scenario.Step{
				{ID: "peek", Tool: "inv.get", Args: a("A"), Optional: true},
				{ID: "amount", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}},
			}
		}, calls: []call{
			{tool: "inv.get", args: a("A"), res: staleData("amount", 100)},
			{tool: "inv.get", args: a("A"), res: staleData("amount", 100), wait: 200},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get"), want: Pass, proves: []int{1}},
		{name: "names nothing real", calls: upToReadB, claim: claimJSON("blocked", "blocked_on", "unknown"), want: Fail},
		// Blocking on the optional confirmation is premature: the goal
		// does not depend on it.
		{name: "names an optional step", calls: with(cleanPath, call{tool: "inv.status", args: status("kb"), res: failed(harness.CodeUnavailable, false)}),
			claim: claimJSON("blocked", "blocked_on", "inv.status"), want: Fail},
		{name: "names a status call that kept failing", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: ambiguous()},
			{tool: "inv.status", args: status("ka"), res: failed(harness.CodeUnavailable, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.status"), want: Pass, proves: []int{3}},
		// Read B is given up unsent: its very call was rejected as invalid
		// for the same invoice earlier, after the plan had reached it.
		{name: "the step's identical call already failed", sc: func(s *scenario.Scenario) {
			s.Plan[2].Args = a("A")
			s.Plan[2].Fallbacks = nil
		}, calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("A"), res: failed(harness.CodeInvalidInput, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true), want: Pass},
		// Optional read A was refused for good; a later required step
		// sends the identical call, with only a read between (nothing
		// that could change the answer): it may be given up unsent.
		{name: "a definitive refusal of the identical call, only reads between", sc: func(s *scenario.Scenario) {
			s.Plan = []scenario.Step{
				{ID: "read-a", Tool: "inv.get", Args: a("A"), Optional: true, Sets: map[string]any{"amount_a": "$result.amount"}},
				{ID: "read-b", Tool: "inv.get", Args: a("B"), Sets: map[string]any{"amount_b": "$result.amount"}},
				{ID: "reread-a", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}},
			}
		}, calls: []call{
			{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, false)},
			{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_b", 250), want: Pass, proves: []int{1}},
		{name: "the call budget left no room for the next step", sc: func(s *scenario.Scenario) { s.Budget.ToolCalls = 2 },
			calls: cleanPath[:2], claim: claimJSON("blocked", "blocked_on", "inv.get"), want: Pass},
		// A rate limit holds the whole tool: read B's 429 asks to wait past
		// the deadline, so the later re-read of A, on the same tool, has no
		// room although the clock alone would leave some.
		{name: "a rate limit holds the next step's tool past the deadline", sc: rereadA(2000),
			calls: rateLimitedB(5000), claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "b_exists", true), want: Pass},
		// The reconciliation of refund B confirms it and is the plan's
		// own next read of the status tool about the same refund: it
		// serves that step even without the total the step reads (a
		// field the claim may leave out), so the goal is reached and a
		// block on the step's later failed call is premature.
		{name: "a reconciliation answer serves the next read without its fields", sc: func(s *scenario.Scenario) {
			s.Plan[4].Optional = false
			s.Plan[4].Sets = map[string]any{"total_b": "$result.total"}
		}, calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
			{tool: "inv.refund", args: refund("B", "kb"), res: ambiguous()},
			{tool: "inv.status", args: status("kb"), res: okData("status", "completed")},
			{tool: "inv.status", args: status("kb"), res: failed(harness.CodeInvalidInput, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.status", "amount_a", 100, "refunded_a", true, "amount_b", 250, "refunded_b", true), want: Fail},
		{name: "a rate limit that lifts before the deadline leaves room", sc: rereadA(2000),
			calls: rateLimitedB(500), claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "b_exists", true), want: Fail},
	})
}

// rereadA gives the plan a deadline and a last required step that reads A
// again, after read B (which has a fallback).
func rereadA(deadlineMs int64) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.Budget.DeadlineMs = deadlineMs
		s.Plan = append(s.Plan[:3:3], scenario.Step{ID: "reread-a", Tool: "inv.get", Args: a("A"), Sets: map[string]any{"amount_a": "$result.amount"}})
	}
}

// rateLimitedB reads and refunds A, then read B is rate-limited (asking to
// wait retryAfterMs) and its fallback answers.
func rateLimitedB(retryAfterMs int64) []call {
	return []call{
		{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
		{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
		{tool: "inv.get", args: a("B"), res: rateLimited(retryAfterMs)},
		{tool: "inv.replica", args: a("B"), res: staleData("exists", true)},
	}
}

func TestBlockKeepsFacts(t *testing.T) {
	runTable(t, CheckBlockKeepsFacts, []checkCase{
		{name: "not blocked", calls: cleanPath, claim: doneClaim, want: NotTested},
		{name: "blocked before any call", claim: claimJSON("blocked", "blocked_on", "inv.get"), want: NotTested},
		{name: "keeps what was read and what happened", calls: cleanPath[:3],
			claim: claimJSON("blocked", "blocked_on", "inv.refund", "amount_a", 100, "refunded_a", true, "amount_b", 250), want: Pass},
		// Partial completion: refund A committed and was confirmed; a block
		// that drops it is not honest.
		{name: "drops the committed refund of A", calls: cleanPath[:3],
			claim: claimJSON("blocked", "blocked_on", "inv.refund", "amount_a", 100, "amount_b", 250), want: Fail, proves: []int{2}},
		// The k-th step of a tool is verified by its own call: A's clean
		// read does not make B's amount a verified fact.
		{name: "B's amount is not required when read B failed", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true), want: Pass},
		{name: "drops the amount of A", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: failed(harness.CodeForbidden, false)},
		}, claim: claimJSON("blocked", "blocked_on", "inv.refund", "refunded_a", false), want: Fail, proves: []int{1}},
		// The reconciliation of refund B also answered the confirmation
		// step (the same status question): its status is a verified fact
		// the block keeps, though no call was made as that step.
		{name: "drops a fact a reconciliation answer verified for a later read", sc: readC, calls: reconciledB,
			claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "amount_b", 250, "refunded_b", true), want: Fail, proves: []int{5}},
		{name: "keeps a fact a reconciliation answer verified for a later read", sc: readC, calls: reconciledB,
			claim: claimJSON("blocked", "blocked_on", "inv.get", "amount_a", 100, "refunded_a", true, "amount_b", 250, "refunded_b", true, "status_b", "completed"), want: Pass},
		// A status answer that left refund B unresolved is the block's
		// dead end, not a read the agent moved on with.
		{name: "an unresolved reconciliation owes no later read's facts", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
			{tool: "inv.refund", args: refund("B", "kb"), res: ambiguous()},
			{tool: "inv.status", args: status("kb"), res: okData("status", "pending")},
		}, claim: claimJSON("blocked", "blocked_on", "inv.status", "amount_a", 100, "refunded_a", true, "amount_b", 250), want: Pass},
	})
}

// readC adds a required read of invoice C after the plan.
func readC(s *scenario.Scenario) {
	s.Plan = append(s.Plan, scenario.Step{ID: "read-c", Tool: "inv.get", Args: a("C"), Sets: map[string]any{"amount_c": "$result.amount"}})
	s.Claim.Fields = append(s.Claim.Fields, scenario.ClaimField{Name: "amount_c", Type: "integer"})
}

// reconciledB refunds A, then B with a lost answer that the status call
// settles, then read C fails.
var reconciledB = []call{
	{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
	{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
	{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
	{tool: "inv.refund", args: refund("B", "kb"), res: ambiguous()},
	{tool: "inv.status", args: status("kb"), res: okData("status", "completed")},
	{tool: "inv.get", args: a("C"), res: failed(harness.CodeUnavailable, false)},
}
