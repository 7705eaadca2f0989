// Package lint checks scenario, plan and declared world files and reports
// every problem of a file at once: syntax, unknown fields, types and
// meaning (through the scenario loader and the declared world compiler:
// every template resolves against the state schema, every status tool
// reconciles a write), a reference plan that cannot reach the goal without
// faults, and, as warnings, variants whose declared recoverability the
// realized fault schedule contradicts for some seeds.
package lint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/fileerr"
)

// Problem is one located finding.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	text    string // as printed for people
}

func fieldProblem(e scenario.FieldError) Problem {
	return Problem{File: e.File, Line: e.Line, Column: e.Col, Field: e.Field, Message: e.Msg, text: e.Error()}
}

// File is what lint found in one file.
type File struct {
	Path     string    `json:"path"`
	Kind     string    `json:"kind"` // scenario, plan or world
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems"`
	// Notes are defaults that apply; they are not problems.
	Notes []Problem `json:"notes"`
	// Warnings do not fail lint: a variant whose declared recoverability
	// the realized schedule contradicts for some seeds.
	Warnings []Problem `json:"warnings"`
}

// Result is what lint found in every file.
type Result struct {
	Files    []File `json:"files"`
	Problems int    `json:"problems"`
}

// Files checks every file of paths: one with a top-level "arms" (or
// "matrix") key as a plan, with every scenario it names; a declared
// world's file (top-level "state" and "tools") as a world; any other as a
// scenario. Only a cancelled ctx is an error; what is wrong with a file is
// in the result.
func Files(ctx context.Context, paths []string) (Result, error) {
	res := Result{Files: []File{}}
	for _, path := range paths {
		f, err := check(ctx, path)
		if err != nil {
			return res, err
		}
		res.Problems += len(f.Problems)
		res.Files = append(res.Files, f)
	}
	return res, nil
}

func check(ctx context.Context, path string) (File, error) {
	f := File{Path: path, Kind: scenario.KindScenario, Problems: []Problem{}, Notes: []Problem{}, Warnings: []Problem{}}
	opts := scenario.LoadOptions{Catalog: world.Catalog, Context: ctx, Note: func(e scenario.FieldError) { f.Notes = append(f.Notes, fieldProblem(e)) }}
	var (
		err      error
		warnings []string
	)
	switch kindOf(path) {
	case scenario.KindPlan:
		f.Kind = scenario.KindPlan
		var plan *scenario.Resolved
		if plan, err = scenario.LoadPlanWith(path, opts); err == nil {
			err = checkPlanBaselines(ctx, plan)
		}
	case scenario.KindWorld:
		f.Kind = scenario.KindWorld
		err = world.CheckFile(path)
	default:
		var sc *scenario.Scenario
		if sc, err = scenario.LoadScenarioWith(path, opts); err == nil {
			err = locateInitial(path, checkBaseline(ctx, sc))
		}
		if err == nil {
			warnings, err = recoverabilityWarnings(ctx, sc)
		}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return f, err
	}
	var list scenario.Errors
	switch {
	case err == nil:
	case errors.As(err, &list):
		for _, e := range list {
			f.Problems = append(f.Problems, fieldProblem(e))
		}
	default:
		f.Problems = append(f.Problems, Problem{File: path, Message: err.Error(), text: fmt.Sprintf("%s: %v", path, err)})
	}
	for _, w := range warnings {
		f.Warnings = append(f.Warnings, Problem{File: path, Message: w, text: path + ": " + w})
	}
	f.OK = len(f.Problems) == 0
	return f, nil
}

// WriteText prints the result for people: "ok    FILE" or each problem
// (file:line:column: field: message), then notes and warnings.
func (r *Result) WriteText(w io.Writer) error {
	for _, f := range r.Files {
		if f.OK {
			if _, err := fmt.Fprintf(w, "ok    %s\n", f.Path); err != nil {
				return err
			}
		}
		for _, p := range f.Problems {
			fmt.Fprintln(w, p.text)
		}
		for _, n := range f.Notes {
			fmt.Fprintf(w, "note: %s\n", n.text)
		}
		for _, x := range f.Warnings {
			fmt.Fprintf(w, "warn  %s\n", x.text)
		}
	}
	return nil
}

// checkBaseline fails a scenario whose reference plan does not reach the
// goal without any fault: every verdict on it would be meaningless.
// It is trial.Runnable, the refusal `rebound run` shares.
func checkBaseline(ctx context.Context, sc *scenario.Scenario) error {
	return trial.Runnable(ctx, sc)
}

// checkPlanBaselines refuses a plan one of whose scenarios lint refuses
// on its own for its reference plan, as `rebound run` does.
func checkPlanBaselines(ctx context.Context, plan *scenario.Resolved) error {
	var errs []error
	for _, sc := range plan.Scenarios {
		if err := trial.Runnable(ctx, sc); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, fmt.Errorf("%s: %w", sc.File, err))
		}
	}
	return errors.Join(errs...)
}

// lintSeeds are the seeds lint probes a seed-dependent variant on.
const lintSeeds = 50

// recoverabilityWarnings warns about variants whose declared
// recoverability the realized schedule contradicts for some seeds (a
// warning: verdicts use the realized value per trial).
func recoverabilityWarnings(ctx context.Context, sc *scenario.Scenario) ([]string, error) {
	seeds := make([]uint64, lintSeeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	ms, err := trial.DeclaredMismatches(ctx, sc, seeds)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		what := "no authorized path exists within the budgets and retry limit"
		if !m.Declared {
			what = "an authorized path exists"
		}
		if m.Probed == 1 {
			out = append(out, fmt.Sprintf("variant %s: declared recoverable: %t, but %s (verdicts use the realized value)", m.Variant, m.Declared, what))
			continue
		}
		out = append(out, fmt.Sprintf("variant %s: declared recoverable: %t, but for %d of seeds 1..%d %s (verdicts use the realized value per trial); e.g. seed %d",
			m.Variant, m.Declared, len(m.Seeds), m.Probed, what, m.Seeds[0]))
	}
	return out, nil
}

// kindOf tells plans, scenarios and declared worlds apart by their
// top-level keys.
func kindOf(path string) string {
	data, err := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "scenario or plan file")
	if err != nil {
		return scenario.KindScenario // loading it as a scenario reports why
	}
	return scenario.KindOf(data)
}

// locateInitial places a declared world's refusal of the scenario's
// initial state at the field of initial: it names (file:line:column); any
// other error is returned as it is.
func locateInitial(path string, err error) error {
	var ie *world.InitialError
	if !errors.As(err, &ie) {
		return err
	}
	field := "initial"
	if ie.Path != "" {
		field += "." + ie.Path
	}
	fe := scenario.FieldError{File: path, Field: field, Msg: fmt.Sprintf("world %s refuses the initial state: %s", ie.World, ie.Msg)}
	data, rerr := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "scenario file")
	var root yaml.Node
	if rerr == nil && yaml.Unmarshal(data, &root) == nil && len(root.Content) > 0 {
		n := root.Content[0]
		for _, seg := range strings.Split(field, ".") {
			next := valueOf(n, seg)
			if next == nil {
				break
			}
			fe.Line, fe.Col = next.key.Line, next.key.Column
			n = next.value
		}
	}
	return scenario.Errors{fe}
}

type keyValue struct{ key, value *yaml.Node }

// valueOf finds a key of a mapping node.
func valueOf(n *yaml.Node, key string) *keyValue {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return &keyValue{n.Content[i], n.Content[i+1]}
		}
	}
	return nil
}
