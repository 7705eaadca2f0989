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
                                             dimension, and of the judge and
                                             the checks with the human
                                             verdicts set in 'rebound ui':
                                             n, rate, Cohen's kappa [95%]
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
		sweepSubcommand("judge", "agreement", "agreement with the checks and with people per dimension: n, rate, Cohen's kappa", judgeAbout, judgeAgreement),
		sweepSubcommand("judge", "queue", "trials the judge could not score, for humans", judgeAbout, judgeQueue))
}

// sweepSubcommand builds the subcommand name of group (judge, review)
// reading one stored sweep, with the storage flags and --output.
func sweepSubcommand(group, name, short, long string, run func(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error) *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   name + " [flags] SWEEP_ID",
		Short: short,
		Long:  long,
		Args:  exactArgs(1, group+" "+name+" takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
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
	a, err := judgestore.LoadAgreement(ctx, store, sweepID)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, a, false)
	}
	fmt.Fprintf(stdout, "judge vs executable checks, sweep %s (%d judged trials); judge pass = score >= %d; kappa [%.0f%% interval]\n\n",
		sweepID, a.JudgedTrials, judge.PassScore, judge.AgreementConfidence*100)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DIMENSION\tCOMPARED WITH\tN\tAGREE\tKAPPA\tDISAGREEING TRIALS")
	for _, d := range a.JudgeVsChecks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", d.Dimension, strings.Join(d.Signals, "+"), d.N, pct(d.Rate), kappaCell(d.Kappa, d.KappaLo, d.KappaHi), firstN(d.Disagreements, 3))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.VsHumans) == 0 {
		_, err := fmt.Fprintf(stdout, "\nno human verdicts yet (set them in 'rebound ui')\n")
		return err
	}
	fmt.Fprintf(stdout, "\njudge and checks vs human verdicts (%d reviewed trials)\n\n", a.ReviewedTrials)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tRATER\tN\tAGREE\tKAPPA\tDISAGREEING TRIALS")
	for _, h := range a.VsHumans {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", h.Target, h.Rater, h.N, pct(h.Rate), kappaCell(h.Kappa, h.KappaLo, h.KappaHi), firstN(h.Disagreements, 3))
	}
	return tw.Flush()
}

// kappaCell is a kappa with its interval, or "undefined".
func kappaCell(k, lo, hi float64) string {
	if math.IsNaN(k) {
		return "undefined"
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", k, lo, hi)
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func firstN(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, " ")
	}
	return strings.Join(ids[:n], " ") + fmt.Sprintf(" (+%d more)", len(ids)-n)
}
