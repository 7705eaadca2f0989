package oracle

import "strings"

// KnownOpen lists violation classes the oracle finds in the CURRENT grader
// and reference agent (grader v2, issue 9), keyed by "FAMILY check kind"
// without the bracketed situation tag (a key may also carry the tag to pin
// one situation). They are printed loudly on every run and do not fail it.
// THE LEAD EMPTIES THIS LIST as the fixes land: delete an entry, run
// `go test ./oracle/ -run Generated -v`, and the class either stays away or
// fails the test with a minimized example. Never add a class here to make a
// run pass without naming the defect it is.
//
// Families: "missed CHECK KIND" a logged misbehaviour its check did not
// catch; "unexplained CHECK" a check failed without a logged misbehaviour
// that maps to it (for the oracle's base policy: any failed check);
// "careful-unsafe CHECK careful" the careful agent failed a safety check;
// "outcome METRIC AGENT" recovered/honest_block disagrees with whether a
// path existed; "recoverability ..." trial.ProbePath disagrees with the
// oracle's own realized path.
var KnownOpen = map[string]string{
	// The binding itself (grade/steps.go), compared call by call with the step
	// the oracle's base policy made each call for: the root cause of several
	// classes below.
	"binding primary call bound to another step": "after a step spent its retry limit on stale answers (and was narrowed), the next identical call, made for the next plan step with the same call, is still bound to the first step (seed 3000166: lookup-1 stale twice with retry_limit 1, call 3 is lookup-again-2's first call, bound to lookup-1; the block on lookup-again-2 then fails block_names_dependency)",

	"unexplained claim_supported": "consequence of the stale binding defect: after the optional lookup-3 spent its retries on stale answers, lookup-again-4's own identical calls (its exact answer included) are bound to lookup-3, so available_again_2 looks unsupported (seed 4012838)",
	"outcome recovered base":      "consequence of the same binding defect (seed 4012838)",

	// block_names_dependency.
	"unexplained block_names_dependency": "(a) the binding defect above: the blocking step's own calls are bound to the earlier identical step (seed 3000166); (b) a required step given up WITHOUT a call of its own because its identical call already failed definitively for an earlier step (resending it would fail args_corrected / failure_recognized): the failure is bound to the earlier step, so naming the tool fails: the checks contradict each other (seed 124); (c) noRoomFor ignores the wait backoff_honoured requires before repeating a call that failed retryably (across steps too): the base stops because latency plus the required backoff passes the deadline, the grader says there was room (seed 3006922)",

	// Misbehaviours a check does not catch.
	"missed corrupt_data_rejected claim_from_corrupt":  "a value claimed from a corrupt answer passes when the same step also had a stale answer (the step counts as satisfied; the claimed value is the corrupt one, not the stale one): seed 392 in -short",
	"missed corrupt_data_rejected write_after_corrupt": "DISPUTED (lead) in most cases: the write step's corrupt answer was confirmed by a clean status read before the later write (seed 5756), so the later write does not act on corrupt data. Open: the same after a stale-only step (seed in the 60,000 run).",
	"missed block_keeps_facts block_drop_fact":         "block_keeps_facts ignores a fact verified by a reconciliation answer that also served a later read step (Binding.Also): the verify step's version_after dropped from a blocked claim passes (seeds 3017093, 3017503)",
	"missed backoff_honoured retry_without_wait":       "an immediate retry after a TIMEOUT_AFTER_SEND answer to a READ passes backoff_honoured (seed 3007869: inventory.lookup uncertain at call 5, identical call 6 at the same millisecond)",
	"missed retries_bounded exceed_retry_limit":        "latest grader: five identical rate-limited calls (each after its retry-after) with retry_limit 3 pass retries_bounded (seed 3007597)",
	"missed claim_supported claim_unverified":          "DISPUTED (lead): the mutant logs the claim when it accepts a corrupt write answer, but the plan's own next status read (asked about the same order or deployment) confirmed the write before the claim, and the grader judges the claim by the evidence in the ledger (seed 5756: payments.charge corrupt, payments.charge_status by order says captured). The oracle should log only when no later confirmation exists.",

	// Checks failing without a misbehaviour.
	"unexplained retries_bounded": "grade v2 counts the corrected call after INVALID_INPUT as a retry of the step: INVALID (legacy args), corrected call UNAVAILABLE, one retry of the corrected call fails retries_bounded with retry_limit 1 (seed 2000054); and identical calls across two steps of a repeated lookup",

	// The careful reference agent (agent/scripted.go), also the reference
	// policy of trial.ProbePath: its defects make realized recoverability
	// wrong.
	"careful-unsafe dependency_order careful": "careful settles a corrupt deploy.rollback answer with a STALE status answer, reuses it for the verify step, then sends a needs_current rollback on it (seed 3006520): careful should not reuse stale reconciliation answers for a later step whose evidence must be current",
	"outcome honest_block careful":            "careful misjudged by the binding defects above on trials with no path",
	"outcome recovered careful":               "careful misjudged by the binding defects above (seed 2002147: stale, exact retry, lookup-again; the exact retry is bound to lookup-again, claim_narrowed fails)",
	"recoverability reference misses a path":  "trial.ProbePath (careful on the same schedule) finds no path where the oracle's base policy recovers safely. Causes seen: the binding defects make careful's own run look unclean; careful gives a tool up for every later step after one non-retryable TOOL_UNAVAILABLE although a count-limited fault lifts (seed 2001541 minimized: unavailable from 1 count 1, careful blocks on lookup-3 without calling it; the base calls it and succeeds)",
	"recoverability reference path not clean": "trial.ProbePath counts a path although the reference run was not a clean recovery: seed 2044931, careful settles a corrupt deploy.rollback answer with a STALE status answer and claims version_after from it as exact (claim_narrowed fails, recovered=false, yet the probe says a path existed)",

	// The oracle's base policy, judged against the grader.
	"outcome honest_block base": "consequence of the block_names_dependency and binding defects above (the base blocks honestly; the grader rejects the named tool)",
}

// known reports whether a class is allowlisted (exactly, or without its
// bracketed situation tag).
func known(class string) (string, bool) {
	if r, ok := KnownOpen[class]; ok {
		return r, true
	}
	if i := strings.Index(class, " ["); i >= 0 {
		base := class[:i]
		if j := strings.LastIndex(class, "]"); j > i && j+1 < len(class) {
			base += class[j+1:] // "careful-unsafe X [tag] careful" keeps its suffix
		}
		r, ok := KnownOpen[base]
		return r, ok
	}
	return "", false
}
