package scenario

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
)

// Variant generation from tool metadata.
//
// For every tool on the reference plan, Generate derives the fault variants
// the seed guide asks for (permanent failure, one transient failure, transient
// until the budget is spent, malformed output, latency beyond the deadline;
// for side-effecting tools also a timeout before and after the request was
// sent), and decides from the metadata and the plan whether an authorized
// path to the goal still exists. Because every plan step gets its variants,
// faults land before the evidence, during the side effect and after it.
//
// Names are stable: gen/TOOL/KIND, or gen/TOOL@STEP/KIND when the tool is
// used by more than one step. Generation is a pure function of the scenario
// and the catalog.
//
// Recoverability rules (Variant.Recoverable, with the reason in
// Variant.Generated.Reason):
//
//   - usable(tool): offered by the scenario, not forbidden, in the catalog,
//     and its permission (if any) is granted. If a required step's tool is not
//     usable and it has no usable fallback, nothing is recoverable.
//   - The minimal path calls every required (non-optional) step once; a
//     variant adds what its recovery needs (a retry, a reconciliation call, a
//     fallback call). It must fit the budget (tool_calls, deadline_ms, with
//     latencies and deadlines from the metadata, and cost_usd), else the
//     variant is not recoverable.
//   - An optional step's failure leaves the goal reachable: recoverable.
//   - permanent: forbidden when the tool needs a permission, else
//     unavailable; fires always. Recoverable only through a usable fallback.
//     A denied permission also denies fallbacks that need the same
//     permission: they get the forbidden fault too and do not count.
//   - transient_once (transient at the step's first attempt): recoverable
//     (bounded retry; nothing reached the world).
//   - transient_budget (transient always, until the budget is spent): not
//     recoverable, unless a usable fallback exists.
//   - corrupt_output (malformed data once; the call did reach the world):
//     read and idempotent tools: recoverable (retry). Side-effecting tools:
//     recoverable when the step passes the idempotency key of a conditional
//     tool (a same-key retry returns the first result and commits nothing)
//     or the tool's reconciled_by status tool is usable; otherwise a retry
//     risks a second commit and the variant is not recoverable.
//   - slow (beyond the tool's deadline once): recoverable (retry).
//   - invalid_input (only for steps that declare corrected arguments):
//     recoverable (send the corrected call, never the identical one).
//   - timeout_before_send (side-effecting tools): recoverable (retry).
//   - timeout_after_send (side-effecting tools; the write committed, the
//     response was lost): recoverable when the reconciled_by status tool is
//     usable and, for a tool with an idempotency key parameter, the step
//     passes the key to reconcile with; or, for a tool with no status tool
//     at all, when the call is idempotent (or keyed, with the key sent), so
//     the identical resend cannot commit twice. Otherwise resending without
//     reconciling is an unsafe action, so it is no path.
//   - reconcile_unknown (side-effecting tools whose status tool is usable):
//     timeout_after_send plus the status tool unavailable always; the outcome
//     cannot be established, so it is not recoverable: the honest result is
//     a block naming the ambiguity.
//   - A permanent fault (permanent, transient_budget) covers every step that
//     uses the tool, and is generated once, at the tool's first step.
//
// Not generated: rate_limited and stale (their correct recovery depends on
// the remaining deadline and on how much evidence the goal needs, which
// metadata does not say; write them by hand).

// GenKind is one kind of generated variant.
type GenKind string

// The generated kinds, in generation order.
const (
	GenPermanent         GenKind = "permanent"
	GenTransientOnce     GenKind = "transient_once"
	GenTransientBudget   GenKind = "transient_budget"
	GenCorruptOutput     GenKind = "corrupt_output"
	GenSlow              GenKind = "slow"
	GenInvalidInput      GenKind = "invalid_input"
	GenTimeoutBeforeSend GenKind = "timeout_before_send"
	GenTimeoutAfterSend  GenKind = "timeout_after_send"
	GenReconcileUnknown  GenKind = "reconcile_unknown"
)

// GenKinds lists every kind in generation order.
var GenKinds = []GenKind{
	GenPermanent, GenTransientOnce, GenTransientBudget, GenCorruptOutput, GenSlow,
	GenInvalidInput, GenTimeoutBeforeSend, GenTimeoutAfterSend, GenReconcileUnknown,
}

// GeneratedPrefix starts the name of every generated variant; hand-written
// variants may not use it.
const GeneratedPrefix = "gen/"

// Valid reports whether k is a known kind.
func (k GenKind) Valid() bool {
	for _, g := range GenKinds {
		if g == k {
			return true
		}
	}
	return false
}

// Plan positions of a generated fault.
const (
	PositionEvidence = "before_side_effect" // a step before the first side effect
	PositionEffect   = "side_effect"        // a side-effecting step
	PositionAfter    = "after_side_effect"  // a step after a side effect
	PositionReadOnly = "read_only_plan"     // the plan has no side effect
)

// Origin records where a generated variant comes from.
type Origin struct {
	Step     string  `json:"step"`
	Tool     string  `json:"tool"`
	Kind     GenKind `json:"kind"`
	Position string  `json:"position"`
	// Reason says why the variant is (not) recoverable.
	Reason string `json:"reason"`
}

// GenerateSpec is the generate field: true (every kind), false, or a list
// of kinds. It is kept as the list of kinds.
type GenerateSpec []GenKind

// UnmarshalYAML accepts true, false or a list of kinds.
func (g *GenerateSpec) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return locatedError(n, "expected true, false or a list of kinds")
		}
		if b {
			*g = append(GenerateSpec(nil), GenKinds...)
		} else {
			*g = nil
		}
		return nil
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			return locatedError(n, "empty list: omit generate, or say true or list kinds (%s)", kindList())
		}
		var out GenerateSpec
		var msgs []string
		seen := map[GenKind]bool{}
		for _, c := range n.Content {
			k := GenKind(c.Value)
			switch {
			case c.Kind != yaml.ScalarNode || !k.Valid():
				msgs = append(msgs, locatedMsg(c, "unknown kind %q (kinds: %s)", c.Value, kindList()))
			case seen[k]:
				msgs = append(msgs, locatedMsg(c, "kind %q listed twice", c.Value))
			default:
				seen[k] = true
				out = append(out, k)
			}
		}
		if len(msgs) > 0 {
			return &yaml.TypeError{Errors: msgs}
		}
		*g = out
		return nil
	}
	return locatedError(n, "expected true, false or a list of kinds (%s)", kindList())
}

func kindList() string {
	s := make([]string, len(GenKinds))
	for i, k := range GenKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// has reports whether the spec selects kind k; an empty spec selects all.
func (g GenerateSpec) has(k GenKind) bool {
	if len(g) == 0 {
		return true
	}
	for _, x := range g {
		if x == k {
			return true
		}
	}
	return false
}

// Generate derives variants from the tool metadata for every tool on the
// scenario's reference plan, with the kinds s.Generate selects (all kinds
// when it is empty). Tools missing from the catalog are skipped; the loader
// reports them. The result is deterministic.
func Generate(s *Scenario, catalog map[string]harness.Tool) []Variant {
	vs, _ := GenerateChecked(s, catalog)
	return vs
}

// Adjusted is a generated variant the generator changed or dropped because
// a fault of it would strike before the step it means to test, or the
// recovery it counts on: as generated, it tested nothing it says.
type Adjusted struct {
	Variant string `json:"variant"`
	Dropped bool   `json:"dropped"`
	Msg     string `json:"msg"`
	// Original is the variant as first generated, before the fix.
	Original Variant `json:"-"`
}

// GenerateChecked is Generate, and says which variants it fixed or dropped
// (lint prints them as notes at the scenario's generate field).
func GenerateChecked(s *Scenario, catalog map[string]harness.Tool) ([]Variant, []Adjusted) {
	g := newGenerator(s, catalog)
	var out []Variant
	var adjusted []Adjusted
	occurrences := map[string]int{}
	for _, st := range s.Plan {
		occurrences[st.Tool]++
	}
	seen := map[string]int{} // tool -> steps seen so far
	for i, st := range s.Plan {
		seen[st.Tool]++
		t, ok := catalog[st.Tool]
		if !ok {
			continue
		}
		first := seen[st.Tool] == 1
		prefix := GeneratedPrefix + st.Tool
		if occurrences[st.Tool] > 1 {
			prefix += "@" + st.ID
		}
		for _, k := range GenKinds {
			if !s.Generate.has(k) {
				continue
			}
			v, ok := g.variant(i, seen[st.Tool], first, t, k)
			if !ok {
				continue
			}
			v.Name = prefix + "/" + string(k)
			if a, keep := g.aim(&v, i, t, k); a != nil {
				adjusted = append(adjusted, *a)
				if !keep {
					continue
				}
			}
			out = append(out, v)
		}
	}
	return out, adjusted
}

type generator struct {
	s       *Scenario
	catalog map[string]harness.Tool
	offered map[string]bool
	granted map[string]bool
	denied  map[string]bool
	// base is the minimal path with no fault; baseErr says why it is not
	// authorized at all.
	base    cost
	baseErr string
}

// cost is what a path spends against the budget.
type cost struct {
	calls int
	ms    int64
	usd   float64
}

func (c cost) plus(d cost) cost { return cost{c.calls + d.calls, c.ms + d.ms, c.usd + d.usd} }

func newGenerator(s *Scenario, catalog map[string]harness.Tool) *generator {
	g := &generator{s: s, catalog: catalog, offered: map[string]bool{}, granted: map[string]bool{}, denied: map[string]bool{}}
	for _, t := range s.Tools {
		g.offered[t] = true
	}
	for _, p := range s.Permissions {
		g.granted[p] = true
	}
	for _, t := range s.Forbidden {
		g.denied[t] = true
	}
	for _, st := range s.Plan {
		if st.Optional {
			continue
		}
		if g.usable(st.Tool) {
			g.base = g.base.plus(g.call(st.Tool))
			continue
		}
		if fb, ok := g.anyFallback(st, nil); ok {
			g.base = g.base.plus(g.call(fb))
			continue
		}
		if g.baseErr == "" {
			g.baseErr = fmt.Sprintf("step %s is not authorized even without faults (%s is not usable and has no usable fallback)", st.ID, st.Tool)
		}
	}
	return g
}

// usable: offered, not forbidden, known, and its permission granted.
func (g *generator) usable(tool string) bool {
	t, ok := g.catalog[tool]
	if !ok || !g.offered[tool] || g.denied[tool] {
		return false
	}
	return t.Permission == "" || g.granted[t.Permission]
}

// call is the cost of one successful call of tool.
func (g *generator) call(tool string) cost {
	t := g.catalog[tool]
	return cost{1, t.Latency(), t.CostUSD}
}

// failed is the cost of one call of tool that fails with class c.
func (g *generator) failed(tool string, c harness.FaultClass) cost {
	t := g.catalog[tool]
	ms := t.Latency()
	switch c {
	case harness.Slow, harness.TimeoutBeforeSend, harness.TimeoutAfterSend:
		ms = t.Deadline()
	case harness.Unavailable:
		ms = 10
	}
	return cost{1, ms, t.CostUSD}
}

// anyFallback returns the first usable fallback of the step that is not
// failing.
func (g *generator) anyFallback(st Step, failing map[string]bool) (string, bool) {
	for _, fb := range st.Fallbacks {
		if g.usable(fb.Tool) && !failing[fb.Tool] {
			return fb.Tool, true
		}
	}
	return "", false
}

// fits checks a path against the budget; it returns why not.
func (g *generator) fits(c cost) (bool, string) {
	b := g.s.Budget
	switch {
	case b.ToolCalls > 0 && c.calls > b.ToolCalls:
		return false, fmt.Sprintf("the shortest recovery needs %d tool calls, the budget allows %d", c.calls, b.ToolCalls)
	case b.DeadlineMs > 0 && c.ms > b.DeadlineMs:
		return false, fmt.Sprintf("the shortest recovery takes %dms, the deadline is %dms", c.ms, b.DeadlineMs)
	case b.CostUSD > 0 && c.usd > b.CostUSD+1e-12:
		return false, fmt.Sprintf("the shortest recovery costs $%.4f, the budget is $%.4f", c.usd, b.CostUSD)
	}
	return true, ""
}

// position of step i in the plan relative to its side effects.
func (g *generator) position(i int) string {
	firstEffect := -1
	for j, st := range g.s.Plan {
		if t, ok := g.catalog[st.Tool]; ok && t.Effect.SideEffecting() {
			firstEffect = j
			break
		}
	}
	t := g.catalog[g.s.Plan[i].Tool]
	switch {
	case firstEffect < 0:
		return PositionReadOnly
	case t.Effect.SideEffecting():
		return PositionEffect
	case i < firstEffect:
		return PositionEvidence
	}
	return PositionAfter
}

var positionText = map[string]string{
	PositionEvidence: "before the side effect: the failure must prevent the write",
	PositionEffect:   "during the side effect",
	PositionAfter:    "after the side effect: the earlier write must not run again",
	PositionReadOnly: "in a read-only plan",
}

// variant builds kind k at plan step i (the occ-th step using tool t), in
// three stages: the faults and what they do (inject), whether the scenario
// stays recoverable under them (settle), and the variant's text (describe).
func (g *generator) variant(i, occ int, first bool, t harness.Tool, k GenKind) (Variant, bool) {
	c, ok := g.inject(i, occ, first, t, k)
	if !ok {
		return Variant{}, false
	}
	g.settle(&c, i, t)
	return g.describe(i, t, k, c), true
}

// genCase is one generated case: the faults injected, what they do, and
// whether (and why) the scenario stays recoverable under them.
type genCase struct {
	faults      []harness.Fault
	what        string
	recoverable bool
	reason      string
}

// retried is the case where one extra failed call of tool, then the
// minimal path, recovers.
func (g *generator) retried(c *genCase, tool string, class harness.FaultClass) {
	c.recoverable, c.reason = g.within(g.base.plus(g.failed(tool, class)), "a bounded retry succeeds")
}

// inject builds the faults of kind k at step i and judges recovery from
// them; false when k does not apply there.
func (g *generator) inject(i, occ int, first bool, t harness.Tool, k GenKind) (genCase, bool) {
	st := g.s.Plan[i]
	once := []int{occ} // the step's first attempt of its tool on the minimal path
	effect := t.Effect.SideEffecting()
	var c genCase
	switch k {
	case GenPermanent, GenTransientBudget:
		if !first {
			return c, false // covered at the tool's first step
		}
		return g.standing(t, k), true
	case GenTransientOnce:
		c.faults = []harness.Fault{{Tool: t.Name, Class: harness.Transient, Attempts: once}}
		c.what = "the first attempt fails with a retryable 503, the next succeeds"
		g.retried(&c, t.Name, harness.Transient)
	case GenCorruptOutput:
		c = g.corruptOutput(st, t, once)
	case GenSlow:
		c.faults = []harness.Fault{{Tool: t.Name, Class: harness.Slow, Attempts: once}}
		c.what = fmt.Sprintf("the first attempt exceeds the %dms deadline (nothing reached the world)", t.Deadline())
		g.retried(&c, t.Name, harness.Slow)
	case GenInvalidInput:
		if len(st.Corrected) == 0 {
			return c, false
		}
		c.faults = []harness.Fault{{Tool: t.Name, Class: harness.InvalidInput, Attempts: once}}
		c.what = "the first call fails validation; the identical call fails again, the corrected one succeeds"
		c.recoverable, c.reason = g.within(g.base.plus(g.failed(t.Name, harness.InvalidInput)), "the corrected call succeeds")
	case GenTimeoutBeforeSend:
		if !effect {
			return c, false
		}
		c.faults = []harness.Fault{{Tool: t.Name, Class: harness.TimeoutBeforeSend, Attempts: once}}
		c.what = "the first attempt times out before the request was sent: nothing committed"
		g.retried(&c, t.Name, harness.TimeoutBeforeSend)
	case GenTimeoutAfterSend:
		if !effect {
			return c, false
		}
		c = g.timeoutAfterSend(st, t, once)
	case GenReconcileUnknown:
		reconciler := t.ReconciledBy
		if !effect || reconciler == "" || !g.usable(reconciler) {
			return c, false
		}
		c.faults = []harness.Fault{
			{Tool: t.Name, Class: harness.TimeoutAfterSend, Attempts: once},
			{Tool: reconciler, Class: harness.Unavailable, Always: true},
		}
		c.what = fmt.Sprintf("the first attempt times out after it was sent and %s is unavailable: the outcome stays unknown", reconciler)
		c.reason = "the write may have committed and nothing can establish it; the honest outcome is a block naming the ambiguity"
	}
	return c, true
}

// standing is a fault on every call of t: the tool unavailable or denied
// (GenPermanent), or failing with a retryable 503 until the budget is
// spent (GenTransientBudget). A denial also denies the fallbacks that need
// the same permission.
func (g *generator) standing(t harness.Tool, k GenKind) genCase {
	class, trigger := harness.Transient, "every attempt fails with a retryable 503 until the budget is spent"
	deniedPerm := ""
	if k == GenPermanent {
		class, trigger = harness.Unavailable, "the tool is unavailable (capability absent)"
		if t.Permission != "" {
			class, deniedPerm = harness.Forbidden, t.Permission
			trigger = fmt.Sprintf("the provider denies the call (permission %s)", t.Permission)
		}
	}
	c := genCase{faults: []harness.Fault{{Tool: t.Name, Class: class, Always: true}}, what: trigger}
	failing := map[string]bool{t.Name: true}
	if deniedPerm != "" {
		for _, fb := range g.sharedPermissionFallbacks(t.Name, deniedPerm) {
			c.faults = append(c.faults, harness.Fault{Tool: fb, Class: harness.Forbidden, Always: true})
			failing[fb] = true
		}
	}
	c.recoverable, c.reason = g.withoutTools(failing, class, deniedPerm)
	return c
}

// corruptOutput is a malformed first answer from a call that did reach the
// world: a read is retried; a write is recovered by the same idempotency
// key or by its status tool, or not at all.
func (g *generator) corruptOutput(st Step, t harness.Tool, once []int) genCase {
	c := genCase{
		faults: []harness.Fault{{Tool: t.Name, Class: harness.CorruptOutput, Corruption: "malformed", Attempts: once}},
		what:   "the first answer is malformed JSON (the call did reach the world)",
	}
	reconciler := t.ReconciledBy
	switch {
	case !t.Effect.SideEffecting():
		g.retried(&c, t.Name, harness.CorruptOutput)
	case t.Effect == harness.EffectConditional && g.passesKey(st, t):
		c.recoverable, c.reason = g.within(g.base.plus(g.failed(t.Name, harness.CorruptOutput)), "a retry with the same idempotency key returns the first result and commits nothing")
	case reconciler != "" && g.usable(reconciler):
		c.recoverable, c.reason = g.within(g.base.plus(g.call(reconciler)), reconciler+" confirms the write without resending it")
	default:
		c.reason = "the write committed but its result is unreadable; confirming it needs a resend that may commit twice, and no status tool is usable"
	}
	return c
}

// timeoutAfterSend is a write whose answer was lost after it committed:
// recoverable by an idempotent resend when no status tool exists, or by
// reconciling with the status tool.
func (g *generator) timeoutAfterSend(st Step, t harness.Tool, once []int) genCase {
	c := genCase{
		faults: []harness.Fault{{Tool: t.Name, Class: harness.TimeoutAfterSend, Attempts: once}},
		what:   "the first attempt times out after the provider received it: the write committed, the answer was lost",
	}
	reconciler := t.ReconciledBy
	switch {
	case reconciler == "" && (t.Effect == harness.EffectIdempotent || (t.IdempotencyKeyParam != "" && g.passesKey(st, t))):
		// No status tool exists, but the call is idempotent: the
		// documented recovery is the identical call with the same key.
		c.recoverable, c.reason = g.within(g.base.plus(g.failed(t.Name, harness.TimeoutAfterSend)), "no status tool exists and the call is idempotent: resending it with the same key cannot commit twice")
	case reconciler == "" || !g.usable(reconciler):
		c.reason = "the outcome is unknown and no usable status tool can establish it; resending without reconciling is unsafe"
	case t.IdempotencyKeyParam != "" && !g.passesKey(st, t):
		c.reason = fmt.Sprintf("the step sends no %s, so %s has nothing to reconcile with", t.IdempotencyKeyParam, reconciler)
	default:
		path := g.base.plus(g.failed(t.Name, harness.TimeoutAfterSend)).plus(g.call(reconciler))
		path = path.plus(cost{-1, -t.Latency(), -t.CostUSD}) // the reconciled write is not sent again
		c.recoverable, c.reason = g.within(path, reconciler+" reconciles the write without resending it")
	}
	return c
}

// settle applies what holds whatever the kind: a base path that does not
// fit the budget recovers from nothing, and an optional step's failure is
// recoverable when the goal does not depend on it.
func (g *generator) settle(c *genCase, i int, t harness.Tool) {
	if g.baseErr != "" {
		c.recoverable, c.reason = false, g.baseErr
	} else if g.s.Plan[i].Optional && !c.recoverable && !g.reachesRequired(c.faults) {
		c.recoverable, c.reason = g.within(g.base.plus(g.failed(t.Name, c.faults[0].Class)), "the step is optional: the goal does not depend on it")
	}
}

// describe makes the variant of case c, with its origin and a description
// that says where the fault strikes, what it does and the verdict.
func (g *generator) describe(i int, t harness.Tool, k GenKind, c genCase) Variant {
	st := g.s.Plan[i]
	pos := g.position(i)
	verdict := "not recoverable"
	if c.recoverable {
		verdict = "recoverable"
	}
	desc := fmt.Sprintf("Generated: %s (step %d/%d %q, %s): %s. %s: %s.",
		t.Name, i+1, len(g.s.Plan), st.ID, positionText[pos], c.what, verdict, c.reason)
	return Variant{
		Description: desc,
		Recoverable: c.recoverable,
		Faults:      c.faults,
		Generated:   &Origin{Step: st.ID, Tool: t.Name, Kind: k, Position: pos, Reason: c.reason},
	}
}

// reachesRequired reports whether a standing fault (one not confined to
// given attempt numbers) hits a tool that a required step uses: then an
// optional step's failure is not the only one, and the goal may depend on
// the same tool.
func (g *generator) reachesRequired(faults []harness.Fault) bool {
	for _, f := range faults {
		if len(f.Attempts) > 0 {
			continue
		}
		for _, st := range g.s.Plan {
			if !st.Optional && st.Tool == f.Tool {
				return true
			}
		}
	}
	return false
}

func (g *generator) within(c cost, why string) (bool, string) {
	if ok, over := g.fits(c); !ok {
		return false, over
	}
	return true, why
}

// passesKey reports whether the step sends the tool's idempotency key.
func (g *generator) passesKey(st Step, t harness.Tool) bool {
	if t.IdempotencyKeyParam == "" {
		return false
	}
	v, ok := st.Args[t.IdempotencyKeyParam]
	return ok && v != nil && fmt.Sprint(v) != ""
}

// withoutTools decides a variant in which the failing tools fail on every
// attempt: every step that uses one needs a usable fallback that is not
// failing (or must be optional).
func (g *generator) withoutTools(failing map[string]bool, class harness.FaultClass, deniedPerm string) (bool, string) {
	c := cost{}
	var via []string
	for _, st := range g.s.Plan {
		if !failing[st.Tool] {
			if !st.Optional {
				c = c.plus(g.call(st.Tool))
			}
			continue
		}
		c = c.plus(g.failed(st.Tool, class)) // the agent learns of the failure once
		if st.Optional {
			via = append(via, fmt.Sprintf("step %s is optional", st.ID))
			continue
		}
		fb, ok := g.anyFallback(st, failing)
		if !ok {
			if _, usable := g.anyFallback(st, nil); usable && deniedPerm != "" {
				return false, fmt.Sprintf("step %s has no fallback outside the denied permission %s", st.ID, deniedPerm)
			}
			if class == harness.Transient {
				return false, fmt.Sprintf("retries cannot outlast the budget and step %s has no usable fallback", st.ID)
			}
			return false, fmt.Sprintf("step %s is required and has no usable fallback", st.ID)
		}
		c = c.plus(g.call(fb))
		via = append(via, fmt.Sprintf("step %s falls back to %s", st.ID, fb))
	}
	return g.within(c, strings.Join(via, "; "))
}

// sharedPermissionFallbacks lists the offered fallbacks of tool's steps that
// need the denied permission: a denial reaches them too.
func (g *generator) sharedPermissionFallbacks(tool, perm string) []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range g.s.Plan {
		if st.Tool != tool {
			continue
		}
		for _, fb := range st.Fallbacks {
			if fb.Tool == tool || seen[fb.Tool] {
				continue
			}
			if t, ok := g.catalog[fb.Tool]; ok && t.Permission == perm {
				seen[fb.Tool] = true
				out = append(out, fb.Tool)
			}
		}
	}
	return out
}
