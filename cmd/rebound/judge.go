package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/storage"
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

func newJudgeCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "judge agreement|queue",
		Short: "the LLM judge's agreement with the checks, and its review queue",
		Long:  judgeAbout,
	},
		judgeSubcommand("agreement", "agreement with the checks per dimension: n, rate, Cohen's kappa", judgeAgreement),
		judgeSubcommand("queue", "trials the judge could not score, for humans", judgeQueue))
}

// judgeSubcommand builds a judge subcommand reading one stored sweep.
func judgeSubcommand(name, short string, run func(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error) *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   name + " [flags] SWEEP_ID",
		Short: short,
		Long:  judgeAbout,
		Args:  exactArgs(1, "judge "+name+" takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := conn.openExistingStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			// An unknown sweep is an error (exit 2), not an empty queue.
			if _, err := store.Sweep(ctx, args[0]); err != nil {
				return fmt.Errorf("no sweep %q in storage (list them with 'rebound sweeps'): %w", args[0], err)
			}
			return run(ctx, store, args[0], output, cmd.OutOrStdout())
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}

func judgeQueue(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error {
	items, err := store.ReviewQueue(ctx, sweepID)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, items, false)
	}
	if len(items) == 0 {
		fmt.Fprintf(stdout, "review queue of %s is empty\n", sweepID)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRIAL\tSCENARIO\tJUDGE\tATTEMPTS\tREASON")
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", it.TrialID, termSafe(it.Scenario, false), termSafe(it.JudgeModel, false), it.Attempts, termSafe(it.Reason, false))
	}
	return tw.Flush()
}

func judgeAgreement(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error {
	pairs, err := judgestore.PairsFromStore(ctx, store, sweepID)
	if err != nil {
		return err
	}
	dims := judge.Agreement(pairs)
	if output == "json" {
		return writeJSON(stdout, dims, false)
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
