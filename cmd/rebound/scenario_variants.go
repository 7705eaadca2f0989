package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world"
)

const variantsAbout = `Lists every variant of scenario files: the hand-written ones and those
generated from the world's tool metadata (generate: true or a list of kinds),
with whether each is recoverable and why. --all shows what generate: true
would add to a scenario that does not opt in.

Example:
  rebound scenario variants examples/scenarios/refund-timeout-after-send.yaml
  rebound scenario variants examples/scenarios/*.yaml --all --output json`

func newScenarioVariantsCmd() *cobra.Command {
	var (
		output string
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "variants [flags] FILE...",
		Short: "list every variant, hand-written and generated from tool metadata",
		Long:  variantsAbout,
		Args:  minArgs(1, "scenario variants needs at least one scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return listVariants(args, all, output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also generate every kind for scenarios that do not opt in")
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// listVariants prints every variant of the scenario files at paths.
func listVariants(paths []string, all bool, output string, stdout io.Writer) error {
	type listed struct {
		Scenario string             `json:"scenario"`
		File     string             `json:"file"`
		Variants []scenario.Variant `json:"variants"`
	}
	var out []listed
	for _, path := range paths {
		if err := expectKind(path, scenario.KindScenario, "scenario variants"); err != nil {
			return err
		}
		s, err := scenario.LoadScenario(path, world.Catalog)
		if err != nil {
			return usageError{err}
		}
		if all && len(s.Generate) == 0 {
			cat, err := world.Catalog(s.WorldRef())
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			s.Variants = append(s.Variants, scenario.Generate(s, cat)...)
		}
		out = append(out, listed{Scenario: s.Name, File: path, Variants: s.Variants})
	}
	if output == "json" {
		return writeJSON(stdout, out, true)
	}
	for i, l := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		generated := 0
		for _, v := range l.Variants {
			if v.Generated != nil {
				generated++
			}
		}
		fmt.Fprintf(stdout, "%s (%s): %d variants, %d hand-written, %d generated\n", l.Scenario, l.File, len(l.Variants), len(l.Variants)-generated, generated)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VARIANT\tRECOVERABLE\tFAULTS\tWHY")
		for _, v := range l.Variants {
			why := ""
			if v.Generated != nil {
				why = v.Generated.Reason
			}
			fmt.Fprintf(tw, "%s\t%t\t%s\t%s\n", v.Name, v.Recoverable, faultSummary(v.Faults), why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// faultSummary is a one-line description of a fault schedule.
func faultSummary(faults []harness.Fault) string {
	parts := make([]string, 0, len(faults))
	for _, f := range faults {
		when := ""
		switch {
		case len(f.Attempts) > 0:
			when = fmt.Sprintf("attempts %v", f.Attempts)
		case f.From > 0 && f.Count > 0:
			when = fmt.Sprintf("attempts %d..%d", f.From, f.From+f.Count-1)
		case f.From > 0:
			when = fmt.Sprintf("from attempt %d", f.From)
		case f.Always:
			when = "always"
		case f.Call > 0:
			when = fmt.Sprintf("call %d", f.Call)
		}
		p := fmt.Sprintf("%s %s %s", f.Tool, f.Class, when)
		if f.Probability > 0 {
			p += fmt.Sprintf(" p=%g", f.Probability)
		}
		parts = append(parts, strings.TrimSpace(p))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
