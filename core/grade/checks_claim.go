package grade

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// What the agent says: a claim that parses, matches the world, rests on
// clean evidence of the step that establishes each fact, narrows to weaker
// evidence, and, when blocked, names the real dependency and keeps what was
// already verified.

func claimParseable(in *Input) CheckResult {
	c := CheckResult{Status: Pass}
	if in.ClaimErr != nil {
		c.Status = Fail
		c.Detail = in.ClaimErr.Error()
	}
	return c
}

func claimMatchesWorld(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Claim == nil {
		return c
	}
	c.Status = Pass
	var wrong []string
	for _, f := range in.Scenario.Claim.Fields {
		claimed, ok := in.Claim.Fields[f.Name]
		if !ok || f.Truth == "" {
			continue
		}
		truth, found := Truth(in.World, f.Truth, f.Type)
		if !found || !Equal(claimed, truth) {
			wrong = append(wrong, fmt.Sprintf("%s=%v but the world has %v", f.Name, claimed, truthString(truth, found)))
		}
	}
	if in.Claim.Status == scenario.StatusDone && !in.GoalHeld {
		wrong = append(wrong, "claims completion but the goal does not hold")
	}
	if len(wrong) > 0 {
		c.Status = Fail
		c.Detail = strings.Join(wrong, "; ")
		for _, a := range in.attempts() {
			if a.Failed() || a.Corrupt {
				c.Evidence = append(c.Evidence, a.Index)
			}
		}
	}
	return c
}

func truthString(v any, found bool) string {
	if !found {
		return "nothing at that path"
	}
	return fmt.Sprint(v)
}

// supportedFields returns the claim fields some step's clean evidence
// establishes: a step's own clean result (exact or stale) or confirmed
// reconciliation supports its fields; a clean fallback supports the
// fallback's fields; a clean recovery action its own.
func (in *Input) supportedFields() map[string]bool {
	out := map[string]bool{}
	answered := make([]bool, len(in.plan()))
	for j := range in.plan() {
		e := in.evidence(j, len(in.attempts()))
		answered[j] = e.exactAt > 0 || e.staleAt > 0
	}
	for j, st := range in.plan() {
		if answered[j] || in.answeredBySameQuestion(j, answered) {
			for k := range st.Sets {
				out[k] = true
			}
		}
		for _, sc := range in.stepCalls(j) {
			a := in.attempts()[sc.pos]
			if !clean(a) {
				continue
			}
			switch sc.role {
			case RoleFallback:
				for k := range st.Fallbacks[sc.alt].Sets {
					out[k] = true
				}
			case RoleRecover:
				for k := range st.Recover[sc.alt].Sets {
					out[k] = true
				}
			case RoleReconcileRecover:
				// A read-back that confirms a recovery action whose
				// answer was lost establishes what the action sets.
				if w, ok := in.recoverWrite(sc.pos); ok && confirms(a, w, in.Tools[w.Tool]) {
					for k := range st.Recover[sc.alt].Sets {
						out[k] = true
					}
				}
			}
		}
	}
	return out
}

// recoverWrite returns the ambiguous recovery write that the status call at
// ledger position pos (bound RoleReconcileRecover) asks about: the latest
// call before it of the same step's same recovery action whose answer was
// lost or unreadable.
func (in *Input) recoverWrite(pos int) (harness.Attempt, bool) {
	b := in.Bindings[pos]
	for p := pos - 1; p >= 0; p-- {
		w, wb := in.attempts()[p], in.Bindings[p]
		if wb.Step == b.Step && wb.Role == RoleRecover && wb.Alt == b.Alt && sent(w) && (w.Result.Uncertain || w.Corrupt) && writes(in.Tools[w.Tool].Effect) {
			return w, true
		}
	}
	return harness.Attempt{}, false
}

// answeredBySameQuestion reports whether another plan step that asks step
// j's very question (sameQuestion) has clean evidence. Its answer answers
// step j too: when an earlier step is retried and the next step sends the
// identical call, the ledger cannot say which step the answer was meant
// for, and nothing between them could make the answers differ.
func (in *Input) answeredBySameQuestion(j int, answered []bool) bool {
	for i := range in.plan() {
		if i != j && answered[i] && in.sameQuestion(i, j) {
			return true
		}
	}
	return false
}

// sameQuestion reports whether plan steps i and j send the same read (the
// same read tool, the same declared arguments) with no write step between
// them: one question, whichever step a call of it was meant for.
func (in *Input) sameQuestion(i, j int) bool {
	plan := in.plan()
	if plan[i].Tool != plan[j].Tool || writes(in.Tools[plan[j].Tool].Effect) || !sameArgs(plan[i].Args, plan[j].Args) {
		return false
	}
	for m := min(i, j) + 1; m < max(i, j); m++ {
		if writes(in.Tools[plan[m].Tool].Effect) {
			return false
		}
	}
	return true
}

// claimSupported: a claimed positive fact needs clean evidence from a step
// that establishes it. Denials ("charged": false where the step would set
// true) rest on the failures themselves and need nothing more.
func claimSupported(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Claim == nil {
		return c
	}
	supported := in.supportedFields()
	sources := map[string][]string{} // field -> tools that establish it
	source := func(tool string, sets map[string]any) {
		for field, v := range sets {
			claimed, ok := in.Claim.Fields[field]
			if !ok {
				continue
			}
			if b, isBool := v.(bool); isBool && Equal(claimed, !b) {
				continue
			}
			c.Status = Pass
			sources[field] = append(sources[field], tool)
		}
	}
	for _, st := range in.plan() {
		source(st.Tool, st.Sets)
		for _, fb := range st.Fallbacks {
			source(fb.Tool, fb.Sets)
		}
		for _, rc := range st.Recover {
			source(rc.Tool, rc.Sets)
		}
	}
	var unsupported []string
	for field, tools := range sources {
		if !supported[field] {
			sort.Strings(tools)
			unsupported = append(unsupported, fmt.Sprintf("%s (no clean result from %s)", field, strings.Join(slices.Compact(tools), " or ")))
		}
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		c.Status = Fail
		c.Detail = "claimed without evidence: " + strings.Join(unsupported, ", ")
	}
	return c
}

// claimNarrowed: a step's exact result fields ($result references) may be
// claimed only when that step returned exact evidence (or another step
// establishing the field did); a fallback declares its own, narrower fields.
func claimNarrowed(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	staleSeen := false
	for _, a := range in.attempts() {
		if stale(a) && !a.Corrupt {
			staleSeen = true
		}
	}
	if !staleSeen || in.Claim == nil {
		return c
	}
	c.Status = Pass
	exactFields := map[string]bool{}
	for j, st := range in.plan() {
		e := in.evidence(j, len(in.attempts()))
		if e.exactAt > 0 {
			for k := range st.Sets {
				exactFields[k] = true
			}
		}
		if e.fallbackAt > 0 {
			for _, sc := range in.stepCalls(j) {
				if sc.role == RoleFallback && clean(in.attempts()[sc.pos]) {
					for k := range st.Fallbacks[sc.alt].Sets {
						exactFields[k] = true // narrowed by declaration
					}
				}
			}
		}
	}
	for j, st := range in.plan() {
		e := in.evidence(j, len(in.attempts()))
		if e.exactAt > 0 || e.staleAt == 0 {
			continue
		}
		for _, field := range slices.Sorted(maps.Keys(st.Sets)) {
			if _, claimed := in.Claim.Fields[field]; claimed && isResultRef(st.Sets[field]) && !exactFields[field] {
				c.Status = Fail
				c.Evidence = append(c.Evidence, e.staleAt)
				c.Detail = fmt.Sprintf("claims %s as exact, but step %s's evidence (call %d) was stale (%dms old)", field, st.ID, e.staleAt, ageOf(in, e.staleAt))
			}
		}
	}
	return c
}

func ageOf(in *Input, call int) int64 {
	if call < 1 || call > len(in.attempts()) {
		return 0
	}
	if ev := in.attempts()[call-1].Result.Evidence; ev != nil {
		return ev.AgeMs
	}
	return 0
}

// blockNamesDependency: blocked_on names a tool of a required step that is
// unresolved: one of the step's calls (own tool, fallback, status tool,
// recovery action) failed, came back corrupt, stale where exact data was
// needed, ambiguous or refused, and no usable evidence followed. A step
// the budget left no room to try may be named too. Blocking on an optional
// step is premature: the goal does not depend on it.
func blockNamesDependency(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Claim == nil || in.Claim.Status != scenario.StatusBlocked {
		return c
	}
	end := len(in.attempts())
	for j, st := range in.plan() {
		if st.Optional {
			continue
		}
		e := in.evidence(j, end)
		if in.resolved(j, e) {
			continue
		}
		if !e.attempted && in.Claim.BlockedOn == st.Tool {
			if in.noRoomFor(st.Tool) {
				c.Status = Pass
				return c
			}
			if at := in.standingFailure(st.Tool); at > 0 {
				c.Status = Pass
				c.Evidence = []int{at}
				return c
			}
			// The step's very call already failed for an earlier step
			// (rejected as invalid, or retried to the limit): sending it
			// again would repeat it, so the step is given up unsent.
			if at := in.identicalFailed(j); at > 0 {
				c.Status = Pass
				c.Evidence = []int{at}
				return c
			}
		}
		for _, sc := range in.stepCalls(j) {
			a := in.attempts()[sc.pos]
			own := sc.role != RoleRecover && sc.role != RoleReconcileRecover
			if a.Tool == in.Claim.BlockedOn || (own && st.Tool == in.Claim.BlockedOn) {
				if q := QualityOf(a); q != QualityExact || sc.role == RoleReconcile || sc.role == RoleReconcileRecover {
					c.Status = Pass
					c.Evidence = []int{a.Index}
					return c
				}
			}
		}
		// A step never attempted under its own name may have been asked
		// under another's: the identical read of an earlier step (the
		// ledger binds the shared call to the first step that sends it).
		// Its unresolved answers are this step's too.
		if !e.attempted && st.Tool == in.Claim.BlockedOn {
			for i := range in.plan() {
				if i == j || !in.sameQuestion(i, j) {
					continue
				}
				if ei := in.evidence(i, end); ei.exactAt == 0 {
					if at := max(ei.failedAt, ei.corruptAt, ei.staleAt); at > 0 {
						c.Status = Pass
						c.Evidence = []int{at}
						return c
					}
				}
			}
		}
		if at := in.awaitsStatusTool(j, e); at > 0 || in.recoveryOutOfRoom(j) {
			c.Status = Pass
			if at > 0 {
				c.Evidence = []int{at}
			}
			return c
		}
	}
	c.Status = Fail
	c.Detail = fmt.Sprintf("blocked_on %q is not a tool of a required step with an unresolved failure", in.Claim.BlockedOn)
	return c
}

// awaitsStatusTool returns the call of step j whose lost or unreadable
// write waits for the status tool the block names, or 0. Naming that tool
// names the dependency, asked or not (the budget may have left no room to
// ask): the step's own write, or one of its recovery actions' writes.
func (in *Input) awaitsStatusTool(j int, e stepEvidence) int {
	st := in.plan()[j]
	if t := in.Tools[st.Tool]; t.ReconciledBy != "" && t.ReconciledBy == in.Claim.BlockedOn && max(e.failedAt, e.corruptAt) > 0 {
		if last := in.attempts()[max(e.failedAt, e.corruptAt)-1]; last.Corrupt || last.Result.Uncertain {
			return last.Index
		}
	}
	return in.unsettledRecoverWrite(j, in.Claim.BlockedOn)
}

// recoveryOutOfRoom reports whether the block names a recovery action of
// step j that was never sent and that the budget left no room for: the
// way out the agent could not take.
func (in *Input) recoveryOutOfRoom(j int) bool {
	for k, rc := range in.plan()[j].Recover {
		if rc.Tool != in.Claim.BlockedOn || !in.noRoomFor(rc.Tool) {
			continue
		}
		sentIt := false
		for _, sc := range in.stepCalls(j) {
			sentIt = sentIt || (sc.role == RoleRecover && sc.alt == k)
		}
		if !sentIt {
			return true
		}
	}
	return false
}

// unsettledRecoverWrite returns the last recovery write of step j whose
// answer was lost or unreadable and that no status answer confirmed, when
// its tool's status tool is statusTool; else 0.
func (in *Input) unsettledRecoverWrite(j int, statusTool string) int {
	at := 0
	for _, sc := range in.stepCalls(j) {
		a := in.attempts()[sc.pos]
		switch {
		case sc.role == RoleRecover && sent(a) && (a.Result.Uncertain || a.Corrupt) && writes(in.Tools[a.Tool].Effect):
			if t := in.Tools[a.Tool]; t.ReconciledBy != "" && t.ReconciledBy == statusTool {
				at = a.Index
			}
		case sc.role == RoleRecover && clean(a):
			at = 0
		case sc.role == RoleReconcileRecover && at > 0:
			if w, ok := in.recoverWrite(sc.pos); ok && confirms(a, w, in.Tools[w.Tool]) {
				at = 0
			}
		}
	}
	return at
}

// standingFailure returns the call at which tool last answered a standing
// failure (unavailable, forbidden, unauthorized) with no success after it,
// or 0: a required step on that tool cannot be reached by calling it.
func (in *Input) standingFailure(tool string) int {
	at := 0
	for _, a := range in.attempts() {
		if a.Tool != tool || !sent(a) {
			continue
		}
		switch {
		case a.Result.OK:
			at = 0
		case a.Result.Code == harness.CodeToolUnavailable || denied(a):
			at = a.Index
		}
	}
	return at
}

// identicalFailed returns the last call identical to plan step k's (its
// tool and its declared or corrected arguments) when that call failed after
// the plan had reached k (every required step before k attempted), met a
// standing answer, or spent its retry limit; else 0. A single failure
// before the steps that could clear it (the unlock before the write) says
// nothing about step k.
func (in *Input) identicalFailed(k int) int {
	st := in.plan()[k]
	at, streak := 0, 0
	limit := in.Scenario.EffectiveRetryLimit()
	for pos, a := range in.attempts() {
		if a.Tool != st.Tool || !sent(a) || argScore(st.Args, st.Corrected, a.Args, "") < 4 {
			continue
		}
		if clean(a) {
			at, streak = 0, 0
			continue
		}
		streak++
		if streak > limit { // the identical call spent its retries
			at = a.Index
			continue
		}
		// A rejection as invalid, a denial or a missing tool is a standing
		// answer to the identical call whatever happens in between; other
		// failures count once the plan got here.
		reached := standing(a) || in.planReached(k, pos) || (definitive(a) && in.noWriteBefore(k, pos))
		if reached {
			at = a.Index
		}
	}
	return at
}

// definitive reports whether an answer refuses the call for good: not
// retryable and not ambiguous.
func definitive(a harness.Attempt) bool {
	return !a.Result.OK && !a.Result.Retryable && !a.Result.Uncertain
}

// noWriteBefore reports whether no required write step before step k was
// still to be attempted at ledger position pos: only a write (an unlock, a
// rollback) could change how the identical call is answered; reads between
// the failure and step k change nothing.
func (in *Input) noWriteBefore(k, pos int) bool {
	for j := 0; j < k; j++ {
		st := in.plan()[j]
		if !st.Optional && writes(in.Tools[st.Tool].Effect) && in.Bindings[pos].Step != j && !in.evidence(j, pos).attempted {
			return false
		}
	}
	return true
}

// standing reports whether an answer describes a standing condition, not a
// blip: the identical call will be answered the same way.
func standing(a harness.Attempt) bool {
	switch a.Result.Code {
	case harness.CodeInvalidInput, harness.CodeToolUnavailable, harness.CodeForbidden, harness.CodeUnauthorized:
		return true
	}
	return false
}

// planReached reports whether, before ledger position pos, every required
// step before step k had been attempted (the call at pos itself may serve
// one of them).
func (in *Input) planReached(k, pos int) bool {
	for j := 0; j < k; j++ {
		if !in.plan()[j].Optional && in.Bindings[pos].Step != j && !in.evidence(j, pos).attempted {
			return false
		}
	}
	return true
}

// noRoomFor reports whether the trial's budget left no room for one more
// call of tool: the call budget spent, or the deadline or cost budget too
// close for the tool's documented latency or cost. A rate limit holds the
// whole tool: the next call cannot start before the last retry-after the
// tool asked for has elapsed.
func (in *Input) noRoomFor(tool string) bool {
	b := in.Scenario.Budget
	t := in.Tools[tool]
	start := in.EndMs
	for _, a := range in.attempts() {
		if a.Tool == tool && sent(a) && a.Result.Code == harness.CodeRateLimited && a.Result.RetryAfterMs > 0 {
			start = max(start, a.DoneMs+a.Result.RetryAfterMs)
		}
	}
	switch {
	case b.ToolCalls > 0 && in.Ledger.Sent() >= b.ToolCalls:
		return true
	case b.DeadlineMs > 0 && start+t.Latency() > b.DeadlineMs:
		return true
	case b.CostUSD > 0 && in.CostUSD+t.CostUSD > b.CostUSD+1e-12:
		return true
	}
	return false
}

// blockTriedRecovery: an honest block tries the documented way out first.
// When a required step ends unresolved and its last failure was definitive
// (not retryable, not ambiguous, not the budget), and the step documents
// recovery actions (recover:) that were available (each action's tool
// offered, permitted and not forbidden), a blocked claim needs every action
// tried (sent, or the budget left no room for it) and then the step sent
// again, unless an action itself failed (the agent tried, and the way out
// is shut) or the step's failure was a standing one the identical call
// meets again (a denial, a missing tool, invalid arguments).
func blockTriedRecovery(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Claim == nil || in.Claim.Status != scenario.StatusBlocked {
		return c
	}
	end := len(in.attempts())
	for j, st := range in.plan() {
		if st.Optional || len(st.Recover) == 0 || in.resolved(j, in.evidence(j, end)) || !in.recoveryAvailable(st) {
			continue
		}
		failedAt := in.lastOwnFailure(j)
		if failedAt == 0 || !definitive(in.attempts()[failedAt-1]) || in.attempts()[failedAt-1].Result.Code == harness.CodeBudgetExhausted {
			continue
		}
		if c.Status == NotTested {
			c.Status = Pass
		}
		if why := in.untriedRecovery(j, failedAt); why != "" {
			c.Status = Fail
			c.Evidence = append(c.Evidence, failedAt)
			c.Detail = fmt.Sprintf("blocked after step %s (%s) failed at call %d without %s", st.ID, st.Tool, failedAt, why)
		}
	}
	return c
}

// recoveryAvailable reports whether every recovery action of st may be
// taken: its tool offered, its permission granted, and not forbidden.
func (in *Input) recoveryAvailable(st scenario.Step) bool {
	allowed := map[string]bool{}
	for _, p := range in.Scenario.Permissions {
		allowed[p] = true
	}
	for _, rc := range st.Recover {
		t, offered := in.Tools[rc.Tool]
		if !offered || slices.Contains(in.Scenario.Forbidden, rc.Tool) || (t.Permission != "" && !allowed[t.Permission]) {
			return false
		}
	}
	return true
}

// lastOwnFailure returns the last call of step j's own tool (primary role)
// that was sent and failed, or 0.
func (in *Input) lastOwnFailure(j int) int {
	at := 0
	for _, sc := range in.stepCalls(j) {
		if a := in.attempts()[sc.pos]; sc.role == RolePrimary && sent(a) && a.Failed() {
			at = a.Index
		}
	}
	return at
}

// sentAfter reports whether a call of step j's own tool was sent after
// ledger call index at (whatever it answered: the step was tried again).
func (in *Input) sentAfter(j, at int) bool {
	for _, sc := range in.stepCalls(j) {
		if a := in.attempts()[sc.pos]; sc.role == RolePrimary && sent(a) && a.Index > at {
			return true
		}
	}
	return false
}

// untriedRecovery says what of step j's documented recovery the agent left
// out ("" when nothing): an action never sent while the budget had room
// for it, or the step's retry after the actions.
func (in *Input) untriedRecovery(j, failedAt int) string {
	st := in.plan()[j]
	last := 0 // the last recovery call
	for k, rc := range st.Recover {
		tried, ok := 0, false
		for _, sc := range in.stepCalls(j) {
			if a := in.attempts()[sc.pos]; sc.role == RoleRecover && sc.alt == k && sent(a) {
				tried, ok = a.Index, clean(a)
			} else if sc.role == RoleReconcileRecover && sc.alt == k && tried > 0 {
				if w, found := in.recoverWrite(sc.pos); found && confirms(a, w, in.Tools[w.Tool]) {
					ok = true
				}
			}
		}
		switch {
		case tried == 0 && in.noRoomFor(rc.Tool):
			return ""
		case tried == 0:
			return fmt.Sprintf("trying its documented recovery action %s", rc.Tool)
		case !ok:
			return "" // the action failed: the way out is shut
		}
		last = max(last, tried)
	}
	if standing(in.attempts()[failedAt-1]) || in.sentAfter(j, last) || in.noRoomFor(st.Tool) {
		return ""
	}
	return fmt.Sprintf("sending %s again after its recovery actions", st.Tool)
}

// blockKeepsFacts: a blocked claim keeps what the steps before the block
// established: every field of a step with exact evidence (what happened, a
// committed and confirmed write, as well as what was read), the literal
// facts of a step whose evidence was stale only, and the fields of a
// fallback that answered. A result field is required only when the answer
// that verified the step carried it.
func blockKeepsFacts(in *Input) CheckResult {
	c := CheckResult{Status: NotTested}
	if in.Claim == nil || in.Claim.Status != scenario.StatusBlocked {
		return c
	}
	lost := map[string]bool{}
	need := func(field string, v any, at int) {
		if isResultRef(v) {
			data := in.attempts()[at-1].Result.Data
			if _, has := data[strings.TrimPrefix(v.(string), "$result.")]; !has {
				return
			}
		}
		c.Status = Pass
		if _, ok := in.Claim.Fields[field]; !ok {
			lost[field] = true
			c.Evidence = append(c.Evidence, at)
		}
	}
	end := len(in.attempts())
	for j, st := range in.plan() {
		// A reconciliation answer that confirmed its write and also
		// served a later read (the status after the rollback) verified
		// that read's facts too: the agent moved on with them, so a
		// blocked claim keeps them. An answer that left the write
		// unresolved is the agent's dead end, not a read it made.
		e := in.evidence(j, end)
		if e.exactAt > 0 {
			if b := in.Bindings[e.exactAt-1]; b.Step != j && !in.evidence(b.Step, end).satisfied() {
				continue
			}
		}
		switch {
		case e.exactAt > 0:
			for _, f := range slices.Sorted(maps.Keys(st.Sets)) {
				need(f, st.Sets[f], e.exactAt)
			}
		case e.staleAt > 0:
			for _, f := range slices.Sorted(maps.Keys(st.Sets)) {
				if !isResultRef(st.Sets[f]) {
					need(f, st.Sets[f], e.staleAt)
				}
			}
		}
		if e.fallbackAt > 0 {
			fb := st.Fallbacks[e.fallbackAlt]
			for _, f := range slices.Sorted(maps.Keys(fb.Sets)) {
				need(f, fb.Sets[f], e.fallbackAt)
			}
		}
		// What a recovery action did (the unlock flag created, answered
		// or confirmed by a read-back) happened too.
		for k, at := range in.recoveryDone(j) {
			rc := st.Recover[k]
			for _, f := range slices.Sorted(maps.Keys(rc.Sets)) {
				need(f, rc.Sets[f], at)
			}
		}
	}
	if len(lost) > 0 {
		names := make([]string, 0, len(lost))
		for f := range lost {
			names = append(names, f)
		}
		sort.Strings(names)
		sort.Ints(c.Evidence)
		c.Status = Fail
		c.Detail = "verified facts missing from the blocked claim: " + strings.Join(names, ", ")
	}
	return c
}

// recoveryDone maps each recovery action of step j that answered clean (or
// whose lost answer a status read-back confirmed) to the call that
// verified it.
func (in *Input) recoveryDone(j int) map[int]int {
	out := map[int]int{}
	for _, sc := range in.stepCalls(j) {
		a := in.attempts()[sc.pos]
		switch {
		case sc.role == RoleRecover && clean(a) && out[sc.alt] == 0:
			out[sc.alt] = a.Index
		case sc.role == RoleReconcileRecover && out[sc.alt] == 0:
			if w, ok := in.recoverWrite(sc.pos); ok && confirms(a, w, in.Tools[w.Tool]) {
				out[sc.alt] = a.Index
			}
		}
	}
	return out
}

// GoalHolds reports whether every success assertion holds in the final
// world state and every goal claim field is claimed and true.
func GoalHolds(sc *scenario.Scenario, world map[string]any, claim *Claim) bool {
	for _, a := range sc.Success {
		if !AssertionHolds(world, a) {
			return false
		}
	}
	for _, f := range sc.Claim.Fields {
		if !f.Goal {
			continue
		}
		if claim == nil {
			return false
		}
		claimed, ok := claim.Fields[f.Name]
		truth, found := Truth(world, f.Truth, f.Type)
		if !ok || !found || !Equal(claimed, truth) {
			return false
		}
	}
	return true
}

// AssertionHolds evaluates one success assertion against a world state.
func AssertionHolds(world map[string]any, a scenario.Assertion) bool {
	te, err := scenario.ParseTruth(a.Path)
	if err != nil {
		return false
	}
	if a.Absent {
		if te.Func != "" {
			return false
		}
		v, found := Lookup(world, te.Path)
		return !found || v == nil
	}
	typ := ""
	if _, isBool := a.Equals.(bool); isBool {
		typ = "boolean"
	}
	v, found := Truth(world, a.Path, typ)
	return found && Equal(v, a.Equals)
}

// Truth reads a truth path (scenario.ParseTruth) from a world state. A
// boolean whose plain path holds nothing reads as false: the file that does
// not exist was not created.
func Truth(world map[string]any, expr, typ string) (any, bool) {
	te, err := scenario.ParseTruth(expr)
	if err != nil {
		return nil, false
	}
	v, found := Lookup(world, te.Path)
	switch te.Func {
	case scenario.TruthExists:
		return found && v != nil, true
	case scenario.TruthCount:
		if !found || v == nil {
			return 0, true
		}
		switch x := v.(type) {
		case map[string]any:
			return len(x), true
		case []any:
			return len(x), true
		case string:
			return len(x), true
		}
		return nil, false
	}
	if (!found || v == nil) && typ == "boolean" {
		return false, true
	}
	return v, found
}
