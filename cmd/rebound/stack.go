package main

// The embedded stack and following a sweep: what run, sweep and sweeps
// share. The work is internal/runner's; this file says it to the user.

import (
	"context"
	"fmt"
	"time"

	"rebound/activities"
	"rebound/internal/runner"
	"rebound/storage"
	"rebound/workflows"
)

// startTemporal starts the embedded dev server when no address is set and
// returns the address to dial, and how to stop what it started.
func startTemporal(ctx context.Context, conn *connection, status *status) (string, func(), error) {
	if conn.temporalAddress != "" {
		return conn.temporalAddress, func() {}, nil
	}
	address, stop, err := runner.StartDevServer(ctx, runner.DevServerOptions{Bin: conn.temporalBin, DataDir: conn.dataDir, Namespace: conn.namespace, Log: conn.log}, status.linef)
	if runner.IsConfigError(err) {
		return "", nil, usageError{err}
	}
	return address, stop, err
}

// stopWorker stops a worker (its shards get runner.DefaultStopTimeout to
// finish, then hand the rest back) and waits for the activities' last
// write.
func stopWorker(w *runner.InProcessWorker, status *status) {
	if !w.Stop() {
		status.linef("warning: a shard was still writing 30s after the worker stopped")
	}
}

// warnUnfinished tells the user about unfinished sweeps of the embedded
// data dir: their shards do not run here unless resumed.
func warnUnfinished(ctx context.Context, c runner.Client, store storage.Store, dataDir string, status *status) error {
	return runner.NoteUnfinished(ctx, c, store, dataDir, status.linef)
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

// followSweep shows progress until the sweep ends. On Ctrl-C it stops the
// sweep: this process's shards (acts, nil when the workers run elsewhere)
// halt at once, the store marks it stopped, and the workflow is cancelled
// and waited for (briefly) while this process's worker still runs.
func followSweep(ctx context.Context, c runner.Client, run runner.WorkflowRun, sweepID string, every time.Duration, status *status,
	store storage.Store, acts *activities.Activities) (workflows.Progress, error) {
	var marked chan error
	stop := func(ctx context.Context) error {
		if acts == nil {
			// The workers are elsewhere: the mark lands before the
			// cancellation, whose last activity keeps it.
			if store == nil {
				return nil
			}
			return runner.MarkStopped(ctx, store, sweepID)
		}
		// This process's activities record nothing for the cancellation
		// once halted, so the mark is written meanwhile.
		acts.Halt()
		marked = make(chan error, 1)
		go func() {
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			marked <- runner.MarkStopped(mctx, store, sweepID)
		}()
		return nil
	}
	hooks := runner.FollowHooks{Progress: status.progress, Done: status.done, Notef: status.linef, Stop: stop}
	if acts != nil {
		hooks.RanHere = acts.TrialsRun
	}
	final, err := runner.FollowSweep(ctx, c, run, sweepID, every, hooks)
	if marked != nil {
		if merr := <-marked; merr != nil {
			status.linef("interrupted: could not record sweep %s as stopped: %v", sweepID, merr)
		}
	}
	if runner.IsAgentConfig(err) {
		// An arm that cannot run is the plan's to fix: exit 2.
		return final, usageError{err}
	}
	return final, err
}
