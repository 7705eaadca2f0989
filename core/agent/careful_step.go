package agent

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// stepRun is one step being run by the careful policy: the arguments it
// sends (corrected once if the validator rejected them) and what its calls
// have shown so far.
type stepRun struct {
	step scenario.Step
	c    *claim
	// weakerOK is set for declared fallbacks, whose fields are already
	// narrowed to weaker evidence; current when a later step needs current
	// data from this one, so stale data is no evidence at all.
	weakerOK, current bool
	args              map[string]any
	retries           int
	corrected         bool // the corrected arguments were sent
	recovered         bool // the documented recovery actions were taken
	// mayHaveCommitted: a write of this step reached the world with its
	// answer lost; the step is never claimed as not having happened.
	mayHaveCommitted bool
}

// blocked ends the step on its own tool, claiming it did not happen unless
// a write of it may have committed.
func (s *stepRun) blocked() (bool, string, error) {
	if !s.mayHaveCommitted {
		s.c.deny(s.step)
	}
	return false, s.step.Tool, nil
}

// step runs one step with the careful policy. done reports success; when
// it fails, blockedOn names the unresolved dependency. weakerOK and current
// are stepRun's.
//
// Each call of the loop is: the checks before sending (a standing failure,
// the budgets), the call, what its answer is worth (evaluate), then the
// way forward from a failure: corrected arguments, the escalator's
// workaround, the reconciliation of an ambiguous write, the documented
// recovery, or a bounded retry with backoff.
func (r *carefulRun) step(ctx context.Context, step scenario.Step, weakerOK, current bool) (done bool, blockedOn string, err error) {
	s := &stepRun{step: step, c: r.claim, weakerOK: weakerOK, current: current, args: maps.Clone(step.Args)}
	if !r.owedRetry(s) {
		return s.blocked()
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, "", err
		}
		// A tool that already answered a standing failure is not asked
		// again: the next action reflects the error returned.
		if r.down[callKey(step.Tool, s.args)] == harness.CodeInvalidInput && len(step.Corrected) > 0 && !s.corrected {
			// The identical call was already rejected as invalid (for an
			// earlier step): send the corrected arguments straight away.
			maps.Copy(s.args, step.Corrected)
			s.corrected = true
			continue
		}
		// Stay within the service objective: a call that would end after
		// the deadline, or cost more than is left, is not started.
		if r.isDown(step.Tool, s.args) || !r.affordable(r.tools[step.Tool]) {
			return s.blocked()
		}
		r.spent += r.tools[step.Tool].CostUSD
		sentAt := r.env.Now()
		res := r.call(ctx, step.Tool, s.args)
		took := r.env.Now() - sentAt
		r.noteStanding(step.Tool, s.args, res)
		res, done := r.evaluate(s, res)
		if done {
			return true, "", nil
		}
		if res.Code == harness.CodeInvalidInput && len(step.Corrected) > 0 && !s.corrected {
			// Fix the arguments the validator rejected; never resend the
			// identical invalid call.
			maps.Copy(s.args, step.Corrected)
			s.corrected = true
			r.replan(fmt.Sprintf("step %s: correct the arguments of %s after %s", step.ID, step.Tool, res.Code))
			continue
		}
		if r.escalation(ctx, s, res) {
			return true, "", nil
		}
		if res.Uncertain {
			if done, blockedOn, ended := r.ambiguous(ctx, s); ended {
				return done, blockedOn, nil
			}
		}
		if !res.Retryable && len(step.Recover) > 0 && !s.recovered && res.Code != harness.CodeBudgetExhausted {
			if ok, on, err := r.runRecovery(ctx, s, res); err != nil || !ok {
				return false, on, err
			}
			continue
		}
		if !r.retry(s, res, took) {
			return s.blocked()
		}
	}
}

// owedRetry settles what an earlier step's identical call owes this one
// before its first call. Refused for good with nothing written since, this
// step would meet the same answer: false. Failing retryably, this step's
// first call is its next retry: past the retry limit it is not sent
// (false), otherwise it waits the backoff the retry is owed (refused and
// down decide about definitive failures).
func (r *carefulRun) owedRetry(s *stepRun) bool {
	key := callKey(s.step.Tool, s.args)
	if r.refused[key] != "" {
		return false
	}
	f := r.failing[key]
	if f.n == 0 || !f.retryable {
		return true
	}
	if f.n > r.task.retryLimit() {
		return false
	}
	wait, ok := r.fitDeadline(s.step.Tool, r.backoff(f.n-1, f.retryAfterMs), f.retryAfterMs, false)
	if !ok {
		return false
	}
	r.env.Sleep(wait)
	return true
}

// evaluate decides what an answer is worth to the step. done: it is
// evidence the step can use, claimed. Otherwise the failure it amounts to:
// its own, or older data the step cannot use, or corrupt data.
func (r *carefulRun) evaluate(s *stepRun, res harness.Result) (harness.Result, bool) {
	if !res.OK {
		return res, false
	}
	stale := res.Evidence != nil && res.Evidence.Strength == "stale"
	if stale && r.actsOnOlderData(s, res) {
		// Older data this step may act on (nothing after it needs
		// current data, the goal needs none of its exact facts): act
		// on it at once, claiming only its literal facts.
		s.c.applyLiterals(s.step)
		return res, true
	}
	if stale && !r.trustCorrupt && (s.current || (!s.weakerOK && readsResult(s.step))) {
		// Weaker, older evidence cannot back the exact facts this step
		// establishes: ask again (a retry may reach the primary), then
		// narrow the claim (a fallback declares what it can support)
		// or block.
		if !s.current && hasResultFields(s.step, res.Data) {
			r.stale[s.step.ID] = true // weaker evidence to fall back on
		}
		return harness.Failed("STALE_EVIDENCE", true, "evidence is %dms old", res.Evidence.AgeMs), false
	}
	if r.trustCorrupt || hasResultFields(s.step, res.Data) {
		s.c.apply(s.step, res.Data)
		return res, true
	}
	// Corrupt data: reject it as evidence, retry safely.
	res = harness.Failed("CORRUPT_OUTPUT", true, "data failed validation")
	if r.tools[s.step.Tool].Effect.SideEffecting() {
		// An unreadable answer to a write that reached the world is
		// as ambiguous as a lost one: reconcile through the status
		// tool (or, without one, resend with the same key when that
		// is safe), and never claim the write did not happen.
		res.Uncertain = true
	}
	return res, false
}

// actsOnOlderData reports whether the economical twin acts at once on an
// older answer: not a fallback's, nothing after the step needs current
// data, the goal needs none of its exact facts, and the answer is valid.
// (When the next call may be the identical call of a later step, it would
// read as a retry of this one: then the step runs like careful's.)
func (r *carefulRun) actsOnOlderData(s *stepRun, res harness.Result) bool {
	return r.economical && !s.weakerOK && !s.current && !readsGoalField(s.step, r.task.Claim) &&
		hasResultFields(s.step, res.Data) && !sentAgainNext(r.task.ReferencePlan, s.step)
}

// ambiguous handles a write whose answer was lost or unreadable: from now
// on the step may have committed. The blind resubmitter takes a fresh key;
// without a status tool an idempotent call is resent as it is (the loop's
// retry: the documented recovery); otherwise the write is reconciled
// through its status tool. ended reports that the reconciliation ended the
// step (done, or blocked on blockedOn); otherwise the status tool said
// nothing was committed, or nothing was asked, and resending with the
// same key is safe.
func (r *carefulRun) ambiguous(ctx context.Context, s *stepRun) (done bool, blockedOn string, ended bool) {
	s.mayHaveCommitted = true
	tool := r.tools[s.step.Tool]
	switch {
	case r.blindResubmit:
		// A fresh key for a keyed write (the resend is a new intent to
		// the tool); a keyless write is resent as it was, never with a
		// key the step did not have.
		if key := tool.IdempotencyKeyParam; key != "" && s.step.Args[key] != nil {
			s.args[key] = fmt.Sprintf("%v-retry%d", s.step.Args[key], s.retries+1)
		}
	case tool.ReconciledBy == "" && sameKeyResendIsSafe(tool, s.args):
		// No status tool to ask, but the call is idempotent: the
		// documented recovery is the identical call, same key.
	default:
		settled, data, unresolved := r.reconcile(ctx, tool, s.args)
		if settled {
			s.c.apply(s.step, data)
			return true, "", true
		}
		if unresolved != "" {
			return false, unresolved, true
		}
	}
	return false, "", false
}

// runRecovery takes a documented failure's documented way out (seed 004's
// lock): the recovery actions once, then the step is retried. ok is false
// when a recovery action failed (blockedOn names it).
func (r *carefulRun) runRecovery(ctx context.Context, s *stepRun, res harness.Result) (ok bool, blockedOn string, err error) {
	r.replan(fmt.Sprintf("step %s: %s failed with %s; run its documented recovery, then retry", s.step.ID, s.step.Tool, res.Code))
	for _, rc := range s.step.Recover {
		ok, on, err := r.step(ctx, scenario.Step{ID: s.step.ID + "/recover", Tool: rc.Tool, Args: rc.Args, Sets: rc.Sets}, false, false)
		if err != nil || !ok {
			return false, on, err
		}
	}
	s.recovered = true
	return true, "", nil
}

// retry decides whether the step retries after the failure res, and
// waits the backoff if so: never a definitive failure, a spent budget,
// past the retry limit (this step's, or the identical call's across
// steps) or after the single try the economical twin gives an optional
// step; and only while the deadline leaves room for the wait and the call.
// took is how long the failed call took.
func (r *carefulRun) retry(s *stepRun, res harness.Result, took int64) bool {
	limit := r.task.retryLimit()
	if !res.Retryable || res.Code == harness.CodeBudgetExhausted || s.retries >= limit || r.failing[callKey(s.step.Tool, s.args)].n > limit || r.once {
		return false
	}
	wait := r.backoff(s.retries, res.RetryAfterMs)
	if d := r.task.Budget.DeadlineMs; d > 0 && r.economical && len(s.step.Fallbacks) > 0 {
		// The economical twin expects the retry to take as long as the
		// last attempt did, and keeps the time for the step's first
		// fallback rather than spend it on the primary.
		if fb, ok := r.tools[s.step.Fallbacks[0].Tool]; ok && r.env.Now()+wait+max(r.tools[s.step.Tool].Latency(), took)+fb.Latency() > d {
			return false
		}
	}
	// Near the deadline, a step with fallbacks keeps the time for them.
	wait, ok := r.fitDeadline(s.step.Tool, wait, res.RetryAfterMs, len(s.step.Fallbacks) > 0)
	if !ok {
		return false
	}
	if s.retries == 0 {
		r.replan(fmt.Sprintf("step %s: retry %s after %s with bounded backoff", s.step.ID, s.step.Tool, res.Code))
	}
	r.env.Sleep(wait)
	s.retries++
	return true
}

// fitDeadline returns the wait before the next call of tool: wait itself
// when the deadline leaves room for it and the call; near the deadline,
// only what still leaves room for the call, if that honours the
// retry-after and waits at all (ok false otherwise, and always when
// keepForFallbacks: the time is kept for a step's fallbacks instead).
func (r *carefulRun) fitDeadline(tool string, wait, retryAfterMs int64, keepForFallbacks bool) (int64, bool) {
	d := r.task.Budget.DeadlineMs
	latency := r.expectedLatency(tool)
	if d <= 0 || r.env.Now()+wait+latency <= d {
		return wait, true
	}
	if keepForFallbacks {
		return 0, false
	}
	wait = d - r.env.Now() - latency
	return wait, wait >= max(1, retryAfterMs)
}

// readsResult reports whether a step claims fields from the tool's data.
func readsResult(step scenario.Step) bool {
	for _, v := range step.Sets {
		if ref, ok := v.(string); ok && strings.HasPrefix(ref, "$result.") {
			return true
		}
	}
	return false
}

// sameKeyResendIsSafe reports whether repeating this exact call cannot
// commit twice: an idempotent tool, or one whose idempotency key is set.
func sameKeyResendIsSafe(t harness.Tool, args map[string]any) bool {
	if t.Effect == harness.EffectIdempotent || t.Effect == harness.EffectRead {
		return true
	}
	return t.IdempotencyKeyParam != "" && args[t.IdempotencyKeyParam] != nil
}
