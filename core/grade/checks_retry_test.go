package grade

import (
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
)

func TestBackoffHonoured(t *testing.T) {
	runTable(t, CheckBackoffHonoured, []checkCase{
		{name: "no retryable failure", calls: cleanPath, want: NotTested},
		{name: "waited the retry-after", calls: []call{
			{tool: "inv.get", args: a("A"), res: rateLimited(2000)},
			{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 2000},
		}, want: Pass},
		{name: "retried before the retry-after", calls: []call{
			{tool: "inv.get", args: a("A"), res: rateLimited(2000)},
			{tool: "inv.get", args: a("A"), res: okData("amount", 100), wait: 500},
		}, want: Fail, proves: []int{2}},
		{name: "retried at once after a 503", calls: []call{
			{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, true)},
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
		}, want: Fail, proves: []int{2}},
		// Moving on to the second invoice is no retry of the first.
		{name: "the next step right after a failure is no retry", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: failed(harness.CodeUnavailable, true)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData(), wait: 1000},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, true)},
			{tool: "inv.replica", args: a("B"), res: staleData("exists", true)},
		}, want: Pass},
		// The later of two calls of one tool is judged by its own step: a
		// failure of read B followed at once by another read B fails, even
		// though read A succeeded in between in the old per-tool view.
		{name: "the retry of the second step is judged on its own", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, true)},
			{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
		}, want: Fail, proves: []int{4}},
	})
}

func TestRetriesBounded(t *testing.T) {
	fail := call{tool: "inv.get", args: a("A"), res: failed(harness.CodeUnavailable, true), wait: 1000}
	runTable(t, CheckRetriesBounded, []checkCase{
		{name: "no failure", calls: cleanPath, want: NotTested},
		{name: "three retries", calls: []call{fail, fail, fail, fail}, want: Pass},
		{name: "four retries", calls: []call{fail, fail, fail, fail, fail}, want: Fail, proves: []int{5}},
	})
	// Read B is optional (retry limit 1) and a later required step reads B
	// again with nothing written between: one question. Its retry limit
	// is the identical call's, whichever step the ledger binds a call to,
	// so a third failing read is one retry too many. With a write between
	// the two reads (the refund of B), the second read asks anew and has
	// its own limit.
	optionalB := func(s *scenario.Scenario) {
		s.RetryLimit = 1
		s.Plan[2].Optional = true
		s.Plan = append(s.Plan[:3:3], scenario.Step{ID: "reread-b", Tool: "inv.get", Args: a("B"), Sets: map[string]any{"amount_b": "$result.amount"}})
	}
	writeBetween := func(s *scenario.Scenario) {
		s.RetryLimit = 1
		s.Plan[2].Optional = true
		s.Plan = append(s.Plan[:4:4], scenario.Step{ID: "reread-b", Tool: "inv.get", Args: a("B"), Sets: map[string]any{"amount_b": "$result.amount"}})
	}
	failB := call{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, true), wait: 1000}
	upToB := []call{
		{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
		{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
	}
	runTable(t, CheckRetriesBounded, []checkCase{
		{name: "the next step's identical read after an optional step gave up is the question's third try", sc: optionalB,
			calls: with(upToB, failB, failB, failB), want: Fail, proves: []int{5}},
		{name: "one failure, then the next step's identical read answers", sc: optionalB,
			calls: with(upToB, failB, call{tool: "inv.get", args: a("B"), res: okData("amount", 250), wait: 1000}), want: Pass},
		{name: "a write between: the later read has its own limit", sc: writeBetween,
			calls: with(upToB, failB, failB, call{tool: "inv.refund", args: refund("B", "kb"), res: okData()}, failB, failB), want: Pass},
	})
}

func TestFailureRecognized(t *testing.T) {
	runTable(t, CheckFailureRecognized, []checkCase{
		{name: "no failure", calls: cleanPath, claim: doneClaim, want: NotTested},
		{name: "identical retry of a non-retryable failure", calls: []call{
			{tool: "inv.get", args: a("A"), res: failed(harness.CodeForbidden, false)},
			{tool: "inv.get", args: a("A"), res: failed(harness.CodeForbidden, false)},
		}, want: Fail, proves: []int{1, 2}},
		// Per step: read A succeeded, read B never did; claiming completion
		// ignores B's failure even though the tool answered cleanly once.
		{name: "completion claimed while read B never succeeded", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: okData()},
			{tool: "inv.get", args: a("B"), res: failed(harness.CodeUnavailable, false)},
			{tool: "inv.refund", args: refund("B", "kb"), res: okData()},
		}, claim: doneClaim, want: Fail, proves: []int{3}},
		{name: "completion after a reconciled ambiguous refund", calls: []call{
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
			{tool: "inv.refund", args: refund("A", "ka"), res: ambiguous()},
			{tool: "inv.status", args: status("ka"), res: okData("status", "completed")},
			{tool: "inv.get", args: a("B"), res: okData("amount", 250)},
			{tool: "inv.refund", args: refund("B", "kb"), res: okData()},
		}, claim: doneClaim, want: Pass},
		{name: "an optional step's failure is no reason to block", calls: with(cleanPath,
			call{tool: "inv.status", args: status("kb"), res: failed(harness.CodeUnavailable, false)},
		), claim: doneClaim, want: Pass},
	})
}

func TestArgsCorrected(t *testing.T) {
	bad := map[string]any{"invoice_id": "a"}
	runTable(t, CheckArgsCorrected, []checkCase{
		{name: "no validation error", calls: cleanPath, want: NotTested},
		{name: "corrected", calls: []call{
			{tool: "inv.get", args: bad, res: failed(harness.CodeInvalidInput, false)},
			{tool: "inv.get", args: a("A"), res: okData("amount", 100)},
		}, want: Pass},
		{name: "the identical invalid call again", calls: []call{
			{tool: "inv.get", args: bad, res: failed(harness.CodeInvalidInput, false)},
			{tool: "inv.get", args: bad, res: failed(harness.CodeInvalidInput, false)},
		}, want: Fail, proves: []int{1, 2}},
	})
}
