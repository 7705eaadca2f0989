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
	"go.temporal.io/sdk/worker"

	"rebound/activities"
	"rebound/devstack"
	"rebound/report"
	"rebound/runner"
	"rebound/scenario"
	"rebound/storage"
	"rebound/workflows"
)

const runAbout = `Runs every trial of PLAN and prints the report. By default it starts the
embedded stack itself: a Temporal dev server (a subprocess on a free loopback
port, its SQLite file under --data-dir) and chDB (the ClickHouse engine, data
under --data-dir), plus a worker in this process. Ctrl-C cancels the sweep,
records it as cancelled and stops everything it started.

On the embedded stack each sweep has its own task queue, polled only by the
process running it. A sweep left unfinished in the data dir (the process was
killed) is never run behind your back: run says so, and you either resume it
(--resume ID, no PLAN) or cancel it ('rebound sweep cancel ID').

Point at existing infrastructure instead with --temporal-address and/or
--clickhouse-dsn (or REBOUND_TEMPORAL_ADDRESS, REBOUND_CLICKHOUSE_DSN); the
in-process worker then polls that cluster's task queue.

Example:
  rebound run examples/plans/quickstart.yaml
  rebound run --output json examples/plans/quickstart.yaml > report.json
  rebound run --resume quickstart-20261129-124700-21fe74`

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "rebound run [flags] PLAN | rebound run --resume SWEEP_ID", runAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	temporalBin := fs.String("temporal-bin", env("REBOUND_TEMPORAL_BIN", ""), "Temporal CLI for the embedded dev server (env REBOUND_TEMPORAL_BIN; default: the repo's .cache, installed by make setup)")
	output := outputFlag(fs)
	every := fs.Duration("progress-every", 500*time.Millisecond, "how often to refresh progress")
	resume := fs.String("resume", "", "resume the unfinished sweep SWEEP_ID of the data dir (or cluster) instead of starting a PLAN")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	var plan *scenario.Resolved
	status := newStatus(stderr)
	switch {
	case *resume != "" && fs.NArg() != 0:
		return usagef("run --resume takes no PLAN (got %d arguments); see 'rebound run -h'", fs.NArg())
	case *resume == "" && fs.NArg() != 1:
		return usagef("run takes exactly one PLAN file (got %d arguments); see 'rebound run -h'", fs.NArg())
	case *resume == "":
		var err error
		if plan, err = preparePlan(ctx, fs.Arg(0)); err != nil {
			return err
		}
		status.linef("plan %s: %d scenarios, %d arms, %d seeds = %d trials; shards of %d, %d in flight", plan.Name, len(plan.Scenarios), len(plan.Arms), len(plan.Seeds), plan.TrialCount(), plan.ShardSize, plan.Concurrency)
	}

	key, err := localRedactionKey(conn.dataDir)
	if err != nil {
		return err
	}
	tel, err := setupTelemetry(ctx, false, stderr)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, stderr)
	embedded := conn.temporalAddress == ""
	address, stopServer, err := startTemporal(ctx, &conn, *temporalBin, status)
	if err != nil {
		return err
	}
	defer stopServer()
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

	var (
		sweepID string
		queue   = conn.taskQueue
	)
	if *resume != "" {
		sweepID = *resume
		st, err := runner.DescribeSweep(ctx, c, key, sweepID)
		if err != nil {
			return err
		}
		if !st.Running() {
			what := "unknown to Temporal"
			if st.Found {
				what = st.Status
			}
			return usagef("sweep %s is not running (%s); nothing to resume (list sweeps with 'rebound sweeps')", sweepID, what)
		}
		queue = st.TaskQueue
	} else {
		sweepID = runner.NewSweepID(plan.Name, time.Now())
		if embedded {
			queue = runner.RunQueue(sweepID)
			if err := warnUnfinished(ctx, c, store, conn.dataDir, status); err != nil {
				return err
			}
		}
	}

	acts, err := newActivities(store, key)
	if err != nil {
		return err
	}
	w, err := runner.NewWorker(c, queue, acts, runner.WorkerOptions{})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	// Stop the worker, then wait for its last write, before the store
	// closes (deferred earlier, so it runs later).
	defer stopWorker(w, acts, status)

	planName := ""
	if plan != nil {
		planName = plan.Name
	}
	ctx, span := runner.StartSweepSpan(ctx, sweepID, planName)
	defer span.End()
	var run client.WorkflowRun
	if *resume != "" {
		run = c.GetWorkflow(ctx, runner.WorkflowID(sweepID), "")
		status.linef("resuming sweep %s (workflow %s, task queue %s)", sweepID, runner.WorkflowID(sweepID), queue)
	} else {
		if run, err = runner.StartSweep(ctx, c, queue, sweepID, plan); err != nil {
			return err
		}
		status.linef("sweep %s started (workflow %s)", sweepID, runner.WorkflowID(sweepID))
	}
	final, err := followSweep(ctx, c, run, sweepID, *every, status)
	if err != nil {
		return err
	}
	if err := sweepOutcome(sweepID, final); err != nil {
		return err
	}
	return printReport(ctx, store, sweepID, *output, stdout)
}

// startTemporal starts the embedded dev server when no address is set and
// returns the address to dial, and how to stop what it started.
func startTemporal(ctx context.Context, conn *connection, temporalBin string, status *status) (string, func(), error) {
	if conn.temporalAddress != "" {
		return conn.temporalAddress, func() {}, nil
	}
	bin := temporalBin
	if bin == "" {
		var err error
		if bin, err = devstack.LocateTemporal(); err != nil {
			return "", nil, usageError{err}
		}
	}
	start := time.Now()
	status.linef("starting Temporal dev server...")
	logFile, err := openLog(conn.dataDir, "temporal.log")
	if err != nil {
		return "", nil, err
	}
	srv, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, DataDir: filepath.Join(conn.dataDir, "temporal"), Namespace: conn.namespace, LogWriter: logFile})
	if err != nil {
		logFile.Close()
		return "", nil, err
	}
	status.linef("Temporal dev server on %s (%.1fs; log in %s)", srv.Address(), time.Since(start).Seconds(), logFile.Name())
	return srv.Address(), func() { srv.Stop(); logFile.Close() }, nil
}

// stopWorker stops a worker (its shards get runner.DefaultStopTimeout to
// finish, then hand the rest back) and waits for the activities' last
// write.
func stopWorker(w worker.Worker, acts *activities.Activities, status *status) {
	w.Stop()
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := acts.Drain(dctx); err != nil {
		status.linef("warning: a shard was still writing 30s after the worker stopped")
	}
}

// warnUnfinished tells the user about unfinished sweeps of the embedded
// data dir: their shards do not run here unless resumed.
func warnUnfinished(ctx context.Context, c client.Client, store storage.Store, dataDir string, status *status) error {
	open, err := runner.OpenSweeps(ctx, c)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, o := range open {
		seen[o.SweepID] = true
		n, _ := store.CountTrials(ctx, o.SweepID)
		planned := uint64(0)
		if sw, err := store.Sweep(ctx, o.SweepID); err == nil {
			planned = sw.TrialsPlanned
		}
		status.linef("note: %s holds an unfinished sweep %s (started %s, %d of %d trials stored); it does not run now: resume it with 'rebound run --resume %s' or cancel it with 'rebound sweep cancel %s'",
			dataDir, o.SweepID, o.StartedAt.Local().Format("2006-01-02 15:04"), n, planned, o.SweepID, o.SweepID)
	}
	sweeps, err := store.Sweeps(ctx, 0)
	if err != nil {
		return err
	}
	for _, sw := range sweeps {
		if sw.Status == storage.SweepRunning && !seen[sw.SweepID] {
			status.linef("note: sweep %s is stored as running but its workflow is gone (orphaned); mark it with 'rebound sweep cancel %s'", sw.SweepID, sw.SweepID)
		}
	}
	return nil
}

// sweepOutcome turns a finished sweep's progress into the command's error:
// a sweep that did not complete, or whose every trial was lost to
// attrition (nothing was measured), fails.
func sweepOutcome(sweepID string, final workflows.Progress) error {
	if final.Status != workflows.StatusCompleted {
		return failure{fmt.Sprintf("sweep %s ended %s", sweepID, final.Status)}
	}
	if final.TrialsPlanned > 0 && final.Attrition >= final.TrialsPlanned {
		return failure{fmt.Sprintf("sweep %s: all %d trials were lost to attrition (the provider kept failing); nothing was measured", sweepID, final.TrialsPlanned)}
	}
	return nil
}

// followSweep shows progress until the sweep ends. On Ctrl-C it cancels
// the workflow and waits (briefly) until the sweep recorded its status
// cancelled, while this process's worker still runs.
func followSweep(ctx context.Context, c client.Client, run client.WorkflowRun, sweepID string, every time.Duration, status *status) (workflows.Progress, error) {
	start := time.Now()
	final, err := runner.Follow(ctx, c, run, sweepID, every, func(p workflows.Progress) { status.progress(p, time.Since(start)) })
	status.done()
	if ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if cerr := runner.CancelSweep(cctx, c, sweepID); cerr != nil {
			status.linef("interrupted: could not cancel sweep %s: %v", sweepID, cerr)
			return final, ctx.Err()
		}
		if _, werr := runner.WaitClosed(cctx, c, sweepID); werr != nil && cctx.Err() != nil {
			status.linef("interrupted: sweep %s cancel requested, not yet recorded; check with 'rebound sweeps'", sweepID)
			return final, ctx.Err()
		}
		status.linef("interrupted: sweep %s cancelled; trials already stored stay queryable", sweepID)
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
	totals, err := store.ReportTotals(ctx, sweepID, report.NoFault)
	if err != nil {
		return err
	}
	sum := report.BuildFromTotals(sw, stored, totals, report.TotalsOptions{FaultClasses: true, Axes: report.AxesFromPlan(sw.PlanJSON)})
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
