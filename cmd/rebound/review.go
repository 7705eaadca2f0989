package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/results/judge/judgestore"
	"rebound/storage"
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
	return sweepSubcommand("review", "export", "a sweep's human verdicts beside the checks' and the judge's", reviewAbout, reviewExport)
}

func reviewExport(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error {
	rows, err := judgestore.ExportReviews(ctx, store, sweepID)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, rows, false)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintf(stdout, "no human verdicts in sweep %s (set them in 'rebound ui')\n", sweepID)
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
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
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
