package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"rebound/fileerr"
	"rebound/scenario"
	"rebound/trial"
)

const scenarioAbout = `Works with scenario and plan files.

  rebound scenario lint PATH...              check scenario and plan files
  rebound scenario variants [flags] FILE...  list every variant, hand-written and
                                             generated from tool metadata
  rebound scenario import FILE [-o OUT]      convert a recovery-test.yaml scenario
                                             (aiwg-evals format) to a rebound scenario

Run 'rebound scenario SUBCOMMAND -h' for a subcommand's flags.`

func newScenarioCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "scenario lint|variants|import",
		Short: "check, list, generate and import scenarios (scenario lint|variants|import)",
		Long:  scenarioAbout,
	}, newScenarioLintCmd(), newScenarioVariantsCmd(), newScenarioImportCmd())
}

const lintAbout = `Checks scenario and plan files: YAML syntax, unknown fields, duplicate keys,
types, and meaning (tools offered and in the world's catalog, claim fields
declared, fault triggers, generated variants, metamorphic pairs). Every
problem of a file is reported in one pass, with file:line:column and the
field; notes (a default that applies) are printed but are not problems. A
file with a top-level 'arms' key is checked as a plan (with every scenario
it names). Only regular files are read, scenario files up to 4 MiB and plan
files up to 1 MiB. --output json prints one object with every file's
problems and notes.

Example:
  rebound scenario lint examples/scenarios/*.yaml examples/plans/quickstart.yaml
  rebound scenario lint my-scenario.yaml --output json`

func newScenarioLintCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "lint [flags] PATH...",
		Short: "check scenario and plan files",
		Long:  lintAbout,
		Args:  minArgs(1, "scenario lint needs at least one file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lint(cmd.Context(), args, output, cmd.OutOrStdout())
		},
	}
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// lint checks every file of paths and prints every problem, note and
// warning; problems fail it (exit 1).
func lint(ctx context.Context, paths []string, output string, stdout io.Writer) error {
	type problem struct {
		File    string `json:"file"`
		Line    int    `json:"line,omitempty"`
		Column  int    `json:"column,omitempty"`
		Field   string `json:"field,omitempty"`
		Message string `json:"message"`
	}
	type fileResult struct {
		Path     string    `json:"path"`
		Kind     string    `json:"kind"` // scenario or plan
		OK       bool      `json:"ok"`
		Problems []problem `json:"problems"`
		Notes    []problem `json:"notes"`
		// Warnings do not fail lint: a variant whose declared
		// recoverability the realized schedule contradicts for some seeds.
		Warnings []problem `json:"warnings"`
	}
	toProblem := func(e scenario.FieldError) problem {
		return problem{File: e.File, Line: e.Line, Column: e.Col, Field: e.Field, Message: e.Msg}
	}
	var results []fileResult
	problems := 0
	for _, path := range paths {
		res := fileResult{Path: path, Kind: "scenario", Problems: []problem{}, Notes: []problem{}, Warnings: []problem{}}
		var notes []scenario.FieldError
		var warnings []string
		opts := scenario.LoadOptions{Context: ctx, Note: func(e scenario.FieldError) { notes = append(notes, e) }}
		var err error
		if isPlan(path) {
			res.Kind = "plan"
			_, err = loadPlan(ctx, path, opts)
		} else {
			var sc *scenario.Scenario
			if sc, err = loadScenario(ctx, path, opts); err == nil {
				err = checkBaseline(ctx, path, sc)
			}
			if err == nil {
				warnings, err = recoverabilityWarnings(ctx, path, sc)
			}
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		var list scenario.Errors
		switch {
		case err == nil:
		case errors.As(err, &list):
			for _, e := range list {
				res.Problems = append(res.Problems, toProblem(e))
			}
		default:
			res.Problems = append(res.Problems, problem{File: path, Message: err.Error()})
		}
		for _, n := range notes {
			res.Notes = append(res.Notes, toProblem(n))
		}
		for _, w := range warnings {
			res.Warnings = append(res.Warnings, problem{File: path, Message: w})
		}
		res.OK = len(res.Problems) == 0
		problems += len(res.Problems)
		results = append(results, res)
		if output == "json" {
			continue
		}
		if err == nil {
			fmt.Fprintf(stdout, "ok    %s\n", path)
		} else if len(list) > 0 {
			for _, e := range list {
				fmt.Fprintln(stdout, e.Error())
			}
		} else {
			fmt.Fprintf(stdout, "%s: %v\n", path, err)
		}
		for _, n := range notes {
			fmt.Fprintf(stdout, "note: %s\n", n.Error())
		}
		for _, w := range warnings {
			fmt.Fprintf(stdout, "warn  %s: %s\n", path, w)
		}
	}
	if output == "json" {
		if err := json.NewEncoder(stdout).Encode(struct {
			Files    []fileResult `json:"files"`
			Problems int          `json:"problems"`
		}{results, problems}); err != nil {
			return err
		}
	}
	if problems > 0 {
		return failure{fmt.Sprintf("%d problem(s) found", problems)}
	}
	return nil
}

// checkBaseline fails a scenario whose reference plan does not reach the
// goal without any fault: every verdict on it would be meaningless.
func checkBaseline(ctx context.Context, path string, sc *scenario.Scenario) error {
	why, err := trial.Baseline(ctx, sc)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("plan: the reference plan does not reach the goal even without faults: %s", why)
}

// lintSeeds are the seeds lint probes a seed-dependent variant on.
const lintSeeds = 50

// recoverabilityWarnings warns about variants whose declared
// recoverability the realized schedule contradicts for some seeds (a
// warning: verdicts use the realized value per trial).
func recoverabilityWarnings(ctx context.Context, path string, sc *scenario.Scenario) ([]string, error) {
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

// isPlan tells plans from scenarios by their top-level keys.
func isPlan(path string) bool {
	data, err := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "scenario or plan file")
	if err != nil {
		return false // loading it as a scenario reports why
	}
	return scenario.LooksLikePlan(data)
}
