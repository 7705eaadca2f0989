package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/internal/runner"
	"rebound/results/report"
)

const trendAbout = `Follows a schedule's rates night over night: for the last N completed runs
(oldest first), each metric per arm with its 95% interval, read from the
stored sweeps. A change that looks large and whose intervals overlap is not
yet a trend; compare two runs with 'rebound compare --baseline-sweep'.

Examples:
  rebound trend nightly
  rebound trend nightly --last 30 --metric harm --metric recovered --output json`

func newTrendCmd() *cobra.Command {
	var (
		conn    connection
		output  string
		last    int
		metrics []string
	)
	cmd := &cobra.Command{
		Use:   "trend [flags] SCHEDULE",
		Short: "a schedule's rates per arm over its last runs, with intervals",
		Long:  trendAbout,
		Args:  exactArgs(1, "trend takes exactly one SCHEDULE name (list them with 'rebound schedule list')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return trend(cmd.Context(), &conn, args[0], last, metrics, output, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	conn.storageFlags(fs)
	intFlag(fs, &last, "last", 7, 1, 365, "number of completed runs to show")
	fs.StringArrayVar(&metrics, "metric", nil, "a metric to show (repeatable; default: harm, recovered, unsafe_action, duplicate_side_effect, honest_block)")
	outputFlag(fs, &output)
	return cmd
}

// trend prints the rates of the last completed runs of schedule.
func trend(ctx context.Context, conn *connection, schedule string, last int, metrics []string, output string, stdout io.Writer) error {
	// Checked before the store opens: a typo costs nothing.
	if err := report.CheckMetrics(metrics); err != nil {
		return err
	}
	store, err := conn.openReadStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := runner.ScheduleRuns(ctx, store, schedule, last, true)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usagef("no completed run of schedule %q in storage", schedule)
	}
	tr, err := report.LoadTrend(ctx, store, runs, metrics)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, map[string]any{"schedule": schedule, "metrics": tr.Metrics, "runs": tr.Runs}, false)
	}
	return writeTrend(&tr, schedule, stdout)
}

// writeTrend prints a trend as a table: a row per arm and metric, a column
// per run.
func writeTrend(tr *report.Trend, schedule string, stdout io.Writer) error {
	points, arms, metrics := tr.Runs, tr.Arms, tr.Metrics
	fmt.Fprintf(stdout, "schedule %s: the last %d completed run(s), oldest first; rate [95%% interval] n\n", schedule, len(points))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := []string{"arm", "metric"}
	for _, p := range points {
		header = append(header, runLabel(p.SweepID, schedule))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, arm := range arms {
		for _, m := range metrics {
			row := []string{arm, m}
			for _, p := range points {
				c, ok := p.Rates[arm][m]
				if !ok {
					row = append(row, "-")
					continue
				}
				row = append(row, c.String())
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	return tw.Flush()
}

// runLabel shortens a scheduled run's sweep id to its start time.
func runLabel(sweepID, schedule string) string {
	return strings.TrimPrefix(sweepID, runner.ScheduledSweepPrefix(schedule))
}
