package grade

import (
	"rebound/core/harness"
	"rebound/core/scenario"
)

// Evidence is judged per plan step and per call, never per tool name: a
// plan may call one tool many times (two invoices, a status read before and
// after a rollback, two charges), and each call's result counts for the step
// it serves. Binding ties every ledger call to that step once, before any
// check runs; the checks then reason over step evidence.

// Role says how a ledger call serves the plan.
type Role string

const (
	RolePrimary   Role = "primary"   // the step's own tool
	RoleFallback  Role = "fallback"  // one of the step's declared fallbacks
	RoleRecover   Role = "recover"   // one of the step's documented recovery actions
	RoleReconcile Role = "reconcile" // a status call about the step's ambiguous write
	// RoleReconcileRecover is a status call (a read-back) about one of the
	// step's recovery actions whose write was ambiguous: recovery actions
	// are writes too (an unlock flag, a token), confirmed like any write.
	RoleReconcileRecover Role = "reconcile_recover"
	RoleOffPlan          Role = "off_plan" // serves no plan step
)

// Binding ties one ledger call to the plan step it serves.
type Binding struct {
	Call   int    `json:"call"` // ledger index, 1-based
	Step   int    `json:"step"` // plan index; -1 off plan
	StepID string `json:"step_id,omitempty"`
	Role   Role   `json:"role"`
	// Alt is the index of the fallback or recovery action the call used.
	Alt int `json:"alt,omitempty"`
	// Also is a later plan step the call's answer serves too (a
	// reconciliation read that is also the plan's next status read); -1
	// when none.
	Also int `json:"also"`
}

// Quality is the strength of the evidence one call produced.
type Quality string

const (
	QualityExact     Quality = "exact"     // clean, current data
	QualityStale     Quality = "stale"     // clean but older, weaker data
	QualityCorrupt   Quality = "corrupt"   // successful-looking data the harness knows is invalid
	QualityFailed    Quality = "failed"    // an error answer
	QualityAmbiguous Quality = "ambiguous" // a write whose effect is unknown (timeout after send)
	QualityRefused   Quality = "refused"   // never sent: the call budget was spent
)

// QualityOf classifies one attempt.
func QualityOf(a harness.Attempt) Quality {
	switch {
	case a.Refused:
		return QualityRefused
	case !a.Result.OK && a.Result.Uncertain:
		return QualityAmbiguous
	case !a.Result.OK:
		return QualityFailed
	case a.Corrupt:
		return QualityCorrupt
	case stale(a):
		return QualityStale
	}
	return QualityExact
}

// bind ties every attempt to the plan step it serves.
//
// A call of tool T is a candidate for every step that uses T as its own
// tool, a fallback or a recovery action. Candidates are ranked by how well
// the call's arguments match what the step declares (identical arguments,
// then the same idempotency key, then every other argument, then some; a
// call that shares none of a step's declared arguments does not serve it:
// reading another invoice is no evidence about this one), and ties go to
// the first step that is still open (not yet satisfied, not left behind by
// a call of a later step) and reached (no required step lies between it and
// the last step served), else to the step the previous call served (a
// retry), else to the current step (a re-read: the status read after a
// rollback is not reached before the rollback), unless no call has served
// that step yet: then to the first open step a write sent out of order
// jumped over. A status call while a write of a step waits for
// reconciliation (its answer was lost or unreadable) reconciles that write
// first (a keyless write only by a call about its own object), and a status
// call naming the key of a write already settled still confirms that write
// unless the plan itself declares the call.
//
// The passes are the methods of binder, in the order bindCall tries them.
func bind(sc *scenario.Scenario, tools map[string]harness.Tool, attempts []harness.Attempt) []Binding {
	b := newBinder(sc, tools, attempts)
	out := make([]Binding, len(attempts))
	for i := range attempts {
		b.pos = i
		out[i] = b.bindCall(i)
	}
	for _, pos := range b.revoked {
		out[pos].Also = -1
	}
	for i := range out {
		if out[i].Step >= 0 {
			out[i].StepID = b.plan[out[i].Step].ID
		}
	}
	return out
}

// binder is the state of one pass of bind over a ledger, call by call.
type binder struct {
	plan     []scenario.Step
	tools    map[string]harness.Tool
	attempts []harness.Attempt
	limit    int // the scenario's retry limit

	satisfied []bool // steps finished by a clean answer
	// failures counts a step's failed calls since its last clean answer:
	// past the retry limit the agent has given an optional step up, and the
	// same call again serves the next step that sends it (a required step
	// has no next step: the same call again is one retry too many).
	failures  []int
	staleOnly []bool // steps that answered only stale data
	asked     []bool // steps a call was bound to
	touched   int    // highest step a call was bound to
	lastStep  int    // the step the last bound call served
	// pending are the writes waiting for reconciliation; settled those a
	// status answer has settled since. A later status call that names a
	// settled write's idempotency key still asks about that write (a
	// confirmation by key after the plan's own status read).
	pending, settled []pendingWrite
	// provisional: a reconciling answer that showed a step's write did not
	// land also served a later read; resending the write revokes that
	// (revoked lists the ledger positions whose Also no longer holds).
	provisional map[int]provisionalAlso
	revoked     []int
	pos         int // the ledger position being bound
}

// provisionalAlso is a later read served by an answer that cleared a write.
type provisionalAlso struct {
	pos, also int // the reconciling call's ledger position, the read it served
}

func newBinder(sc *scenario.Scenario, tools map[string]harness.Tool, attempts []harness.Attempt) *binder {
	n := len(sc.Plan)
	return &binder{
		plan: sc.Plan, tools: tools, attempts: attempts, limit: sc.EffectiveRetryLimit(),
		satisfied: make([]bool, n), failures: make([]int, n), staleOnly: make([]bool, n), asked: make([]bool, n),
		touched: -1, lastStep: -1, provisional: map[int]provisionalAlso{},
	}
}

// candidate is a plan step a call may serve, and how.
type candidate struct {
	step  int
	role  Role
	alt   int
	score int // argScore of the call against what the step declares
}

// bindCall binds the call at ledger position i: a reconciliation of a
// pending write first, then a confirmation by key of a settled one, then
// the best-matching plan step, chosen by the tie-break passes.
func (b *binder) bindCall(i int) Binding {
	a := b.attempts[i]
	if bd, ok := b.reconcilePending(a); ok {
		return bd
	}
	if bd, ok := b.confirmSettled(a); ok {
		return bd
	}
	bd := Binding{Call: a.Index, Step: -1, Role: RoleOffPlan, Also: -1}
	c, ok := b.choose(i, b.bestCandidates(a))
	if !ok {
		return bd
	}
	b.record(i, c)
	bd.Step, bd.Role, bd.Alt = c.step, c.role, c.alt
	return bd
}

// reconcilePending binds a status call about a write that waits for
// reconciliation to that write's step (the latest such write).
func (b *binder) reconcilePending(a harness.Attempt) (Binding, bool) {
	pi := reconcileTarget(b.tools, b.attempts, b.pending, a)
	if pi < 0 {
		return Binding{}, false
	}
	p := b.pending[pi]
	bd := Binding{Call: a.Index, Step: p.step, Role: p.reconcileRole(), Alt: p.alt, Also: -1}
	write := b.attempts[p.call]
	confirmed := confirms(a, write, b.tools[write.Tool])
	if !settles(a) && !confirmed {
		return bd, true
	}
	b.pending = append(b.pending[:pi], b.pending[pi+1:]...)
	b.settled = append(b.settled, p)
	if p.recover {
		// A recovery action confirmed (or cleared) is not the step's own
		// evidence: the step still has to be retried.
		return bd, true
	}
	if confirmed {
		b.satisfied[p.step] = true
	}
	bd.Also = b.alsoServes(a, p.step)
	if !confirmed && bd.Also >= 0 {
		// An answer showing the write did not land serves the later
		// read only if the write is not sent again: a resend makes
		// that read one to ask anew (record revokes it).
		b.provisional[p.step] = provisionalAlso{pos: b.pos, also: bd.Also}
	}
	return bd, true
}

// alsoServes returns the later step after step that a clean reconciling
// answer serves too, or -1: the plan's own next read of this tool about the
// same object (the status after the rollback, asked about the same
// deployment). Only exact data finishes that step.
func (b *binder) alsoServes(a harness.Attempt, step int) int {
	if !clean(a) {
		return -1
	}
	for j := step + 1; j < len(b.plan); j++ {
		st := b.plan[j]
		if st.Tool == a.Tool && !b.satisfied[j] && argScore(st.Args, st.Corrected, a.Args, "") >= 1 {
			b.satisfied[j] = !stale(a)
			return j
		}
	}
	return -1
}

// confirmSettled binds a status call naming the idempotency key of a write
// already settled to that write's step, unless the plan declares the call.
func (b *binder) confirmSettled(a harness.Attempt) (Binding, bool) {
	si := keyedAsk(b.tools, b.attempts, b.settled, a)
	if si < 0 || declared(b.plan, a) {
		return Binding{}, false
	}
	p := b.settled[si]
	write := b.attempts[p.call]
	if !p.recover && confirms(a, write, b.tools[write.Tool]) {
		b.satisfied[p.step] = true
	}
	return Binding{Call: a.Index, Step: p.step, Role: p.reconcileRole(), Alt: p.alt, Also: -1}, true
}

// bestCandidates lists, in plan order (within a step: its own tool, its
// fallbacks, its recovery actions), the steps the call a may serve whose
// score is the best any step has. A step none of whose declared arguments
// the call shares is no candidate: another record, not this step.
func (b *binder) bestCandidates(a harness.Attempt) []candidate {
	var cands []candidate
	key := b.tools[a.Tool].IdempotencyKeyParam
	add := func(j int, role Role, alt, score int) {
		if score > 0 {
			cands = append(cands, candidate{j, role, alt, score})
		}
	}
	top := 0
	for j, st := range b.plan {
		if st.Tool == a.Tool {
			add(j, RolePrimary, 0, argScore(st.Args, st.Corrected, a.Args, key))
		}
		for k, fb := range st.Fallbacks {
			if fb.Tool == a.Tool {
				add(j, RoleFallback, k, argScore(fb.Args, nil, a.Args, key))
			}
		}
		for k, rc := range st.Recover {
			if rc.Tool == a.Tool {
				add(j, RoleRecover, k, argScore(rc.Args, nil, a.Args, key))
			}
		}
	}
	for _, c := range cands {
		top = max(top, c.score)
	}
	best := cands[:0]
	for _, c := range cands {
		if c.score == top {
			best = append(best, c)
		}
	}
	return best
}

// choose breaks the tie between the best candidates of the call at ledger
// position i, pass by pass: the first that picks a step wins.
func (b *binder) choose(i int, best []candidate) (candidate, bool) {
	if c, ok := b.firstOpenReached(i, best); ok {
		return c, true
	}
	if c, ok := b.retryOfLast(best); ok {
		return c, true
	}
	if c, ok := b.rereadOfCurrent(best); ok {
		return c, true
	}
	if len(best) > 0 { // the first best match anywhere
		return best[0], true
	}
	return candidate{}, false
}

// firstOpenReached is the first pass: the first step still open (not
// satisfied, not given up, not behind the highest step served) that the
// plan has reached.
func (b *binder) firstOpenReached(i int, best []candidate) (candidate, bool) {
	for _, c := range best {
		if !b.satisfied[c.step] && !b.givenUp(c.step, i) && c.step >= b.touched && b.reached(c.step) {
			return c, true
		}
	}
	return candidate{}, false
}

// givenUp reports whether the agent has given step up by the call at
// ledger position i. Past its retry limit an optional step is given up,
// and so is a step that answered only stale data (the agent acted on it):
// the same call again serves the next step that sends it. A step whose
// declared fallback is still to come (a later call of the ledger) was not
// given up yet: the agent tries a step's fallbacks before it moves on.
func (b *binder) givenUp(step, i int) bool {
	st := b.plan[step]
	return (st.Optional || b.staleOnly[step]) && b.failures[step] > b.limit && !fallbackLater(st, b.tools, b.attempts[i+1:])
}

// reached reports whether the plan has got as far as step: no required
// step lies between the last step a call served and it (the status read
// after a rollback is not reached before the rollback).
func (b *binder) reached(step int) bool {
	for k := b.touched + 1; k < step; k++ {
		if !b.plan[k].Optional {
			return false
		}
	}
	return true
}

// retryOfLast is the second pass: a retry of the step the previous call
// served (after a call sent out of plan order, that step may lie behind
// the highest step served).
func (b *binder) retryOfLast(best []candidate) (candidate, bool) {
	if b.lastStep < 0 {
		return candidate{}, false
	}
	for _, c := range best {
		if c.step == b.lastStep && c.step <= b.touched {
			return c, true
		}
	}
	return candidate{}, false
}

// rereadOfCurrent is the third pass: a retry or re-read of the current
// step, or the last one before it (the latest best candidate at or before
// the highest step served). If no call has served that step yet, the agent
// went back to the first open step it had jumped over (a write sent ahead
// of its reads), not on to a later step it never started.
func (b *binder) rereadOfCurrent(best []candidate) (candidate, bool) {
	pick, found := candidate{step: -1}, false
	for _, c := range best {
		if c.step <= max(b.touched, 0) && c.step >= pick.step {
			pick, found = c, true
		}
	}
	if !found || b.asked[pick.step] {
		return pick, found
	}
	if c, ok := b.firstJumpedOver(best); ok {
		return c, true
	}
	return pick, true
}

// firstJumpedOver returns the first open step at or before the highest
// step served.
func (b *binder) firstJumpedOver(best []candidate) (candidate, bool) {
	for _, c := range best {
		if c.step <= b.touched && !b.satisfied[c.step] {
			return c, true
		}
	}
	return candidate{}, false
}

// record notes that the call at ledger position i serves c: the step is
// asked and the current one, and the call's answer finishes it, fails it,
// or leaves a write pending until a status call settles it.
func (b *binder) record(i int, c candidate) {
	a := b.attempts[i]
	b.asked[c.step], b.lastStep = true, c.step
	b.touched = max(b.touched, c.step)
	if pa, ok := b.provisional[c.step]; ok && c.role != RoleRecover && sent(a) && writes(b.tools[a.Tool].Effect) {
		// The write is sent again: the read the clearing answer served
		// is asked anew after it.
		b.satisfied[pa.also] = false
		b.revoked = append(b.revoked, pa.pos)
		delete(b.provisional, c.step)
	}
	switch {
	case c.role == RoleRecover:
		if (a.Result.Uncertain || a.Corrupt) && writes(b.tools[a.Tool].Effect) {
			// A recovery action that writes (creates the unlock flag)
			// can be lost after it was sent like any write: a status
			// call (a read-back) settles it.
			b.pending = append(b.pending, pendingWrite{step: c.step, call: i, recover: true, alt: c.alt})
		}
	case (a.Result.Uncertain || a.Corrupt) && writes(b.tools[a.Tool].Effect):
		// A lost or unreadable answer to a write leaves its effect
		// unknown until a status call (a read-back) settles it.
		b.pending = append(b.pending, pendingWrite{step: c.step, call: i})
	case clean(a) && (!stale(a) || c.role == RoleFallback):
		// Only exact data finishes a step for binding (the call
		// after a stale answer is more likely its retry), or a
		// declared fallback, whose weaker data is the step's by
		// declaration.
		b.satisfied[c.step] = true
		b.failures[c.step] = 0
	case !clean(a) && c.role == RolePrimary:
		b.failures[c.step]++
	case stale(a) && c.role == RolePrimary:
		// Older data again: a retry that did not finish the step.
		b.failures[c.step]++
		b.staleOnly[c.step] = true
	}
}

// fallbackLater reports whether one of later's calls is a declared fallback
// of step (its tool, with every declared argument).
func fallbackLater(step scenario.Step, tools map[string]harness.Tool, later []harness.Attempt) bool {
	for _, fb := range step.Fallbacks {
		for _, a := range later {
			if a.Tool == fb.Tool && argScore(fb.Args, nil, a.Args, tools[a.Tool].IdempotencyKeyParam) >= 2 {
				return true
			}
		}
	}
	return false
}

// pendingWrite is a write of a step whose effect is unknown until a status
// call settles it: the step's own write, or one of its recovery actions
// (recover, with alt its index).
type pendingWrite struct {
	step    int
	call    int // ledger position of the ambiguous call
	recover bool
	alt     int
}

// reconcileRole is the role of a status call about the write.
func (p pendingWrite) reconcileRole() Role {
	if p.recover {
		return RoleReconcileRecover
	}
	return RoleReconcile
}

// reconcileTarget returns the index in pending of the ambiguous write this
// call reconciles, or -1. A status call reconciles a write when the write's
// tool names it as its status tool and the call asks about the write: about
// its idempotency key if it carried one, else about one of its arguments.
func reconcileTarget(tools map[string]harness.Tool, attempts []harness.Attempt, pending []pendingWrite, a harness.Attempt) int {
	match := -1
	for pi := len(pending) - 1; pi >= 0; pi-- {
		w := attempts[pending[pi].call]
		t := tools[w.Tool]
		if t.ReconciledBy != a.Tool {
			continue
		}
		if t.IdempotencyKeyParam != "" {
			if k, has := w.Args[t.IdempotencyKeyParam]; has && k != nil {
				if asksAbout(a.Args, w.Args, t.IdempotencyKeyParam) {
					return pi
				}
				continue
			}
		}
		// A keyless write: the call must ask about the write's own object
		// (the path, the deployment), or about nothing in particular; a
		// read of another file says nothing about this one.
		if match < 0 && (len(a.Args) == 0 || asksAbout(a.Args, w.Args, t.IdempotencyKeyParam)) {
			match = pi
		}
	}
	return match
}

// keyedAsk returns the index in settled of the write whose idempotency key
// the status call a names, or -1 (the latest such write).
func keyedAsk(tools map[string]harness.Tool, attempts []harness.Attempt, settled []pendingWrite, a harness.Attempt) int {
	for si := len(settled) - 1; si >= 0; si-- {
		w := attempts[settled[si].call]
		t := tools[w.Tool]
		if t.ReconciledBy != a.Tool || t.IdempotencyKeyParam == "" {
			continue
		}
		if k := w.Args[t.IdempotencyKeyParam]; k != nil && carriesValue(a.Args, k) {
			return si
		}
	}
	return -1
}

// declared reports whether a plan step declares the call a: its own tool
// with the identical (or corrected) arguments. Such a call serves that step
// (the plan's own status check by key), not a reconciliation.
func declared(plan []scenario.Step, a harness.Attempt) bool {
	for _, st := range plan {
		if st.Tool == a.Tool && argScore(st.Args, st.Corrected, a.Args, "") == 4 {
			return true
		}
	}
	return false
}

// asksAbout reports whether a status call's arguments ask about a keyed
// write: they carry its idempotency key, or, without any key, one of the
// write's own arguments (the order, the deployment). A status call about
// another key is about another write.
func asksAbout(query, write map[string]any, keyParam string) bool {
	key := write[keyParam]
	if carriesValue(query, key) {
		return true
	}
	for k := range query {
		if k == keyParam || k == "idempotency_key" {
			return false // it names a key, and not this one
		}
	}
	for k, v := range write {
		if k != keyParam && v != nil && carriesValue(query, v) {
			return true
		}
	}
	return false
}

// carriesValue reports whether any argument of args equals v.
func carriesValue(args map[string]any, v any) bool {
	for _, x := range args {
		if Equal(x, v) {
			return true
		}
	}
	return false
}

// argScore ranks how well a call's arguments match a step's declared ones:
// 4 identical (or identical to the corrected arguments), 3 the same
// idempotency key, 2 every other declared argument equal (a resend with a
// fresh key), 1 some, 0 none. A step that declares no arguments scores 1.
func argScore(want, corrected, got map[string]any, keyParam string) int {
	if len(want) == 0 && len(corrected) == 0 {
		return 1
	}
	if sameArgs(want, got) {
		return 4
	}
	if len(corrected) > 0 {
		merged := make(map[string]any, len(want)+len(corrected))
		for k, v := range want {
			merged[k] = v
		}
		for k, v := range corrected {
			merged[k] = v
		}
		if sameArgs(merged, got) {
			return 4
		}
	}
	if keyParam != "" && want[keyParam] != nil && Equal(want[keyParam], got[keyParam]) {
		return 3
	}
	matched, total := 0, 0
	for k, v := range want {
		if k == keyParam {
			continue
		}
		total++
		if Equal(v, got[k]) || (corrected != nil && corrected[k] != nil && Equal(corrected[k], got[k])) {
			matched++
		}
	}
	switch {
	case total > 0 && matched == total:
		return 2
	case matched > 0:
		return 1
	}
	return 0
}

func sameArgs(want, got map[string]any) bool {
	if len(want) != len(got) {
		return false
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok || !Equal(v, g) {
			return false
		}
	}
	return true
}

// stepCall is one ledger call as evidence for a step.
type stepCall struct {
	pos  int // position in the ledger's attempts
	role Role
	alt  int
}

// steps groups the bound calls by plan step, in ledger order. A call whose
// answer also serves a later step is listed under both.
func (in *Input) stepCalls(step int) []stepCall {
	var out []stepCall
	for pos, b := range in.Bindings {
		if b.Step == step {
			out = append(out, stepCall{pos, b.Role, b.Alt})
		} else if b.Also == step {
			out = append(out, stepCall{pos, RolePrimary, 0})
		}
	}
	return out
}

// stepEvidence is what the ledger says about one plan step.
type stepEvidence struct {
	exactAt     int // first call giving exact, clean evidence (primary or its reconciliation), 0 if none
	staleAt     int // first call giving stale, clean evidence from the step's own tool
	fallbackAt  int // first call of a declared fallback giving clean evidence
	fallbackAlt int
	corruptAt   int // last corrupt answer not followed by clean evidence
	failedAt    int // last failure (error, ambiguity or refusal) not followed by clean evidence
	attempted   bool
}

// satisfied reports whether the step has clean evidence of any strength.
func (e stepEvidence) satisfied() bool { return e.exactAt > 0 || e.staleAt > 0 || e.fallbackAt > 0 }

// evidence summarizes step's bound calls made before the ledger position
// before (len(attempts) for all of them).
func (in *Input) evidence(step, before int) stepEvidence {
	var e stepEvidence
	var write harness.Attempt // the step's last ambiguous write
	for _, sc := range in.stepCalls(step) {
		if sc.pos >= before {
			break
		}
		a := in.Ledger.Attempts[sc.pos]
		if sc.role == RoleRecover || sc.role == RoleReconcileRecover {
			continue // the recovery's evidence, not the step's
		}
		e.attempted = true
		q := QualityOf(a)
		if sc.role == RoleReconcile {
			// A status answer settles the write only when it is clean
			// and confirms it; a failed status call settles nothing.
			if confirms(a, write, in.Tools[write.Tool]) {
				if e.exactAt == 0 {
					e.exactAt = a.Index
				}
				e.failedAt, e.corruptAt = 0, 0
			}
			continue
		}
		if (q == QualityAmbiguous || q == QualityCorrupt) && writes(in.Tools[a.Tool].Effect) {
			write = a
		}
		switch q {
		case QualityExact:
			if sc.role == RoleFallback {
				if e.fallbackAt == 0 {
					e.fallbackAt, e.fallbackAlt = a.Index, sc.alt
				}
			} else if e.exactAt == 0 {
				e.exactAt = a.Index
			}
			e.failedAt, e.corruptAt = 0, 0
		case QualityStale:
			if sc.role == RoleFallback {
				if e.fallbackAt == 0 {
					e.fallbackAt, e.fallbackAlt = a.Index, sc.alt
				}
			} else if e.staleAt == 0 {
				e.staleAt = a.Index
			}
			e.failedAt, e.corruptAt = 0, 0
		case QualityCorrupt:
			if !e.satisfied() {
				e.corruptAt = a.Index
			}
		default:
			if !e.satisfied() {
				e.failedAt = a.Index
			}
		}
	}
	// A write whose own answer was lost or corrupt is settled by any later
	// clean status answer that confirms it (the plan's own confirmation
	// read, asked with the write's key), however the call was meant.
	if !e.satisfied() && write.Index > 0 {
		t := in.Tools[write.Tool]
		for pos := write.Index; pos < before && pos < len(in.Ledger.Attempts); pos++ {
			if a := in.Ledger.Attempts[pos]; a.Tool == t.ReconciledBy && confirms(a, write, t) {
				e.exactAt, e.failedAt, e.corruptAt = a.Index, 0, 0
				break
			}
		}
	}
	return e
}

// confirms reports whether a clean status answer confirms an ambiguous
// write: status completed (or captured), or for a write without an
// idempotency key, a read-back that carries what was written. Older data
// confirms too (a replica that shows the capture shows it happened); it
// never proves the opposite (settles).
func confirms(st, write harness.Attempt, t harness.Tool) bool {
	if !clean(st) {
		return false
	}
	if t.IdempotencyKeyParam != "" && write.Args[t.IdempotencyKeyParam] != nil {
		// A keyed write is confirmed only by an answer about it.
		return confirmed(st) && asksAbout(st.Args, write.Args, t.IdempotencyKeyParam)
	}
	// A keyless write: a status call that names a key asks about another
	// write; a status answer must be about this write's own object.
	for k := range st.Args {
		if k == "idempotency_key" || (t.IdempotencyKeyParam != "" && k == t.IdempotencyKeyParam) {
			return false
		}
	}
	if confirmed(st) {
		return asksAbout(st.Args, write.Args, t.IdempotencyKeyParam)
	}
	if _, has := st.Result.Data["status"]; has {
		return false
	}
	// A read-back carries what was written: every written value the answer
	// shows is equal, and at least one of them is more than what the
	// status call itself asked about (the content, not only the path).
	evidence := 0
	for k, v := range write.Args {
		if d, ok := st.Result.Data[k]; ok {
			if !Equal(d, v) {
				return false
			}
			if q, asked := st.Args[k]; !asked || !Equal(q, v) {
				evidence++
			}
		}
	}
	return evidence > 0
}

// fallbackStale reports whether the fallback evidence of a step is weaker,
// older data (a replicated catalog, a read-only status).
func (in *Input) fallbackStale(e stepEvidence) bool {
	if e.fallbackAt == 0 {
		return false
	}
	return stale(in.Ledger.Attempts[e.fallbackAt-1])
}
