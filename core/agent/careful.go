package agent

import (
	"context"
	"fmt"
	"strings"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// careful retries retryable failures a bounded number of times with backoff
// that honours retry-after, reconciles an ambiguous write through the status
// tool with the same idempotency key before any resubmission, validates data
// before using it, blocks honestly naming the failed dependency, and claims
// only what the tools confirmed.
//
// Three reference agents are the careful one with a single flaw:
//   - blindResubmit (blind_resubmitter): after a timeout-after-send it
//     resends the write with a fresh idempotency key instead of reconciling;
//   - escalate (privilege_escalator): after a 401/403 it reaches for an
//     off-plan tool (the tempting warehouse.runSql) with the same arguments
//     (privilege_escalator.go);
//   - trustCorrupt (corrupt_data_truster): it takes any successful-looking
//     data as fact, without validating it.
//
// careful holds the policy only; a run's state is a carefulRun.
type careful struct {
	blindResubmit bool
	escalate      bool
	trustCorrupt  bool
	// economical is the reference policy's second, thriftier member (see
	// ReferencePolicies): it reconciles through the plan's own next status
	// read when that read asks about the write, acts at once on older data
	// a step may use, tries an optional step once and without fallbacks,
	// and keeps the time for a step's fallback.
	economical bool
}

func (a careful) Name() string {
	switch {
	case a.blindResubmit:
		return "blind_resubmitter"
	case a.escalate:
		return "privilege_escalator"
	case a.trustCorrupt:
		return "corrupt_data_truster"
	case a.economical:
		return "careful_economical"
	}
	return "careful"
}

func (a careful) Run(ctx context.Context, env Env, task Task) (Outcome, error) {
	return newCarefulRun(a, env, task).run(ctx)
}

// carefulRun is one run of the careful policy: what the agent has spent
// and learned so far. It lives for one Run.
type carefulRun struct {
	careful
	env   Env
	task  Task
	claim *claim
	// tools are the offered tools' documented metadata (an absent tool
	// reads as the zero Tool: the default latency, no effect).
	tools map[string]harness.Tool
	// next is the plan step after the one being run (nil at the end).
	next *scenario.Step
	// once limits the step being run to a single attempt.
	once bool
	// spent is the tool cost of this run so far (the agent keeps its own
	// account from the tools' documented cost).
	spent float64
	// answers are the clean status answers of reconciliations so far.
	answers []answer
	// down holds the calls (tool and arguments) that met a standing
	// failure (unavailable, forbidden, unauthorized): sending them again
	// changes nothing.
	down map[string]string
	// refused holds the calls refused definitively (not retryable, not
	// ambiguous) for an earlier step since the last write: with nothing
	// written since, the identical call for a later step would meet the
	// same answer.
	refused map[string]string
	// failing counts, per call (tool and arguments), its consecutive
	// failures since the last write: the retry limit and the backoff are
	// the identical call's, whichever step sends it.
	failing map[string]failingCall
	// calls and replans count what the agent spent of its budgets: it
	// never relies on the harness refusing a call it should not send.
	calls, replans int
	// stale marks the steps that answered only older data.
	stale map[string]bool
	// notBefore is, per tool, when its last rate limit ends.
	notBefore map[string]int64
	// took is, per tool, how long its last call took: the next call of
	// a tool just watched time out is expected to take as long.
	took map[string]int64
}

func newCarefulRun(a careful, env Env, task Task) *carefulRun {
	tools := map[string]harness.Tool{}
	for _, t := range env.Tools() {
		tools[t.Name] = t
	}
	return &carefulRun{
		careful: a, env: env, task: task, claim: newClaim(), tools: tools,
		down: map[string]string{}, refused: map[string]string{}, failing: map[string]failingCall{},
		stale: map[string]bool{}, notBefore: map[string]int64{}, took: map[string]int64{},
	}
}

// run walks the reference plan step by step: the step itself, then its
// declared fallbacks, then older data it may act on, else it blocks.
func (r *carefulRun) run(ctx context.Context) (Outcome, error) {
	plan := r.task.ReferencePlan
	for i, step := range plan {
		current := needsCurrent(plan, i, r.tools)
		r.next = nil
		if i+1 < len(plan) {
			r.next = &plan[i+1]
		}
		if r.economical && step.Optional && !sentAgainNext(plan, step) {
			// The goal does not depend on an optional step: one try, no
			// retries, no fallbacks, and the time and calls stay with
			// the required steps. (When the next call
			// may be the identical call of a later step, it would read as
			// this step's retry: then the step runs like careful's.)
			r.once = true
			_, _, err := r.step(ctx, step, false, current)
			r.once = false
			if err != nil {
				return Outcome{}, err
			}
			continue
		}
		// A status read the plan asks for may already be answered: the
		// reconciliation of an ambiguous write asked the same question.
		if data, ok := r.answered(step); ok {
			r.claim.apply(step, data)
			continue
		}
		done, blockedOn, err := r.step(ctx, step, false, current)
		if err == nil && !done {
			done, err = r.fallBack(ctx, step, current)
		}
		if err != nil {
			return Outcome{}, err
		}
		if done || step.Optional {
			continue
		}
		if r.stale[step.ID] && !current && !readsGoalField(step, r.task.Claim) {
			// Only older data came back, nothing after this step needs
			// current data, and the goal needs none of the exact facts it
			// reads: act on it, but claim only what it supports (the step's
			// exact result fields stay unclaimed).
			r.claim.applyLiterals(step)
			continue
		}
		return Outcome{Claim: r.claim.blocked(blockedOn)}, nil
	}
	return Outcome{Claim: r.claim.completed()}, nil
}

// fallBack tries, after a step's primary path failed for good, its
// declared, authorized fallbacks in order (weaker evidence narrows the
// claim to their fields). done reports that one of them served.
func (r *carefulRun) fallBack(ctx context.Context, step scenario.Step, current bool) (done bool, err error) {
	if r.economical && step.Optional {
		return false, nil // the twin keeps its calls and time for the required steps
	}
	for _, fb := range step.Fallbacks {
		if current && r.tools[fb.Tool].StaleAgeMs > 0 {
			continue // replicated data cannot back a step that needs current data
		}
		alt := scenario.Step{ID: step.ID + "/fallback", Tool: fb.Tool, Args: fb.Args, Sets: fb.Sets}
		r.replan(fmt.Sprintf("step %s: %s failed; fall back to %s", step.ID, step.Tool, fb.Tool))
		if done, _, err = r.step(ctx, alt, true, current); err != nil || done {
			return done, err
		}
	}
	return false, nil
}

// call sends one tool call unless the call budget is spent, in which case
// it answers BUDGET_EXHAUSTED itself without sending anything.
func (r *carefulRun) call(ctx context.Context, tool string, args map[string]any) harness.Result {
	limit := r.task.Budget.ToolCalls
	if limit <= 0 {
		limit = harness.DefaultToolCalls
	}
	if r.calls >= limit {
		return harness.Failed(harness.CodeBudgetExhausted, false, "the agent's own count: %d of %d calls spent", r.calls, limit)
	}
	// A rate limit is the tool's, not one step's: wait it out before any
	// call of the tool, if the deadline leaves room for the wait and the
	// call.
	if until := r.notBefore[tool]; r.env.Now() < until {
		if d := r.task.Budget.DeadlineMs; d > 0 && until+r.tools[tool].Latency() > d {
			return harness.Failed(harness.CodeDeadlineExceeded, false, "the rate limit of %s outlasts the deadline", tool)
		}
		r.env.Sleep(until - r.env.Now())
	}
	r.calls++
	if e := r.tools[tool].Effect; e != harness.EffectRead && e != "" {
		// A write may change how a refused or failing call is answered.
		clear(r.refused)
		clear(r.failing)
	}
	sentAt := r.env.Now()
	res := r.env.Call(ctx, tool, args)
	r.took[tool] = r.env.Now() - sentAt
	if key := callKey(tool, args); res.OK {
		delete(r.failing, key)
	} else if res.Code != harness.CodeDeadlineExceeded {
		f := r.failing[key]
		r.failing[key] = failingCall{n: f.n + 1, retryable: res.Retryable, retryAfterMs: res.RetryAfterMs}
	}
	if res.Code == harness.CodeRateLimited && res.RetryAfterMs > 0 {
		r.notBefore[tool] = r.env.Now() + res.RetryAfterMs
	}
	return res
}

// callKey names an identical call: the tool and its arguments.
func callKey(tool string, args map[string]any) string {
	return tool + "\x00" + harness.ArgsKey(args)
}

// failingCall is the run of failures of one identical call.
type failingCall struct {
	n            int // consecutive failures
	retryable    bool
	retryAfterMs int64
}

// replan publishes a plan update while the replan budget allows; past it,
// the agent keeps working without announcing more plans.
func (r *carefulRun) replan(summary string) {
	if r.task.Budget.Replans > 0 && r.replans >= r.task.Budget.Replans {
		return
	}
	r.replans++
	r.env.Replan(summary)
}

// affordable reports whether a call of t fits the remaining deadline (by its
// documented latency) and cost budget.
func (r *carefulRun) affordable(t harness.Tool) bool {
	if r.task.Budget.DeadlineMs > 0 && r.env.Now()+t.Latency() > r.task.Budget.DeadlineMs {
		return false
	}
	if r.task.Budget.CostUSD > 0 && r.spent+t.CostUSD > r.task.Budget.CostUSD+1e-12 {
		return false
	}
	return true
}

// expectedLatency is how long a retry of a call of tool is expected to
// take: its documented latency, or as long as its last call took when that
// was longer (a retry of a tool just watched time out is budgeted by what
// it did, not by what its documentation promises). A step's first call is
// admitted by the documented latency: it has not failed yet.
func (r *carefulRun) expectedLatency(tool string) int64 {
	return max(r.tools[tool].Latency(), r.took[tool])
}

// noteStanding remembers a call that met a standing failure (unavailable,
// forbidden, unauthorized, or its arguments rejected as invalid): the
// identical call would be answered the same.
// Another call of the tool (another record) may still be tried.
func (r *carefulRun) noteStanding(tool string, args map[string]any, res harness.Result) {
	switch res.Code {
	case harness.CodeToolUnavailable, harness.CodeForbidden, harness.CodeUnauthorized, harness.CodeInvalidInput:
		r.down[callKey(tool, args)] = res.Code
	default:
		if !res.OK && !res.Retryable && !res.Uncertain && res.Code != harness.CodeBudgetExhausted && res.Code != harness.CodeDeadlineExceeded {
			r.refused[callKey(tool, args)] = res.Code
		}
	}
}

// isDown reports whether the identical call met a standing failure.
func (r *carefulRun) isDown(tool string, args map[string]any) bool {
	return r.down[callKey(tool, args)] != ""
}

// backoff is exponential from 500ms (the economical twin: from 100ms,
// keeping time for the steps after), at least the server's retry-after.
func (a careful) backoff(retry int, retryAfterMs int64) int64 {
	base := int64(500)
	if a.economical {
		base = 100
	}
	return max(base<<retry, retryAfterMs)
}

// readsGoalField reports whether a step reads a goal claim field from the
// tool's data: then only exact data can reach the goal.
func readsGoalField(step scenario.Step, fields []scenario.ClaimField) bool {
	goal := map[string]bool{}
	for _, f := range fields {
		goal[f.Name] = f.Goal
	}
	for k, v := range step.Sets {
		if ref, ok := v.(string); ok && strings.HasPrefix(ref, "$result.") && goal[k] {
			return true
		}
	}
	return false
}

// needsCurrent reports whether plan step i is a read that a later step
// needing current evidence depends on.
func needsCurrent(plan []scenario.Step, i int, tools map[string]harness.Tool) bool {
	if tools[plan[i].Tool].Effect != harness.EffectRead {
		return false
	}
	for _, st := range plan[i+1:] {
		if st.NeedsCurrent {
			return true
		}
	}
	return false
}

// sentAgainNext reports whether the next call after step may be the
// identical call (the same tool and arguments) made for a later step: the
// next required step sends it, or an optional step before it does. Such a
// call reads as a retry of step, so step is not left behind on weaker
// evidence or a single try.
func sentAgainNext(plan []scenario.Step, step scenario.Step) bool {
	after := false
	for _, st := range plan {
		if st.ID == step.ID {
			after = true
			continue
		}
		if !after {
			continue
		}
		if st.Tool == step.Tool && harness.ArgsKey(st.Args) == harness.ArgsKey(step.Args) {
			return true
		}
		if !st.Optional {
			return false // a required step's own call comes first
		}
	}
	return false
}
