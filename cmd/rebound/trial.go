package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"rebound/storage"
)

const trialAbout = `Shows one stored trial: its coordinates, fault schedule, every tool call with
its (redacted) arguments and normalized result, the claim and the verdicts.

Example:
  rebound trial show 3f9a0c1d2e4b5a6978c1d2e3`

func trialCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		fmt.Fprintf(stderr, "Usage: rebound trial show TRIAL_ID\n\n%s\n", trialAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("trial needs a subcommand: show")
	}
	fs := newFlags("trial show", "rebound trial show [flags] TRIAL_ID", trialAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("trial show takes exactly one TRIAL_ID")
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	t, calls, err := store.Trial(ctx, fs.Arg(0))
	if errors.Is(err, storage.ErrNotFound) {
		return usagef("no trial %q in storage", fs.Arg(0))
	}
	if err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"trial": t, "calls": calls})
	}
	fmt.Fprintf(stdout, "trial %s  sweep %s\n", t.TrialID, t.SweepID)
	fmt.Fprintf(stdout, "scenario %s (hash %s)  variant %s  arm %s (%s)  seed %d  catalog %s\n", t.Scenario, t.ScenarioHash, t.Variant, t.Arm, t.Agent, t.Seed, t.CatalogVersion)
	fmt.Fprintf(stdout, "fault schedule: %s\n\n", t.FaultSchedule)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tAT\tTOOL\tFAULT\tRESULT\tARGS")
	for _, c := range calls {
		res := "ok"
		if !c.OK {
			res = c.Code
		}
		if c.Committed {
			res += " (committed)"
		}
		fmt.Fprintf(tw, "%d\t%dms\t%s\t%s\t%s\t%s\n", c.CallIndex, c.AtMS, c.Tool, c.FaultClass, res, c.Args)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nclaim: %s\n", t.Claim)
	fmt.Fprintf(stdout, "verdicts: %s\n", t.Verdicts)
	return nil
}
