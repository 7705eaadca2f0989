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

const importAbout = `Converts a scenario of the aiwg-evals suite's format (setup.files, task,
expected_behavior, validation, scoring; for a recovery test also
failure_simulation and alternative_success) into a rebound scenario of the
files world. A test with no failure_simulation (grounding, distractor)
becomes a fault-free variant "base" with generate: true adding the faults.
The validations map to graded checks: file_content and final_state_correct
to success assertions, no_data_loss to assertions that every other value is
kept, tool_sequence ("read before edit") to the reference plan's order,
output_contains ("report only X") to a goal claim field whose truth is X's
place in the workspace (single_source names the file; output_not_contains
is graded by that field's exact value). Constructs that do not map one to
one are reported as notes with file:line:column on stderr and kept as
comments in the output; constructs that cannot be imported, unknown
validation types included, are errors (exit 2), every one of the file at
once. The output is deterministic.

Example:
  rebound scenario import examples/import/recovery-test.yaml -o examples/import/recovery-test.rebound.yaml
  rebound scenario import examples/import/nested-flag-test.yaml --output json`

func newScenarioImportCmd() *cobra.Command {
	var out, output string
	cmd := &cobra.Command{
		Use:   "import [flags] FILE",
		Short: "convert an aiwg-evals scenario (recovery, grounding, distractor tests) to a rebound scenario",
		Long:  importAbout,
		Args:  exactArgs(1, "scenario import takes exactly one FILE"),
		// Its stdout is a file's bytes, not filtered for the terminal.
		Annotations: map[string]string{rawAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return importScenario(args[0], out, output == "json", cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the scenario to this file (default: standard output)")
	choiceFlag(cmd.Flags(), &output, "output", "what stdout holds: the scenario file (text), or a JSON object with the scenario's name, its variants, the notes and the file (the YAML itself without -o)", "text", "json")
	return cmd
}

// imported is `scenario import --output json`: what was imported, the
// notes, and where the scenario went (written: the -o file; yaml: the
// file's text when it went to stdout).
type imported struct {
	Scenario string          `json:"scenario"`
	Variants int             `json:"variants"`
	Notes    []scenario.Note `json:"notes"`
	Written  string          `json:"written,omitempty"`
	YAML     string          `json:"yaml,omitempty"`
}

// importScenario converts the recovery-test file at path and writes the
// scenario to out (stdout when empty or -), its notes to stderr; with
// asJSON stdout holds the imported object instead of the file.
func importScenario(path, out string, asJSON bool, stdout, stderr io.Writer) error {
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
	res := imported{Scenario: im.Scenario.Name, Variants: len(im.Scenario.Variants), Notes: im.Notes}
	if out == "" || out == "-" {
		if asJSON {
			res.YAML = string(im.YAML)
			return writeJSON(stdout, res, true)
		}
		_, err := stdout.Write(im.YAML)
		return err
	}
	if err := os.WriteFile(out, im.YAML, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: scenario %s, %d variants, %d note(s)\n", out, im.Scenario.Name, len(im.Scenario.Variants), len(im.Notes))
	if asJSON {
		res.Written = out
		return writeJSON(stdout, res, true)
	}
	return nil
}
