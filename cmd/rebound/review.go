package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/results/judge/judgestore"
)

const reviewAbout = `Writes out the human verdicts set in 'rebound ui' for a calibration dataset
(seed 003): per reviewed trial and target (outcome:METRIC or judge:DIMENSION),
the person's verdict, name, note and time, beside the checks' verdict and the
judge's score and justification on the same target. Only the verdicts in
force are written (the latest change per trial and target; withdrawn ones are
left out); every change stays in the reviews table.

Example:
  rebound review export --output json quickstart-20261129-121500-3fa2c1 > calibration.json`

func newReviewCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "review export",
		Short: "human verdicts from 'rebound ui', exported for calibration",
		Long:  reviewAbout,
	}, newReviewExportCmd())
}

func newReviewExportCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "export [flags] SWEEP_ID",
		Short: "a sweep's human verdicts beside the checks' and the judge's",
		Long:  reviewAbout,
		Args:  exactArgs(1, "review export takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := conn.openExistingStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if _, err := store.Sweep(ctx, args[0]); err != nil {
				return fmt.Errorf("no sweep %q in storage (list them with 'rebound sweeps'): %w", args[0], err)
			}
			rows, err := judgestore.ExportReviews(ctx, store, args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), rows, false)
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "no human verdicts in sweep %s (set them in 'rebound ui')\n", args[0])
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TRIAL\tTARGET\tHUMAN\tCHECKS\tJUDGE\tREVIEWER\tNOTE")
			for _, r := range rows {
				judgeScore := "-"
				if r.JudgeScore > 0 {
					judgeScore = fmt.Sprint(r.JudgeScore)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.TrialID, r.Target, r.Human, orDash(r.Checks), judgeScore,
					termSafe(r.Reviewer, false), termSafe(r.Note, false))
			}
			return tw.Flush()
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
