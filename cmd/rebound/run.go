package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/devstack"
	"rebound/report"
	"rebound/runner"
	"rebound/storage"
	"rebound/workflows"
)

const runAbout = `Runs every trial of PLAN and prints the report. By default it starts the
embedded stack itself: a Temporal dev server (a subprocess on a free loopback
port, its SQLite file under --data-dir) and chDB (the ClickHouse engine, data
under --data-dir), plus a worker in this process. Ctrl-C cancels the sweep and
stops everything it started.

Point at existing infrastructure instead with --temporal-address and/or
--clickhouse-dsn (or REBOUND_TEMPORAL_ADDRESS, REBOUND_CLICKHOUSE_DSN); the
in-process worker then polls that cluster's task queue.

Example:
  rebound run examples/plans/quickstart.yaml
  rebound run --output json examples/plans/quickstart.yaml > report.json`

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "rebound run [flags] PLAN", runAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	temporalBin := fs.String("temporal-bin", env("REBOUND_TEMPORAL_BIN", ""), "Temporal CLI for the embedded dev server (env REBOUND_TEMPORAL_BIN; default: the repo's .cache, installed by make setup)")
	output := outputFlag(fs)
	every := fs.Duration("progress-every", 500*time.Millisecond, "how often to refresh progress")
	if err := parseOneArg(fs, args, output, "run takes exactly one PLAN file (got %d arguments); see 'rebound run -h'", fs.NArg()); err != nil {
		return err
	}
	plan, err := preparePlan(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	key, err := localRedactionKey(conn.dataDir)
	if err != nil {
		return err
	}
	status := newStatus(stderr)
	status.linef("plan %s: %d scenarios, %d arms, %d seeds = %d trials", plan.Name, len(plan.Scenarios), len(plan.Arms), len(plan.Seeds), plan.TrialCount())

	address := conn.temporalAddress
	if address == "" {
		bin := *temporalBin
		if bin == "" {
			if bin, err = devstack.LocateTemporal(); err != nil {
				return usageError{err}
			}
		}
		start := time.Now()
		status.linef("starting Temporal dev server...")
		logFile, err := openLog(conn.dataDir, "temporal.log")
		if err != nil {
			return err
		}
		defer logFile.Close()
		srv, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, DataDir: filepath.Join(conn.dataDir, "temporal"), Namespace: conn.namespace, LogWriter: logFile})
		if err != nil {
			return err
		}
		defer srv.Stop()
		address = srv.Address()
		status.linef("Temporal dev server on %s (%.1fs; log in %s)", address, time.Since(start).Seconds(), logFile.Name())
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()

	c, err := conn.dialTemporal(ctx, address, key)
	if err != nil {
		return err
	}
	defer c.Close()
	acts, err := newActivities(store, key)
	if err != nil {
		return err
	}
	w, err := runner.NewWorker(c, conn.taskQueue, acts, runner.WorkerOptions{})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()

	sweepID := runner.NewSweepID(plan.Name, time.Now())
	run, err := runner.StartSweep(ctx, c, conn.taskQueue, sweepID, plan)
	if err != nil {
		return err
	}
	status.linef("sweep %s started (workflow %s)", sweepID, runner.WorkflowID(sweepID))
	final, err := followSweep(ctx, c, run, sweepID, *every, status)
	if err != nil {
		return err
	}
	if final.Status != workflows.StatusCompleted {
		return failure{fmt.Sprintf("sweep %s ended %s", sweepID, final.Status)}
	}
	return printReport(ctx, store, sweepID, *output, stdout)
}

// followSweep shows progress until the sweep ends; on Ctrl-C it cancels the
// workflow before returning.
func followSweep(ctx context.Context, c client.Client, run client.WorkflowRun, sweepID string, every time.Duration, status *status) (workflows.Progress, error) {
	start := time.Now()
	final, err := runner.Follow(ctx, c, run, sweepID, every, func(p workflows.Progress) { status.progress(p, time.Since(start)) })
	status.done()
	if ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if cerr := c.CancelWorkflow(cctx, runner.WorkflowID(sweepID), ""); cerr == nil {
			status.linef("interrupted: sweep %s cancelled; trials already stored stay queryable", sweepID)
		}
		return final, ctx.Err()
	}
	if err != nil {
		return final, fmt.Errorf("sweep %s: %w", sweepID, err)
	}
	status.linef("sweep %s %s: %d trials in %.1fs", sweepID, final.Status, final.TrialsDone, time.Since(start).Seconds())
	return final, nil
}

func printReport(ctx context.Context, store storage.Store, sweepID, output string, stdout io.Writer) error {
	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return usagef("no sweep %q in storage (list them with 'rebound sweeps')", sweepID)
		}
		return err
	}
	stored, err := store.CountTrials(ctx, sweepID)
	if err != nil {
		return err
	}
	cells, err := store.Cells(ctx, sweepID)
	if err != nil {
		return err
	}
	faults, err := store.CaseFaults(ctx, sweepID)
	if err != nil {
		return err
	}
	sum := report.BuildWith(sw, stored, cells, report.Options{Cases: report.CasesFromFaults(faults)})
	if output == "json" {
		return sum.WriteJSON(stdout)
	}
	return sum.WriteText(stdout)
}

func openLog(dataDir, name string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return os.OpenFile(filepath.Join(dataDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// status writes progress to stderr: a redrawn bar on a terminal, a line per
// change (at most every few seconds) otherwise.
type status struct {
	w        io.Writer
	tty      bool
	drawn    bool
	lastLine time.Time
	lastDone int
}

func newStatus(w io.Writer) *status {
	s := &status{w: w, lastDone: -1}
	inner := w
	if t, ok := w.(termWriter); ok {
		inner = t.w
	}
	if f, ok := inner.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			s.tty = true
		}
	}
	return s
}

func (s *status) linef(format string, args ...any) {
	s.done()
	fmt.Fprintf(s.w, format+"\n", args...)
}

func (s *status) progress(p workflows.Progress, elapsed time.Duration) {
	if p.TrialsPlanned == 0 {
		return
	}
	const width = 30
	filled := width * p.TrialsDone / p.TrialsPlanned
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	line := fmt.Sprintf("[%s] %d/%d trials  %d/%d shards  %.1fs", bar, p.TrialsDone, p.TrialsPlanned, p.ShardsDone, p.ShardsTotal, elapsed.Seconds())
	if p.Attrition > 0 {
		line += fmt.Sprintf("  attrition %d", p.Attrition)
	}
	if s.tty {
		fmt.Fprintf(s.w, "\r%s", line)
		s.drawn = true
		return
	}
	if p.TrialsDone != s.lastDone && (time.Since(s.lastLine) > 2*time.Second || p.TrialsDone == p.TrialsPlanned) {
		fmt.Fprintln(s.w, line)
		s.lastLine, s.lastDone = time.Now(), p.TrialsDone
	}
}

func (s *status) done() {
	if s.drawn {
		fmt.Fprintln(s.w)
		s.drawn = false
	}
}
