package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"rebound/judge"
)

const judgeAbout = `Reads what the plan's LLM judge (seed 003) left for a sweep. The executable
checks stay the authority on counts, order, permissions and idempotency; the
judge's value is known only by how well it agrees with them.

  rebound judge agreement [flags] SWEEP_ID   agreement with the checks per
                                             dimension: n, rate, Cohen's kappa
  rebound judge queue [flags] SWEEP_ID       trials the judge could not score
                                             (after its retries): for humans

Example:
  rebound judge agreement quickstart-20261129-121500-3fa2c1`

func judgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "agreement" && args[0] != "queue") {
		fmt.Fprintf(stderr, "Usage: rebound judge agreement|queue SWEEP_ID\n\n%s\n", judgeAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("judge needs a subcommand: agreement or queue")
	}
	fs := newFlags("judge "+args[0], "rebound judge "+args[0]+" [flags] SWEEP_ID", judgeAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	if err := parseOneArg(fs, args[1:], output, "judge %s takes exactly one SWEEP_ID", args[0]); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	sweepID := fs.Arg(0)
	if args[0] == "queue" {
		items, err := store.ReviewQueue(ctx, sweepID)
		if err != nil {
			return err
		}
		if *output == "json" {
			return json.NewEncoder(stdout).Encode(items)
		}
		if len(items) == 0 {
			fmt.Fprintf(stdout, "review queue of %s is empty\n", sweepID)
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TRIAL\tSCENARIO\tJUDGE\tATTEMPTS\tREASON")
		for _, it := range items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", it.TrialID, it.Scenario, it.JudgeModel, it.Attempts, it.Reason)
		}
		return tw.Flush()
	}
	pairs, err := judge.PairsFromStore(ctx, store, sweepID)
	if err != nil {
		return err
	}
	dims := judge.Agreement(pairs)
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(dims)
	}
	fmt.Fprintf(stdout, "judge vs executable checks, sweep %s (%d judged trials); judge pass = score >= 4\n\n", sweepID, len(pairs))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DIMENSION\tCOMPARED WITH\tN\tAGREE\tKAPPA\tDISAGREEING TRIALS")
	for _, d := range dims {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", d.Dimension, strings.Join(d.Signals, "+"), d.N, pct(d.Rate), num(d.Kappa), firstN(d.Disagreements, 3))
	}
	return tw.Flush()
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func num(f float64) string {
	if math.IsNaN(f) {
		return "undefined"
	}
	return fmt.Sprintf("%.2f", f)
}

func firstN(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, " ")
	}
	return strings.Join(ids[:n], " ") + fmt.Sprintf(" (+%d more)", len(ids)-n)
}
