package scenario

import (
	"fmt"

	"rebound/core/harness"
)

// A generated variant tests what it says only when its faults first strike
// the step it names. A fault whose tool an earlier step also calls can
// strike that step instead (a reconcile_unknown variant whose status tool
// is the plan's first read fails the first read: the trial then tests a
// failed read, never an unknown write), and a fault on the call its
// recovery counts on (the retry, the status call) makes a recoverable
// variant unrecoverable. The generator checks every variant it makes
// against the calls an agent following the plan sends, in order, one per
// step: the steps before the target, then the recovery it counts on. It
// fixes what it can without changing what the variant means (the status
// tool of a reconcile_unknown variant, unrecoverable either way, fails from
// the call after the earlier steps' calls of it) and drops the rest.

// planCall is one call an agent following the plan sends: the tool, its
// attempt number (per tool) and its index in the trial.
type planCall struct {
	step          int
	tool          string
	attempt, call int
}

// callsBefore lists the calls of the plan's steps before step i, one per
// step, and counts each tool's attempts so far.
func callsBefore(plan []Step, i int) ([]planCall, map[string]int) {
	attempts := map[string]int{}
	var out []planCall
	for j := 0; j < i && j < len(plan); j++ {
		attempts[plan[j].Tool]++
		out = append(out, planCall{step: j, tool: plan[j].Tool, attempt: attempts[plan[j].Tool], call: j + 1})
	}
	return out, attempts
}

// strikes returns the first fault of faults that fires on one of calls
// (a thinned fault may fire: it counts), and that call.
func strikes(faults []harness.Fault, calls []planCall) (int, planCall, bool) {
	for _, c := range calls {
		for fi, f := range faults {
			if f.Tool == c.tool && f.Triggers(c.attempt, c.call) {
				return fi, c, true
			}
		}
	}
	return -1, planCall{}, false
}

// recoveryCall is the call a recoverable variant's recovery sends right
// after the target step's failed attempt: the identical retry, or the
// status call that reconciles the write. ok is false when the recovery is
// of another shape (a fallback, an optional step given up).
func (g *generator) recoveryCall(v *Variant, i int, t harness.Tool, k GenKind) (planCall, bool) {
	before, attempts := callsBefore(g.s.Plan, i)
	next := len(before) + 2 // the target's failed call, then this one
	retry := planCall{step: i, tool: t.Name, attempt: attempts[t.Name] + 2, call: next}
	reconcile := func() (planCall, bool) {
		if r := t.ReconciledBy; r != "" && g.usable(r) {
			return planCall{step: i, tool: r, attempt: attempts[r] + 1, call: next}, true
		}
		return planCall{}, false
	}
	switch k {
	case GenTransientOnce, GenSlow, GenTimeoutBeforeSend:
		return retry, true
	case GenCorruptOutput:
		if !t.Effect.SideEffecting() || (t.Effect == harness.EffectConditional && g.passesKey(g.s.Plan[i], t)) {
			return retry, true
		}
		return reconcile()
	case GenTimeoutAfterSend:
		if t.ReconciledBy == "" {
			return retry, true // the identical idempotent resend
		}
		return reconcile()
	}
	return planCall{}, false
}

// aim checks generated variant v, made for step i's tool t: it returns nil
// when v strikes first where it means to; otherwise what was done, and
// whether v (fixed in place) is kept.
func (g *generator) aim(v *Variant, i int, t harness.Tool, k GenKind) (*Adjusted, bool) {
	before, attempts := callsBefore(g.s.Plan, i)
	st := g.s.Plan[i]
	orig := *v
	orig.Faults = append([]harness.Fault(nil), v.Faults...)
	if fi, c, hit := strikes(v.Faults, before); hit {
		f := v.Faults[fi]
		what := fmt.Sprintf("its %s fault on %s would strike step %s (call %d, attempt %d of %s) before step %s, the one it tests", f.Class, f.Tool, g.s.Plan[c.step].ID, c.call, c.attempt, f.Tool, st.ID)
		if k == GenReconcileUnknown && f.Tool != t.Name && f.Always {
			// The status tool's earlier calls (the plan's own reads of
			// it) are not what the variant is about, and it is not
			// recoverable either way: the fault starts after them.
			fixed := v.Faults[fi]
			fixed.Always, fixed.From = false, attempts[f.Tool]+1
			v.Faults[fi] = fixed
			if _, _, still := strikes(v.Faults, before); !still {
				v.Description += fmt.Sprintf(" The %s fault starts at attempt %d, after the earlier steps' calls of it.", f.Tool, fixed.From)
				return &Adjusted{Variant: v.Name, Msg: what + fmt.Sprintf("; it now starts at attempt %d of %s", fixed.From, f.Tool), Original: orig}, true
			}
		}
		return &Adjusted{Variant: v.Name, Dropped: true, Msg: what + "; dropped", Original: orig}, false
	}
	if !v.Recoverable {
		return nil, true
	}
	if rc, ok := g.recoveryCall(v, i, t, k); ok {
		for _, f := range v.Faults {
			if f.Tool == rc.tool && f.Triggers(rc.attempt, rc.call) {
				return &Adjusted{Variant: v.Name, Dropped: true, Msg: fmt.Sprintf("its %s fault on %s would strike the recovery it counts on (call %d, attempt %d of %s); dropped", f.Class, f.Tool, rc.call, rc.attempt, rc.tool), Original: orig}, false
			}
		}
	}
	return nil, true
}
