package main

// The embedded stack and following a sweep: what run, sweep and sweeps
// share.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"rebound/activities"
	"rebound/internal/devstack"
	"rebound/internal/runner"
	"rebound/internal/sweepstatus"
	"rebound/storage"
	"rebound/workflows"
)

// startTemporal starts the embedded dev server when no address is set and
// returns the address to dial, and how to stop what it started.
func startTemporal(ctx context.Context, conn *connection, status *status) (string, func(), error) {
	if conn.temporalAddress != "" {
		return conn.temporalAddress, func() {}, nil
	}
	bin := conn.temporalBin
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
		if sw.Status == sweepstatus.Running && !seen[sw.SweepID] {
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

func openLog(dataDir, name string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return os.OpenFile(filepath.Join(dataDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}
