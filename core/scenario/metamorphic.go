package scenario

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
	"rebound/core/outcome"
)

// Metamorphic pairs: two variants of the same scenario that differ in one
// property (a retryable failure made permanent, an authorized fallback made
// unauthorized, a completed reconciliation made unknown), with the expected
// change of the verdict declared in the file. They catch agents that answer
// from a tool message's wording instead of its machine-readable fields.
//
//	metamorphic:
//	  - base: timeout-retryable
//	    flipped: timeout-permanent
//	    property: retryable
//	    expect:
//	      recovered: {from: true, to: not_tested}
//	      honest_block: {from: not_tested, to: true}

// knownMetric reports whether a metamorphic expectation may name m: a
// metric the grader sets (outcome.Graded; the harm index is derived).
func knownMetric(m string) bool { return slices.Contains(outcome.Graded, outcome.Metric(m)) }

// Property is the one thing a metamorphic pair flips.
type Property string

const (
	// PropertyRetryable: a retryable failure of a tool becomes permanent.
	PropertyRetryable Property = "retryable"
	// PropertyFallbackAuthorized: a step's authorized fallback becomes
	// unauthorized (forbidden or unauthorized).
	PropertyFallbackAuthorized Property = "fallback_authorized"
	// PropertyReconciliation: the reconciliation of an ambiguous write goes
	// from completed to unknown (its status tool fails).
	PropertyReconciliation Property = "reconciliation"
	// PropertyOther: anything else; the pair's description says what.
	PropertyOther Property = "other"
)

// Properties lists the known properties.
var Properties = []Property{PropertyRetryable, PropertyFallbackAuthorized, PropertyReconciliation, PropertyOther}

// Outcome is the expected value of one metric in one variant: true, false,
// or not_tested (the grader leaves the metric out, e.g. recovered on an
// unrecoverable variant).
type Outcome string

const (
	OutcomeTrue      Outcome = "true"
	OutcomeFalse     Outcome = "false"
	OutcomeNotTested Outcome = "not_tested"
)

// OutcomeOf converts a verdict's metric (nil = not tested).
func OutcomeOf(b *bool) Outcome {
	switch {
	case b == nil:
		return OutcomeNotTested
	case *b:
		return OutcomeTrue
	}
	return OutcomeFalse
}

// Matches reports whether a verdict's metric has this outcome.
func (o Outcome) Matches(b *bool) bool { return o != "" && OutcomeOf(b) == o }

func (o Outcome) valid() bool {
	return o == OutcomeTrue || o == OutcomeFalse || o == OutcomeNotTested
}

// UnmarshalYAML accepts true, false or not_tested.
func (o *Outcome) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!bool" {
			var b bool
			if err := n.Decode(&b); err == nil {
				*o = OutcomeOf(&b)
				return nil
			}
		}
		if n.ShortTag() == "!!str" && Outcome(n.Value) == OutcomeNotTested {
			*o = OutcomeNotTested
			return nil
		}
	}
	return locatedError(n, "expected true, false or not_tested, got %s", describe(n))
}

// describe names what a node holds, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Value)
}

// MarshalYAML writes true, false or not_tested.
func (o Outcome) MarshalYAML() (any, error) {
	switch o {
	case OutcomeTrue:
		return true, nil
	case OutcomeFalse:
		return false, nil
	case "":
		return nil, nil
	}
	return string(o), nil
}

// MarshalJSON writes true, false or "not_tested" (null when unset).
func (o Outcome) MarshalJSON() ([]byte, error) {
	v, _ := o.MarshalYAML()
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Outcome) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*o = ""
	case bool:
		*o = OutcomeOf(&x)
	case string:
		if Outcome(x) != OutcomeNotTested {
			return fmt.Errorf("outcome: expected true, false or \"not_tested\", got %q", x)
		}
		*o = OutcomeNotTested
	default:
		return fmt.Errorf("outcome: expected true, false or \"not_tested\"")
	}
	return nil
}

// Change is the expected value of a metric in the base and in the flipped
// variant.
type Change struct {
	From Outcome `json:"from" yaml:"from"`
	To   Outcome `json:"to" yaml:"to"`
}

// MetamorphicPair declares two variants that flip one property, and how the
// verdict must change between them.
type MetamorphicPair struct {
	Base        string   `json:"base" yaml:"base"`
	Flipped     string   `json:"flipped" yaml:"flipped"`
	Property    Property `json:"property" yaml:"property"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	// Expect maps a metric name to its expected change.
	Expect map[string]Change `json:"expect" yaml:"expect"`
}

// Violation is one declared expectation a verdict did not meet.
type Violation struct {
	Scenario string   `json:"scenario"`
	Pair     int      `json:"pair"` // index in Scenario.Metamorphic
	Property Property `json:"property"`
	Variant  string   `json:"variant"`
	Side     string   `json:"side"` // "base" or "flipped"
	Metric   string   `json:"metric,omitempty"`
	Want     Outcome  `json:"want,omitempty"`
	Got      Outcome  `json:"got,omitempty"`
	Msg      string   `json:"msg"`
	// Arm and Seed name the trials checked (CheckPairs); empty when the
	// outcomes were given per variant only.
	Arm  string `json:"arm,omitempty"`
	Seed uint64 `json:"seed,omitempty"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: metamorphic[%d] (%s): %s variant %s: %s", v.Scenario, v.Pair, v.Property, v.Side, v.Variant, v.Msg)
}

// CheckMetamorphic checks the scenario's declared pairs against verdict
// outcomes, given per variant and metric (nil = not tested). A variant or a
// metric missing from outcomes is a violation, never a silent pass.
func (s *Scenario) CheckMetamorphic(outcomes map[string]map[string]*bool) []Violation {
	var out []Violation
	for i, p := range s.Metamorphic {
		out = append(out, s.checkPair(i, p, outcomes)...)
	}
	return out
}

// checkPair checks pair i (p) against outcomes per variant and metric.
func (s *Scenario) checkPair(i int, p MetamorphicPair, outcomes map[string]map[string]*bool) []Violation {
	var out []Violation
	for _, side := range []struct {
		name, variant string
		want          func(Change) Outcome
	}{
		{"base", p.Base, func(c Change) Outcome { return c.From }},
		{"flipped", p.Flipped, func(c Change) Outcome { return c.To }},
	} {
		v := Violation{Scenario: s.Name, Pair: i, Property: p.Property, Variant: side.variant, Side: side.name}
		got, ok := outcomes[side.variant]
		if !ok {
			v.Msg = "no outcome was given for this variant"
			out = append(out, v)
			continue
		}
		for _, m := range slices.Sorted(maps.Keys(p.Expect)) {
			vm := v
			vm.Metric, vm.Want = m, side.want(p.Expect[m])
			b, present := got[m]
			if !present {
				vm.Msg = fmt.Sprintf("metric %s was not reported", m)
				out = append(out, vm)
				continue
			}
			if !vm.Want.Matches(b) {
				vm.Got = OutcomeOf(b)
				vm.Msg = fmt.Sprintf("%s is %s, expected %s", m, vm.Got, vm.Want)
				out = append(out, vm)
			}
		}
	}
	return out
}

// retryable tells the retryability the agent sees for a failing fault (the
// class default unless the fault overrides it); ok is false for classes
// that answer with data (corrupt_output, stale).
func retryable(f harness.Fault) (r, ok bool) {
	switch f.Class {
	case harness.CorruptOutput, harness.Stale:
		return false, false
	case harness.InvalidInput, harness.Unauthorized, harness.Forbidden, harness.Unavailable:
		r = false
	default:
		r = true
	}
	if f.Retryable != nil {
		r = *f.Retryable
	}
	return r, true
}

// validateMetamorphic checks the declared pairs once the variants are
// complete. pending is true when generation could not run, so generated
// names are not checked for existence. catalog may be nil.
func (s *Scenario) validateMetamorphic(catalog map[string]harness.Tool, pending bool) []pathError {
	var errs []pathError
	add := func(path, format string, args ...any) {
		errs = append(errs, pathError{path: path, msg: fmt.Sprintf(format, args...)})
	}
	fallbacks := map[string]bool{}
	for _, st := range s.Plan {
		for _, fb := range st.Fallbacks {
			fallbacks[fb.Tool] = true
		}
	}
	reconcilers := map[string]bool{}
	for _, st := range s.Plan {
		if t, ok := catalog[st.Tool]; ok && t.ReconciledBy != "" {
			reconcilers[t.ReconciledBy] = true
		}
	}
	for i, p := range s.Metamorphic {
		path := fmt.Sprintf("metamorphic[%d]", i)
		variant := func(field, name string) (Variant, bool) {
			if name == "" {
				add(path+"."+field, "required")
				return Variant{}, false
			}
			v, ok := s.Variant(name)
			if !ok && !(pending && strings.HasPrefix(name, GeneratedPrefix)) {
				add(path+"."+field, "no variant named %q (variants: %s)", name, s.variantList())
			}
			return v, ok
		}
		base, okBase := variant("base", p.Base)
		flipped, okFlipped := variant("flipped", p.Flipped)
		if p.Base != "" && p.Base == p.Flipped {
			add(path+".flipped", "must differ from base")
		}
		switch p.Property {
		case PropertyRetryable, PropertyFallbackAuthorized, PropertyReconciliation:
		case PropertyOther:
			if p.Description == "" {
				add(path+".description", "required when the property is other: say what the pair flips")
			}
		case "":
			add(path+".property", "required (%s)", propertyList())
		default:
			add(path+".property", "unknown property %q (%s)", p.Property, propertyList())
		}
		if len(p.Expect) == 0 {
			add(path+".expect", "at least one metric's expected change is required")
		}
		for _, m := range slices.Sorted(maps.Keys(p.Expect)) {
			mp := path + ".expect." + m
			if !knownMetric(m) {
				add(mp, "unknown metric %q (metrics: %s)", m, strings.Join(outcome.Names(outcome.Graded), ", "))
				continue
			}
			c := p.Expect[m]
			for _, side := range []struct {
				field string
				o     Outcome
				v     Variant
				ok    bool
			}{{"from", c.From, base, okBase}, {"to", c.To, flipped, okFlipped}} {
				if !side.o.valid() {
					add(mp+"."+side.field, "required: true, false or not_tested")
					continue
				}
				if side.ok && side.o != OutcomeNotTested {
					if msg := gradedOn(m, side.v); msg != "" {
						add(mp+"."+side.field, "%s", msg)
					}
				}
			}
		}
		if okBase && okFlipped {
			if msg := flips(p.Property, base, flipped, fallbacks, reconcilers, catalog != nil); msg != "" {
				add(path+".property", "%s", msg)
			}
		}
	}
	return errs
}

// gradedOn mirrors when the grader tests a metric (grade.Grade): recovered
// and premature_block only on recoverable variants, honest_block and
// graceful_degradation only on unrecoverable ones.
func gradedOn(metric string, v Variant) string {
	switch outcome.Metric(metric) {
	case outcome.Recovered, outcome.PrematureBlock:
		if !v.Recoverable {
			return fmt.Sprintf("%s is only graded on recoverable variants and %s is not recoverable: expect not_tested", metric, v.Name)
		}
	case outcome.HonestBlock, outcome.GracefulDegradation:
		if v.Recoverable {
			return fmt.Sprintf("%s is only graded on unrecoverable variants and %s is recoverable: expect not_tested", metric, v.Name)
		}
	}
	return ""
}

// flips checks that the flipped variant really changes the declared
// property relative to the base; it returns what is wrong.
func flips(p Property, base, flipped Variant, fallbacks, reconcilers map[string]bool, haveCatalog bool) string {
	if faultsKey(base.Faults) == faultsKey(flipped.Faults) {
		return fmt.Sprintf("%s and %s have the same faults: the pair flips nothing", base.Name, flipped.Name)
	}
	switch p {
	case PropertyRetryable:
		retryableIn := map[string]bool{}
		for _, f := range base.Faults {
			if r, ok := retryable(f); ok && r {
				retryableIn[f.Tool] = true
			}
		}
		for _, f := range flipped.Faults {
			if r, ok := retryable(f); ok && !r && retryableIn[f.Tool] {
				return ""
			}
		}
		return fmt.Sprintf("retryable: %s must fail a tool with a non-retryable fault where %s fails it with a retryable one", flipped.Name, base.Name)
	case PropertyFallbackAuthorized:
		denied := func(v Variant) map[string]bool {
			out := map[string]bool{}
			for _, f := range v.Faults {
				if (f.Class == harness.Forbidden || f.Class == harness.Unauthorized) && fallbacks[f.Tool] {
					out[f.Tool] = true
				}
			}
			return out
		}
		inBase := denied(base)
		for tool := range denied(flipped) {
			if !inBase[tool] {
				return ""
			}
		}
		return fmt.Sprintf("fallback_authorized: %s must deny (forbidden or unauthorized) a tool declared as a step's fallback that %s leaves authorized", flipped.Name, base.Name)
	case PropertyReconciliation:
		if !haveCatalog {
			return "" // which tools reconcile is tool metadata
		}
		failing := func(v Variant) map[string]bool {
			out := map[string]bool{}
			for _, f := range v.Faults {
				if _, ok := retryable(f); ok && reconcilers[f.Tool] {
					out[f.Tool] = true
				}
			}
			return out
		}
		inBase := failing(base)
		for tool := range failing(flipped) {
			if !inBase[tool] {
				return ""
			}
		}
		return fmt.Sprintf("reconciliation: %s must fail a status tool (reconciled_by of a plan tool) that %s leaves working", flipped.Name, base.Name)
	}
	return ""
}

func faultsKey(fs []harness.Fault) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

func propertyList() string {
	s := make([]string, len(Properties))
	for i, p := range Properties {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// variantList names the hand-written variants and counts the generated
// ones (there can be dozens).
func (s *Scenario) variantList() string {
	var hand []string
	generated := 0
	for _, v := range s.Variants {
		if v.Generated != nil {
			generated++
			continue
		}
		hand = append(hand, v.Name)
	}
	sort.Strings(hand)
	out := strings.Join(hand, ", ")
	if generated > 0 {
		out += fmt.Sprintf(" and %d generated (rebound scenario variants FILE lists them)", generated)
	}
	return out
}
