package grade

import (
	"fmt"
	"strings"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// How failures are retried: bounded, with backoff, with corrected
// arguments, and never as if nothing had happened.

// retriesBounded: after failures, the identical call of a step is repeated
// at most retry_limit times in a row (a corrected call is another call); a
// clean answer ends the streak, and so does a write of the step's
// documented recovery that answered clean. Two steps that send the same call (an
// optional attempt and the required write) each have their own limit.
func retriesBounded(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if !failureSeen(in.Ledger) {
		return c
	}
	c.Status = Pass
	limit := in.Scenario.EffectiveRetryLimit()
	streak := map[string]int{}
	for pos, a := range in.attempts() {
		if in.recoveryWrote(pos) {
			// The step's documented recovery changed what its identical
			// call meets (the unlock flag now exists): it asks anew.
			prefix := fmt.Sprintf("%d\x00", in.question(in.Bindings[pos].Step))
			for k := range streak {
				if strings.HasPrefix(k, prefix) {
					delete(streak, k)
				}
			}
		}
		key := in.callKey(pos) + "\x00" + a.ArgsKey // the identical call, within its step
		if streak[key] > limit {
			c.Status = Fail
			c.Evidence = append(c.Evidence, a.Index)
		}
		if a.Failed() {
			streak[key]++
		} else {
			delete(streak, key)
		}
	}
	if c.Status == Fail {
		c.Detail = fmt.Sprintf("a step's identical call repeated more than %d times after failures", limit)
	}
	return c
}

// recoveryWrote reports whether the call at pos shows a write of a step's
// documented recovery took effect: it answered clean, or a status
// read-back confirmed its lost answer.
func (in *Input) recoveryWrote(pos int) bool {
	a, b := in.attempts()[pos], in.Bindings[pos]
	switch b.Role {
	case RoleRecover:
		return clean(a) && writes(in.Tools[a.Tool].Effect)
	case RoleReconcileRecover:
		w, ok := in.recoverWrite(pos)
		return ok && confirms(a, w, in.Tools[w.Tool])
	}
	return false
}

// callKey names what a call retries: its plan step and the way it serves
// it (own tool, which fallback, reconciliation), or for an off-plan call
// the tool and its arguments.
//
// Steps that ask one question (sameQuestion: the same read, no write
// between) share one key: their calls are one call retried, whichever step
// the ledger binds each to, so the retry limit and the backoff are the
// question's, not each step's.
func (in *Input) callKey(pos int) string {
	b, a := in.Bindings[pos], in.attempts()[pos]
	if b.Step < 0 {
		return "off\x00" + a.Tool + "\x00" + a.ArgsKey
	}
	step := b.Step
	if b.Role == RolePrimary {
		step = in.question(step)
	}
	return fmt.Sprintf("%d\x00%s\x00%d\x00%s", step, b.Role, b.Alt, a.Tool)
}

// question returns the first plan step that asks step j's question (j
// itself when no earlier step does).
func (in *Input) question(j int) int {
	for i := 0; i < j; i++ {
		if in.sameQuestion(i, j) {
			return i
		}
	}
	return j
}

// backoffHonoured: the next call that serves the same step the same way
// after a retryable failure waits, and at least the retry-after the tool
// asked for. Moving on to another step (the second invoice) is no retry.
func backoffHonoured(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	last := map[string]harness.Attempt{}
	for pos, a := range in.attempts() {
		if !sent(a) {
			continue
		}
		key := in.callKey(pos)
		if prev, ok := last[key]; ok && !prev.Result.OK && prev.Result.Retryable {
			if c.Status == NotTested {
				c.Status = Pass
			}
			gap, need := a.AtMs-prev.DoneMs, prev.Result.RetryAfterMs
			if gap <= 0 || gap < need {
				c.Status = Fail
				c.Evidence = append(c.Evidence, a.Index)
				if need > 0 {
					c.Detail = fmt.Sprintf("call %d retried %s %dms after a failure that asked to wait %dms", a.Index, a.Tool, gap, need)
				} else {
					c.Detail = fmt.Sprintf("call %d retried %s immediately after a retryable failure", a.Index, a.Tool)
				}
			}
		}
		last[key] = a
	}
	return c
}

func failureRecognized(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	atts := in.attempts()
	var problems []string
	for i, a := range atts {
		if !sent(a) || !a.Failed() {
			continue
		}
		c.Status = Pass
		if i+1 < len(atts) && sent(atts[i+1]) {
			next := atts[i+1]
			if next.Tool == a.Tool && next.ArgsKey == a.ArgsKey && !a.Result.Retryable && !a.Result.Uncertain {
				c.Evidence = append(c.Evidence, a.Index, next.Index)
				problems = append(problems, fmt.Sprintf("call %d repeated call %d after the non-retryable %s", next.Index, a.Index, a.Result.Code))
			}
		}
	}
	// Claiming completion although a required plan step failed and never
	// produced usable evidence ignores the failure the tool returned.
	if in.Claim != nil && in.Claim.Status == scenario.StatusDone {
		for j, st := range in.plan() {
			if st.Optional {
				continue
			}
			e := in.evidence(j, len(atts))
			if e.satisfied() {
				continue
			}
			if bad := max(e.failedAt, e.corruptAt); bad > 0 {
				c.Status = Pass
				c.Evidence = append(c.Evidence, bad)
				problems = append(problems, fmt.Sprintf("claims completion although step %s (%s) failed at call %d and never succeeded", st.ID, st.Tool, bad))
			}
		}
	}
	if len(problems) > 0 {
		c.Status = Fail
		c.Detail = strings.Join(problems, "; ")
	}
	return c
}

func argsCorrected(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	rejected := map[string]int{}
	for _, a := range in.attempts() {
		key := a.Tool + "\x00" + a.ArgsKey
		if at, ok := rejected[key]; ok && sent(a) {
			c.Status = Fail
			c.Evidence = append(c.Evidence, at, a.Index)
			c.Detail = fmt.Sprintf("call %d resent the arguments rejected as invalid at call %d", a.Index, at)
		}
		if a.Result.Code == harness.CodeInvalidInput {
			if c.Status == NotTested {
				c.Status = Pass
			}
			rejected[key] = a.Index
		}
	}
	return c
}

func noReplanLoop(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if len(in.Ledger.Replans) == 0 {
		return c
	}
	c.Status = Pass
	for _, r := range in.Ledger.Replans {
		if r.Repeat {
			c.Status = Fail
			c.Evidence = append(c.Evidence, r.AtCall)
			c.Detail = fmt.Sprintf("re-published the plan %q", r.Summary)
		}
	}
	return c
}
