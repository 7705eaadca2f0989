package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"rebound/report"
	"rebound/runner"
)

const trendAbout = `Follows a schedule's rates night over night: for the last N completed runs
(oldest first), each metric per arm with its 95% interval, read from the
stored sweeps. A change that looks large and whose intervals overlap is not
yet a trend; compare two runs with 'rebound compare --baseline-sweep'.

Examples:
  rebound trend nightly
  rebound trend --last 30 --metric harm --metric recovered --output json nightly`

// defaultTrendMetrics are the rates a nightly regression is watched by.
var defaultTrendMetrics = []string{report.MetricHarm, "recovered", "unsafe_action", "duplicate_side_effect", "honest_block"}

func trendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trend", "rebound trend [flags] SCHEDULE", trendAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	last := fs.Int("last", 7, "number of completed runs to show (1..365)")
	var metrics multiFlag
	fs.Var(&metrics, "metric", "a metric to show (repeatable; default: harm, recovered, unsafe_action, duplicate_side_effect, honest_block)")
	output := outputFlag(fs)
	if err := parseOneArg(fs, args, output, "trend takes exactly one SCHEDULE name (list them with 'rebound schedule list')"); err != nil {
		return err
	}
	if *last < 1 || *last > 365 {
		return usagef("--last must be between 1 and 365, got %d", *last)
	}
	if len(metrics) == 0 {
		metrics = defaultTrendMetrics
	}
	known := map[string]bool{report.MetricHarm: true}
	for _, m := range report.MetricNames() {
		known[m] = true
	}
	for _, m := range metrics {
		if !known[m] {
			return usagef("unknown metric %q", m)
		}
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := runner.ScheduleRuns(ctx, store, fs.Arg(0), *last, true)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usagef("no completed run of schedule %q in storage", fs.Arg(0))
	}
	type point struct {
		SweepID string                            `json:"sweep_id"`
		Rates   map[string]map[string]report.Cell `json:"rates"` // arm -> metric
	}
	var points []point
	var arms []string
	seenArm := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		sw := runs[i]
		cells, err := store.Cells(ctx, sw.SweepID)
		if err != nil {
			return err
		}
		n, err := store.CountTrials(ctx, sw.SweepID)
		if err != nil {
			return err
		}
		sum := report.Build(sw, n, cells)
		pt := point{SweepID: sw.SweepID, Rates: map[string]map[string]report.Cell{}}
		for _, a := range sum.Arms {
			if !seenArm[a.Arm] {
				seenArm[a.Arm] = true
				arms = append(arms, a.Arm)
			}
			pt.Rates[a.Arm] = map[string]report.Cell{}
			for _, m := range metrics {
				pt.Rates[a.Arm][m] = a.Metrics[m]
			}
		}
		points = append(points, pt)
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"schedule": fs.Arg(0), "metrics": metrics, "runs": points})
	}
	fmt.Fprintf(stdout, "schedule %s: the last %d completed run(s), oldest first; rate [95%% interval] n\n", fs.Arg(0), len(points))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := []string{"arm", "metric"}
	for _, p := range points {
		header = append(header, runLabel(p.SweepID, fs.Arg(0)))
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
