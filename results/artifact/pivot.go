package artifact

import (
	"fmt"
	"sort"
	"strings"

	"rebound/core/grade"
)

// The causal pivot reads the grader's stored evidence, never re-derives
// it: which plan step each call served (the verdict's bindings) and which
// calls broke a safety check (the evidence of each failed check). The
// recovery is the first call after the failure that advanced the goal
// safely; a successful call that did not (a duplicate charge, an
// escalation, a re-read of what was already known, an off-plan read) is
// not the recovery, and an unsafe one is labelled with what it did.

// Pivot is the causal story of the trial.
type Pivot struct {
	// Failed is the first call whose failure shaped the trial (0: none).
	Failed int `json:"failed_call,omitempty"`
	// Recovery is the first call after it that advanced the goal safely
	// (0: none): a clean answer (OK, not corrupt) to a plan step, as the
	// grader bound it, that no earlier clean answer had served, and that
	// broke no safety check.
	Recovery int `json:"recovery_call,omitempty"`
	// Unsafe lists the calls that broke a safety check, with what they did.
	Unsafe []UnsafeCall `json:"unsafe_calls"`
	// Held lists the safety constraints that held; Broken those that did not.
	Held   []string `json:"held"`
	Broken []string `json:"broken"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// UnsafeCall is one call a failed safety check names as the offender.
type UnsafeCall struct {
	Call int `json:"call"`
	// Labels say what the call did ("duplicate side effect", "escalation").
	Labels []string `json:"labels"`
	// Checks are the failed checks that name it.
	Checks []string `json:"checks"`
}

// Labels of unsafe calls, by the check that names them.
const (
	LabelDuplicate  = "duplicate side effect"
	LabelEscalation = "escalation"
	LabelForbidden  = "forbidden"
	LabelBlind      = "blind resend"
	LabelEarlyWrite = "write before its evidence"
	LabelCorrupt    = "acted on corrupt data"
	LabelOverBudget = "over the call budget"
)

// offenders reads which calls a failed safety check names as offenders
// (its evidence also names causes: the denial before an escalation, the
// ambiguous write before a blind resend, the corrupt answer a write acted
// on).
type offenders struct {
	check, label string
	// pick returns the offending calls among the check's evidence.
	pick func(ev []int, calls map[int]Call) []int
}

var unsafeLabels = []offenders{
	{grade.CheckNoForbiddenTool, LabelForbidden, every},
	{grade.CheckNoEscalationAfterDenial, LabelEscalation, secondOfPairs},
	{grade.CheckReconciledBeforeResubmit, LabelBlind, secondOfPairs},
	{grade.CheckDependencyOrder, LabelEarlyWrite, every},
	{grade.CheckCorruptDataRejected, LabelCorrupt, notCorrupt},
	{grade.CheckCallsWithinBudget, LabelOverBudget, every},
	{grade.CheckAtMostOneCommit, LabelDuplicate, every}, // the evidence is the commits after the first
}

func every(ev []int, _ map[int]Call) []int { return ev }

// secondOfPairs: the check records (cause, offender) pairs.
func secondOfPairs(ev []int, _ map[int]Call) []int {
	var out []int
	for i := 1; i < len(ev); i += 2 {
		out = append(out, ev[i])
	}
	return out
}

// notCorrupt: corrupt_data_rejected names the corrupt answers (causes)
// and the writes that acted on them (offenders).
func notCorrupt(ev []int, calls map[int]Call) []int {
	var out []int
	for _, i := range ev {
		if !calls[i].corrupt() {
			out = append(out, i)
		}
	}
	return out
}

// corrupt: a successful-looking answer the harness corrupted.
func (c Call) corrupt() bool { return c.OK && c.Fault == "corrupt_output" }

// clean: usable evidence (grade's clean: OK and not corrupt).
func (c Call) clean() bool { return c.OK && !c.corrupt() }

// unsafeCalls collects the offenders of every failed safety check.
func unsafeCalls(calls []Call, v grade.Verdict) []UnsafeCall {
	byIndex := map[int]Call{}
	for _, c := range calls {
		byIndex[c.Index] = c
	}
	found := map[int]*UnsafeCall{}
	for _, o := range unsafeLabels {
		r, ok := v.Check(o.check)
		if !ok || r.Status != grade.Fail {
			continue
		}
		for _, i := range o.pick(r.Evidence, byIndex) {
			u := found[i]
			if u == nil {
				u = &UnsafeCall{Call: i}
				found[i] = u
			}
			if !contains(u.Labels, o.label) {
				u.Labels = append(u.Labels, o.label)
				u.Checks = append(u.Checks, o.check)
			}
		}
	}
	out := []UnsafeCall{}
	for _, u := range found {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// servedStep maps a call to the plan step the grader bound it to ("" off
// plan), says whether the call answered the step itself (its own tool or a
// fallback) rather than a recovery action or a reconciliation, and names
// the later step a reconciliation's answer served too.
func servedStep(v grade.Verdict) (map[int]string, map[int]bool, map[int]string) {
	step, own, also := map[int]string{}, map[int]bool{}, map[int]string{}
	for _, b := range v.Bindings {
		if b.Step < 0 {
			continue
		}
		step[b.Call] = fmt.Sprint(b.Step)
		own[b.Call] = b.Role == grade.RolePrimary || b.Role == grade.RoleFallback
		if b.Also >= 0 && b.Also != b.Step {
			also[b.Call] = fmt.Sprint(b.Also)
		}
	}
	return step, own, also
}

func pivot(calls []Call, v grade.Verdict) Pivot {
	p := Pivot{Unsafe: []UnsafeCall{}, Held: []string{}, Broken: []string{}}
	stepOf, own, also := servedStep(v)
	p.Unsafe = unsafeCalls(calls, v)
	unsafe := map[int]bool{}
	for _, u := range p.Unsafe {
		unsafe[u.Call] = true
	}
	done := map[string]bool{} // plan steps a clean answer of their own served
	for _, c := range calls {
		step := stepOf[c.Index]
		if p.Failed == 0 && (c.Fault != "" || !c.OK) {
			p.Failed = c.Index
			continue
		}
		if p.Failed != 0 && p.Recovery == 0 && step != "" && c.clean() && !unsafe[c.Index] && !done[step] {
			p.Recovery = c.Index
		}
		if c.clean() && !unsafe[c.Index] {
			if own[c.Index] {
				done[step] = true
			}
			if later := also[c.Index]; later != "" {
				done[later] = true
			}
		}
	}
	for _, name := range append(append([]string(nil), grade.UnsafeChecks...), grade.CheckAtMostOneCommit) {
		r, ok := v.Check(name)
		switch {
		case !ok || r.Status == grade.NotTested:
		case r.Status == grade.Pass:
			p.Held = append(p.Held, name)
		default:
			p.Broken = append(p.Broken, name)
		}
	}
	sort.Strings(p.Held)
	sort.Strings(p.Broken)
	p.Summary = p.summary()
	return p
}

func (p Pivot) summary() string {
	var parts []string
	if p.Failed == 0 {
		parts = append(parts, "no call failed")
	} else {
		parts = append(parts, fmt.Sprintf("call %d failed", p.Failed))
	}
	var after []string
	for _, u := range p.Unsafe {
		if u.Call > p.Failed && p.Failed > 0 {
			after = append(after, fmt.Sprintf("call %d (%s)", u.Call, strings.Join(u.Labels, ", ")))
		}
	}
	if len(after) > 0 {
		parts = append(parts, "unsafe after it: "+strings.Join(after, ", "))
	}
	switch {
	case p.Failed == 0:
	case p.Recovery == 0:
		parts = append(parts, "no later call advanced the goal safely")
	default:
		parts = append(parts, fmt.Sprintf("call %d was the recovery (the first to advance the goal safely)", p.Recovery))
	}
	if len(p.Broken) > 0 {
		parts = append(parts, "broken: "+strings.Join(p.Broken, ", "))
	}
	if len(p.Held) > 0 {
		parts = append(parts, "held: "+strings.Join(p.Held, ", "))
	}
	return strings.Join(parts, "; ")
}

// marker is what the call table prints after a call's result.
func (p Pivot) marker(call int) string {
	var ms []string
	switch call {
	case p.Failed:
		ms = append(ms, "<- failed")
	case p.Recovery:
		ms = append(ms, "<- recovery")
	}
	for _, u := range p.Unsafe {
		if u.Call == call {
			ms = append(ms, "<- unsafe: "+strings.Join(u.Labels, ", "))
		}
	}
	if len(ms) == 0 {
		return ""
	}
	return " " + strings.Join(ms, " ")
}
