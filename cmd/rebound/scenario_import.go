package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"rebound/fileerr"
	"rebound/harness"
	"rebound/scenario"
	"rebound/world"
)

// parseInterspersed parses flags that may come after positional arguments
// ("import FILE -o OUT") and returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

const variantsAbout = `Lists every variant of scenario files: the hand-written ones and those
generated from the world's tool metadata (generate: true or a list of kinds),
with whether each is recoverable and why. --all shows what generate: true
would add to a scenario that does not opt in.

Example:
  rebound scenario variants examples/scenarios/refund-timeout-after-send.yaml
  rebound scenario variants --all --output json examples/scenarios/*.yaml`

func scenarioVariants(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scenario variants", "rebound scenario variants [flags] FILE...", variantsAbout, stderr)
	all := fs.Bool("all", false, "also generate every kind for scenarios that do not opt in")
	output := outputFlag(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("scenario variants needs at least one scenario file")
	}
	type listed struct {
		Scenario string             `json:"scenario"`
		File     string             `json:"file"`
		Variants []scenario.Variant `json:"variants"`
	}
	var out []listed
	for _, path := range files {
		s, err := scenario.LoadScenario(path, world.Catalog)
		if err != nil {
			return usageError{err}
		}
		if *all && len(s.Generate) == 0 {
			cat, err := world.Catalog(s.World)
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			s.Variants = append(s.Variants, scenario.Generate(s, cat)...)
		}
		out = append(out, listed{Scenario: s.Name, File: path, Variants: s.Variants})
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
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

const importAbout = `Converts a scenario in the recovery-test.yaml format (the aiwg-evals suite:
setup.files, failure_simulation, task, expected_behavior, validation,
scoring, alternative_success) into a rebound scenario of the files world.
Constructs that do not map one to one are reported as notes with
file:line:column on stderr and kept as comments in the output; constructs
that cannot be imported are errors (exit 2). The output is deterministic.

Example:
  rebound scenario import examples/import/recovery-test.yaml -o examples/import/recovery-test.rebound.yaml`

func scenarioImport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scenario import", "rebound scenario import [-o OUT] FILE", importAbout, stderr)
	out := fs.String("o", "", "write the scenario to this file (default: standard output)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usagef("scenario import takes exactly one FILE")
	}
	data, err := fileerr.ReadRegular(files[0], scenario.MaxScenarioBytes, "file to import")
	if err != nil {
		return usageError{err}
	}
	im, err := scenario.ImportRecoveryTest(files[0], data, scenario.ImportOptions{Catalog: world.Catalog})
	if err != nil {
		var list scenario.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e.Error())
			}
			return usagef("%s: %d construct(s) cannot be imported", files[0], len(list))
		}
		return usageError{err}
	}
	for _, n := range im.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if *out == "" || *out == "-" {
		_, err := stdout.Write(im.YAML)
		return err
	}
	if err := os.WriteFile(*out, im.YAML, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: scenario %s, %d variants, %d note(s)\n", *out, im.Scenario.Name, len(im.Scenario.Variants), len(im.Notes))
	return nil
}
