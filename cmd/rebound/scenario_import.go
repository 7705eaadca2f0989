package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/fileerr"
)

const importAbout = `Converts a scenario in the recovery-test.yaml format (the aiwg-evals suite:
setup.files, failure_simulation, task, expected_behavior, validation,
scoring, alternative_success) into a rebound scenario of the files world.
Constructs that do not map one to one are reported as notes with
file:line:column on stderr and kept as comments in the output; constructs
that cannot be imported are errors (exit 2). The output is deterministic.

Example:
  rebound scenario import examples/import/recovery-test.yaml -o examples/import/recovery-test.rebound.yaml`

func newScenarioImportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "import [flags] FILE",
		Short: "convert a recovery-test.yaml scenario (aiwg-evals format) to a rebound scenario",
		Long:  importAbout,
		Args:  exactArgs(1, "scenario import takes exactly one FILE"),
		// Its stdout is a file's bytes, not filtered for the terminal.
		Annotations: map[string]string{rawAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return importScenario(args[0], out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the scenario to this file (default: standard output)")
	return cmd
}

// importScenario converts the recovery-test file at path and writes the
// scenario to out (stdout when empty or -), its notes to stderr.
func importScenario(path, out string, stdout, stderr io.Writer) error {
	data, err := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "file to import")
	if err != nil {
		return usageError{err}
	}
	im, err := scenario.ImportRecoveryTest(path, data, scenario.ImportOptions{Catalog: world.Catalog})
	if err != nil {
		var list scenario.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e.Error())
			}
			return usagef("%s: %d construct(s) cannot be imported", path, len(list))
		}
		return usageError{err}
	}
	for _, n := range im.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if out == "" || out == "-" {
		_, err := stdout.Write(im.YAML)
		return err
	}
	if err := os.WriteFile(out, im.YAML, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: scenario %s, %d variants, %d note(s)\n", out, im.Scenario.Name, len(im.Scenario.Variants), len(im.Notes))
	return nil
}
