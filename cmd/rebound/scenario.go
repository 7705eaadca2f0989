package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"rebound/core/lint"
)

const scenarioAbout = `Works with scenario and plan files.

  rebound scenario lint PATH...              check scenario, plan and world files
  rebound scenario variants [flags] FILE...  list every variant, hand-written and
                                             generated from tool metadata
  rebound scenario check [flags] FILE...     run the declared metamorphic pairs and
                                             report those that did not hold
  rebound scenario import FILE [-o OUT]      convert an aiwg-evals scenario (recovery,
                                             grounding, distractor tests) to a rebound
                                             scenario

Run 'rebound scenario SUBCOMMAND -h' for a subcommand's flags.`

func newScenarioCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "scenario lint|variants|check|import",
		Short: "check, list, generate and import scenarios (scenario lint|variants|check|import)",
		Long:  scenarioAbout,
	}, newScenarioLintCmd(), newScenarioVariantsCmd(), newScenarioCheckCmd(), newScenarioImportCmd())
}

const lintAbout = `Checks scenario and plan files: YAML syntax, unknown fields, duplicate keys,
types, and meaning (tools offered and in the world's catalog, claim fields
declared, fault triggers, generated variants, metamorphic pairs). Every
problem of a file is reported in one pass, with file:line:column and the
field; notes (a default that applies) are printed but are not problems. A
file with a top-level 'arms' key is checked as a plan (with every scenario
it names); one with top-level 'state' and 'tools' as a declared world (every
template resolves against its state schema, every status tool reconciles a
write), which every scenario naming it is checked against too. Only regular
files are read, scenario files up to 4 MiB, plan and world files up to
1 MiB. --output json prints one object with every file's problems and notes.

Example:
  rebound scenario lint examples/scenarios/*.yaml examples/plans/quickstart.yaml
  rebound scenario lint examples/scenarios/worlds/*.yaml
  rebound scenario lint my-scenario.yaml --output json`

func newScenarioLintCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "lint [flags] PATH...",
		Short: "check scenario and plan files",
		Long:  lintAbout,
		Args:  minArgs(1, "scenario lint needs at least one file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(cmd.Context(), args, output, cmd.OutOrStdout())
		},
	}
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// lint checks every file of paths and prints every problem, note and
// warning; problems fail it (exit 1).
func runLint(ctx context.Context, paths []string, output string, stdout io.Writer) error {
	res, err := interruptible(ctx, func() (lint.Result, error) { return lint.Files(ctx, paths) })
	if err != nil {
		return err
	}
	if output == "json" {
		err = writeJSON(stdout, res, false)
	} else {
		err = res.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if res.Problems > 0 {
		return failure{fmt.Sprintf("%d problem(s) found", res.Problems)}
	}
	return nil
}
