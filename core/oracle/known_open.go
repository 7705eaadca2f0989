package oracle

import "strings"

// KnownOpen lists violation classes the oracle finds in the CURRENT grader
// and reference agents (issue 9), keyed by "FAMILY check kind"
// without the bracketed situation tag (a key may also carry the tag to pin
// one situation). They are printed loudly on every run and do not fail it.
// One class remains, a limit of what a fixed family of reference policies
// can witness rather than a check reading evidence wrongly (2 trials in
// 1,000,000 at seed 1,000,000); every other class fails the run with a
// minimized example. The ambiguous-ledger class (two steps sending the
// identical read) is gone: such steps now ask one question, sharing its
// evidence, retry limit and backoff. Never add a class here to make a
// run pass without naming the defect it is and the seed that shows it.
//
// Families: "missed CHECK KIND" a logged misbehaviour its check did not
// catch; "unexplained CHECK" a check failed without a logged misbehaviour
// that maps to it (for the oracle's base policy: any failed check);
// "careful-unsafe CHECK careful" the careful agent failed a safety check;
// "outcome METRIC AGENT" recovered/honest_block disagrees with whether a
// path existed; "recoverability ..." trial.ProbePath disagrees with the
// oracle's own realized path.
var KnownOpen = map[string]string{
	"recoverability reference misses a path": "LIMIT OF A FIXED POLICY FAMILY: probability draws are keyed by attempt number, so how many attempts a policy spends on an earlier step decides which later attempts draw the fault; the base policy spent more on an optional-free stale step and drew exact data for the goal step where both reference policies drew stale to the retry limit (seed 90: stale p=0.7 on every inventory.lookup). Two policies cover most schedules (0 misses in 20,000 scenarios at seed 5000000); an exhaustive search over policies would cover all.",
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
