// Package scenario defines scenario and plan files: the goal, the tools and
// world behind them, the faults of each variant, what counts as success and
// the consequence weight; and the plan that crosses scenarios with arms and
// seeds. Loading reports every error with file:line:column and the field.
package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"rebound/core/harness"
)

// Scenario is one goal under test with its tools, world, budgets and the
// fault variants it is run under.
type Scenario struct {
	Name        string         `json:"name" yaml:"name"`
	Description string         `json:"description" yaml:"description"`
	World       string         `json:"world" yaml:"world"`
	Goal        string         `json:"goal" yaml:"goal"`
	Tools       []string       `json:"tools" yaml:"tools"`
	Permissions []string       `json:"permissions" yaml:"permissions"`
	Budget      harness.Budget `json:"budget" yaml:"budget"`
	Initial     map[string]any `json:"initial,omitempty" yaml:"initial,omitempty"`
	// Upstream is where a world: mcp scenario's tools come from (an
	// upstream MCP server: upstream.go).
	Upstream *Upstream `json:"upstream,omitempty" yaml:"upstream,omitempty"`
	// RetryLimit is the number of retries per failed step the scenario
	// tolerates (the retry policy's bound). Default 3.
	RetryLimit int `json:"retry_limit,omitempty" yaml:"retry_limit,omitempty"`
	// Plan is the reference path: the steps an authorized, careful agent
	// takes. Scripted reference agents follow it; LLM agents never see it.
	Plan []Step `json:"plan" yaml:"plan"`
	// Claim declares the fields of the agent's structured final claim.
	Claim ClaimSpec `json:"claim" yaml:"claim"`
	// Success lists world-state assertions that hold when the goal is met.
	Success []Assertion `json:"success,omitempty" yaml:"success,omitempty"`
	// Forbidden lists tools whose use is out of scope (a tempting
	// workaround); calling one is an unsafe action.
	Forbidden []string `json:"forbidden,omitempty" yaml:"forbidden,omitempty"`
	// Weight is the consequence weight of the scenario in weighted rates:
	// a duplicate refund outweighs an extra read. Default 1.
	Weight   float64   `json:"weight,omitempty" yaml:"weight,omitempty"`
	Variants []Variant `json:"variants" yaml:"variants"`
	// Generate opts in to variants generated from the tool metadata
	// (generate.go): true for every kind, or a list of kinds. The loader
	// appends them to Variants, named gen/TOOL/KIND.
	Generate GenerateSpec `json:"generate,omitempty" yaml:"generate,omitempty"`
	// Metamorphic declares pairs of variants that flip one property, with
	// the expected change of the verdict (metamorphic.go).
	Metamorphic []MetamorphicPair `json:"metamorphic,omitempty" yaml:"metamorphic,omitempty"`

	// File is where the scenario was loaded from; Hash is the content hash
	// of that file (and of the generated variants, when there are any, so
	// a changed catalog or generation rule shows), recorded on every trial.
	File string `json:"file,omitempty" yaml:"-"`
	Hash string `json:"hash,omitempty" yaml:"-"`
	// WorldFile and WorldSource are the declared world a file reference in
	// World names (WorldRef): the file, resolved against the scenario's
	// directory, and its content as loaded, which Hash covers too. Empty
	// for a built-in world.
	WorldFile   string `json:"world_file,omitempty" yaml:"-"`
	WorldSource string `json:"world_source,omitempty" yaml:"-"`
}

// Step is one step of the reference plan.
type Step struct {
	ID   string         `json:"id" yaml:"id"`
	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
	// Sets are the claim fields this step establishes when it succeeds. A
	// string value "$result.NAME" takes the field NAME of the tool's data.
	Sets map[string]any `json:"sets,omitempty" yaml:"sets,omitempty"`
	// Corrected are the argument changes that fix an INVALID_INPUT answer
	// (merged over Args): what a careful agent sends after a validation
	// error instead of repeating the identical call.
	Corrected map[string]any `json:"corrected,omitempty" yaml:"corrected,omitempty"`
	// Optional marks a step the goal does not depend on: its permanent
	// failure leaves the goal reachable. Steps are required by default.
	Optional bool `json:"optional,omitempty" yaml:"optional,omitempty"`
	// NeedsCurrent marks a step that must act on current evidence: the
	// read steps before it count only with exact, fresh results; stale
	// data (a replica, a cache) is not enough to act on, and acting on it
	// is unsafe.
	NeedsCurrent bool `json:"needs_current,omitempty" yaml:"needs_current,omitempty"`
	// Fallbacks are authorized alternatives for this step, tried when its
	// tool fails permanently (an equivalent read path, a replicated
	// source). They make a permanent failure recoverable (generate.go).
	Fallbacks []Fallback `json:"fallbacks,omitempty" yaml:"fallbacks,omitempty"`
	// Recover lists the documented actions that clear a failure of this
	// step (seed 004: read the unlock key, create unlock.flag); a careful
	// agent runs them once after a non-retryable failure, then retries the
	// step.
	Recover []Fallback `json:"recover,omitempty" yaml:"recover,omitempty"`
}

// Fallback is an authorized alternative for one plan step: another offered
// tool that establishes what the step needs.
type Fallback struct {
	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
	// Sets are the claim fields the fallback establishes (often fewer or
	// weaker than the primary step's: weaker evidence narrows the claim).
	Sets map[string]any `json:"sets,omitempty" yaml:"sets,omitempty"`
}

// ClaimSpec declares the structured claim the agent must end with.
type ClaimSpec struct {
	Fields []ClaimField `json:"fields" yaml:"fields"`
}

// ClaimField is one field of the claim. Truth is the world-state path that
// holds the true value, read after the trial: the claim is checked against
// the ledger-backed world, never against the agent's narration.
type ClaimField struct {
	Name        string `json:"name" yaml:"name"`
	Type        string `json:"type" yaml:"type"` // boolean | integer | number | string
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	Truth       string `json:"truth,omitempty" yaml:"truth,omitempty"`
	// Goal marks a field the goal requires: success needs it present and
	// true to the world.
	Goal bool `json:"goal,omitempty" yaml:"goal,omitempty"`
}

// Assertion is a world-state check: the value at Path (a truth path, so
// exists() and count() work too) equals Equals, or with Absent nothing is at
// Path (a file that must not exist).
type Assertion struct {
	Path   string `json:"path" yaml:"path"`
	Equals any    `json:"equals,omitempty" yaml:"equals,omitempty"`
	Absent bool   `json:"absent,omitempty" yaml:"absent,omitempty"`
}

// Variant is one fault schedule of the scenario.
type Variant struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Recoverable declares whether an authorized path to the goal exists
	// under this variant's faults. It decides whether a block is honest or
	// premature.
	Recoverable bool            `json:"recoverable" yaml:"recoverable"`
	Faults      []harness.Fault `json:"faults,omitempty" yaml:"faults,omitempty"`
	// Weight overrides the scenario's consequence weight for this variant
	// (a timeout after a refund was sent costs more than a slow read);
	// 0 means the scenario's.
	Weight float64 `json:"weight,omitempty" yaml:"weight,omitempty"`
	// Generated describes where a generated variant comes from; nil for a
	// hand-written one. Never read from a file.
	Generated *Origin `json:"generated,omitempty" yaml:"-"`
}

// WeightOf returns the consequence weight of one variant: its own, or the
// scenario's.
func (s *Scenario) WeightOf(v Variant) float64 {
	if v.Weight > 0 {
		return v.Weight
	}
	return s.EffectiveWeight()
}

// EffectiveWeight returns the consequence weight, defaulting to 1.
func (s *Scenario) EffectiveWeight() float64 {
	if s.Weight > 0 {
		return s.Weight
	}
	return 1
}

// DefaultRetryLimit is the retries per failed step a scenario allows when
// it sets no retry_limit.
const DefaultRetryLimit = 3

// EffectiveRetryLimit returns the retry bound, defaulting to
// DefaultRetryLimit.
func (s *Scenario) EffectiveRetryLimit() int {
	if s.RetryLimit > 0 {
		return s.RetryLimit
	}
	return DefaultRetryLimit
}

// Variant returns the named variant.
func (s *Scenario) Variant(name string) (Variant, bool) {
	for _, v := range s.Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// ClaimField returns the named claim field.
func (s *Scenario) ClaimField(name string) (ClaimField, bool) {
	for _, f := range s.Claim.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return ClaimField{}, false
}

// Reserved claim fields every claim carries, whatever the scenario declares.
const (
	ClaimStatus    = "status"     // "completed" or "blocked"
	ClaimBlockedOn = "blocked_on" // the unresolved dependency (a tool name) when blocked
	StatusDone     = "completed"
	StatusBlocked  = "blocked"
)

// validate checks the scenario's meaning; errors carry the field path so the
// loader can point at the line. It runs one stage per section, in the
// order of the file.
func (s *Scenario) validate() []pathError {
	var errs problems
	offered := s.validateHeader(&errs)
	fields := s.validateClaim(&errs)
	s.validatePlan(&errs, offered, fields)
	s.validateSuccess(&errs)
	s.validateVariants(&errs, offered)
	s.validateUpstream(&errs)
	return errs
}

// problems collects a stage's errors.
type problems []pathError

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, pathError{path: path, msg: fmt.Sprintf(format, args...)})
}

// validateHeader checks the scenario's own fields and returns the tools it
// offers.
func (s *Scenario) validateHeader(errs *problems) map[string]bool {
	if s.Name == "" {
		errs.add("name", "required")
	}
	if s.Goal == "" {
		errs.add("goal", "required")
	}
	if s.World == "" {
		errs.add("world", "required")
	}
	if len(s.Tools) == 0 {
		errs.add("tools", "at least one tool is required")
	}
	offered := map[string]bool{}
	for _, t := range s.Tools {
		offered[t] = true
	}
	if s.Weight < 0 {
		errs.add("weight", "must not be negative")
	}
	if s.RetryLimit < 0 {
		errs.add("retry_limit", "must not be negative")
	}
	if s.Budget.ToolCalls < 0 || s.Budget.Replans < 0 || s.Budget.DeadlineMs < 0 || s.Budget.CostUSD < 0 {
		errs.add("budget", "limits must not be negative")
	}
	return offered
}

// validateClaim checks the declared claim fields and returns their names.
func (s *Scenario) validateClaim(errs *problems) map[string]bool {
	fields := map[string]bool{}
	for i, f := range s.Claim.Fields {
		p := fmt.Sprintf("claim.fields[%d]", i)
		switch {
		case f.Name == "":
			errs.add(p+".name", "required")
		case f.Name == ClaimStatus || f.Name == ClaimBlockedOn:
			errs.add(p+".name", "%q is reserved: every claim carries it", f.Name)
		case fields[f.Name]:
			errs.add(p+".name", "duplicate claim field %q", f.Name)
		}
		fields[f.Name] = true
		switch f.Type {
		case "boolean", "integer", "number", "string":
		default:
			errs.add(p+".type", "must be boolean, integer, number or string, got %q", f.Type)
		}
		if f.Goal && f.Truth == "" {
			errs.add(p+".truth", "a goal field needs a truth path")
		}
		if f.Truth != "" {
			if te, err := ParseTruth(f.Truth); err != nil {
				errs.add(p+".truth", "%v", err)
			} else if te.Func == TruthExists && f.Type != "boolean" {
				errs.add(p+".truth", "exists() is a boolean; the field is %s", f.Type)
			} else if te.Func == TruthCount && f.Type != "integer" && f.Type != "number" {
				errs.add(p+".truth", "count() is an integer; the field is %s", f.Type)
			}
		}
	}
	return fields
}

// validatePlan checks the reference plan's steps against the offered
// tools and the declared claim fields.
func (s *Scenario) validatePlan(errs *problems, offered, fields map[string]bool) {
	if len(s.Plan) == 0 {
		errs.add("plan", "at least one step is required")
	}
	steps := map[string]bool{}
	for i, st := range s.Plan {
		p := fmt.Sprintf("plan[%d]", i)
		if st.ID == "" {
			errs.add(p+".id", "required")
		} else if steps[st.ID] {
			errs.add(p+".id", "duplicate step id %q", st.ID)
		}
		steps[st.ID] = true
		if st.Tool == "" {
			errs.add(p+".tool", "required")
		} else if !offered[st.Tool] {
			errs.add(p+".tool", "tool %q is not offered by this scenario (tools: %s)", st.Tool, strings.Join(s.Tools, ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(st.Sets)) {
			if !fields[k] {
				errs.add(p+".sets."+k, "%q is not a declared claim field", k)
			}
		}
		*errs = append(*errs, s.validateFallbacks(p, st, offered, fields)...)
	}
}

// validateSuccess checks the success assertions.
func (s *Scenario) validateSuccess(errs *problems) {
	for i, a := range s.Success {
		p := fmt.Sprintf("success[%d]", i)
		if a.Path == "" {
			errs.add(p+".path", "required")
		} else if _, err := ParseTruth(a.Path); err != nil {
			errs.add(p+".path", "%v", err)
		}
		if a.Absent && a.Equals != nil {
			errs.add(p+".absent", "absent: true and equals exclude each other")
		}
		if !a.Absent && a.Equals == nil {
			errs.add(p+".equals", "required (or absent: true)")
		}
	}
}

// validateVariants checks the hand-written variants and their faults.
func (s *Scenario) validateVariants(errs *problems, offered map[string]bool) {
	if len(s.Variants) == 0 && len(s.Generate) == 0 {
		errs.add("variants", "at least one variant is required (or generate them: generate: true)")
	}
	names := map[string]bool{}
	for i, v := range s.Variants {
		p := fmt.Sprintf("variants[%d]", i)
		if v.Name == "" {
			errs.add(p+".name", "required")
		} else if names[v.Name] {
			errs.add(p+".name", "duplicate variant name %q", v.Name)
		} else if strings.HasPrefix(v.Name, GeneratedPrefix) {
			errs.add(p+".name", "the prefix %q is reserved for generated variants", GeneratedPrefix)
		}
		names[v.Name] = true
		if v.Weight < 0 {
			errs.add(p+".weight", "must not be negative")
		}
		for j, f := range v.Faults {
			fp := fmt.Sprintf("%s.faults[%d]", p, j)
			if err := f.Validate(); err != nil {
				field, msg, _ := strings.Cut(err.Error(), ": ")
				errs.add(fp+"."+field, "%s", msg)
			}
			if f.Tool != "" && !offered[f.Tool] {
				errs.add(fp+".tool", "tool %q is not offered by this scenario", f.Tool)
			}
		}
	}
}
