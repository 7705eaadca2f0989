package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/internal/runner"
	"rebound/internal/sweepstatus"
	"rebound/storage"
	"rebound/workflows"
)

const sweepAbout = `Starts a sweep on an existing Temporal cluster (workers must be running:
'rebound worker'), shows a sweep's progress, or cancels it.

  rebound sweep start [flags] PLAN     start it; --wait follows it to the end
                                       (Ctrl-C stops it: recorded stopped, resumable)
  rebound sweep start --resume ID      continue a stopped, cancelled or failed sweep
                                       (its stored trials and model answers are reused)
  rebound sweep status [flags] ID      progress, and shards whose attempts fail
                                       (with the last error: disk full, store down...)
  rebound sweep cancel [flags] ID      throw it away: it records the status cancelled

Without --temporal-address, status and cancel work on the embedded stack of
--data-dir (a dev server is started for the occasion; cancel also runs the
sweep's own worker long enough to record the cancellation).

Both need the workers' REBOUND_REDACTION_KEY: the plan and the progress
travel through Temporal encrypted with it. The plan is checked (files,
agents, worlds' initial state, size) before anything is sent.

Example:
  rebound sweep start --temporal-address temporal:7233 examples/plans/quickstart.yaml
  rebound sweep start --temporal-address temporal:7233 --resume quickstart-20261129-124700-21fe74 --wait
  rebound sweep cancel quickstart-20261129-124700-21fe74`

func newSweepCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "sweep start|status|cancel",
		Short: "start a sweep on an existing Temporal (sweep start PLAN), show its progress (sweep status ID) or cancel it",
		Long:  sweepAbout,
	}, newSweepStartCmd(), newSweepStatusCmd(), newSweepCancelCmd())
}

func newSweepStartCmd() *cobra.Command {
	var (
		conn   connection
		output string
		wait   bool
		resume string
	)
	cmd := &cobra.Command{
		Use:   "start [flags] PLAN | start --resume SWEEP_ID",
		Short: "start a sweep of PLAN on the cluster's workers, or continue a stopped one",
		Long:  sweepAbout,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case resume != "" && len(args) != 0:
				return usagef("sweep start --resume takes no PLAN (got %d arguments); see 'rebound sweep start -h'", len(args))
			case resume == "" && len(args) != 1:
				return usagef("sweep start takes exactly one PLAN (got %d arguments); see 'rebound sweep start -h'", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if conn.temporalAddress == "" {
				return usagef("sweep start needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS); for a self-contained run use 'rebound run'")
			}
			if resume != "" {
				return withTemporal(cmd, &conn, func(ctx context.Context, c runner.Client, key []byte) error {
					return sweepResume(ctx, c, &conn, key, resume, output, wait, cmd.OutOrStdout(), cmd.ErrOrStderr())
				})
			}
			// The plan is checked before anything is sent.
			plan, err := preparePlan(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// The sweep's trace starts here (the span "sweep"), and the
			// workers' spans join it: CI and workers share one trace.
			tel, err := setupTelemetry(cmd.Context(), false, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer shutdownTelemetry(tel, cmd.ErrOrStderr())
			return withTemporal(cmd, &conn, func(ctx context.Context, c runner.Client, _ []byte) error {
				return sweepStart(ctx, c, &conn, plan, output, wait, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	sweepFlags(cmd, &conn)
	outputFlag(cmd.Flags(), &output)
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the sweep until it ends, showing progress (Ctrl-C stops it, resumable)")
	cmd.Flags().StringVar(&resume, "resume", "", "continue the stopped, cancelled or failed sweep SWEEP_ID instead of starting a PLAN (its stored trials and model answers are reused)")
	return cmd
}

func newSweepStatusCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "status [flags] SWEEP_ID",
		Short: "a sweep's progress, and the shards whose attempts fail",
		Long:  sweepAbout,
		Args:  exactArgs(1, "sweep status takes exactly one SWEEP_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTemporal(cmd, &conn, func(ctx context.Context, c runner.Client, key []byte) error {
				return sweepStatus(ctx, c, &conn, key, args[0], output, cmd.OutOrStdout())
			})
		},
	}
	sweepFlags(cmd, &conn)
	outputFlag(cmd.Flags(), &output)
	return cmd
}

func newSweepCancelCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "cancel [flags] SWEEP_ID",
		Short: "cancel a sweep; it records the status cancelled",
		Long:  sweepAbout,
		Args:  exactArgs(1, "sweep cancel takes exactly one SWEEP_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTemporal(cmd, &conn, func(ctx context.Context, c runner.Client, key []byte) error {
				res, err := sweepCancel(ctx, c, &conn, key, args[0], cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if output == "json" {
					return writeJSON(cmd.OutOrStdout(), res, false)
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), res.text())
				return err
			})
		},
	}
	sweepFlags(cmd, &conn)
	outputFlag(cmd.Flags(), &output)
	return cmd
}

func sweepFlags(cmd *cobra.Command, conn *connection) {
	conn.temporalFlags(cmd.Flags())
	conn.storageFlags(cmd.Flags())
	conn.devServerFlag(cmd.Flags())
}

// withTemporal runs fn with a client of conn's Temporal, or of an embedded
// dev server started for the occasion on --data-dir when conn names none.
func withTemporal(cmd *cobra.Command, conn *connection, fn func(ctx context.Context, c runner.Client, key []byte) error) error {
	ctx := cmd.Context()
	if conn.temporalAddress == "" {
		// The embedded stack of --data-dir: it must exist (nothing is
		// created to find no sweep in it).
		if err := conn.requireStore(); err != nil {
			return err
		}
	}
	key, err := conn.redactionKey()
	if err != nil {
		return err
	}
	status := newStatus(cmd.ErrOrStderr())
	if conn.temporalAddress == "" {
		status = newStatus(io.Discard)
	}
	address, stopServer, err := startTemporal(ctx, conn, status)
	if err != nil {
		return err
	}
	defer stopServer()
	c, err := conn.dialTemporal(ctx, address, key)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c, key)
}

// sweepStart starts a sweep of plan on conn's task queue and prints its
// id; with wait, it follows it to its end.
func sweepStart(ctx context.Context, c runner.Client, conn *connection, plan *scenario.Resolved, output string, wait bool, stdout, stderr io.Writer) error {
	queue := conn.taskQueue
	sweepID := runner.NewSweepID(plan.Name, time.Now())
	ctx, span := runner.StartSweepSpan(ctx, sweepID, plan.Name)
	defer span.End()
	run, err := runner.StartSweep(ctx, c, queue, sweepID, plan)
	if err != nil {
		return err
	}
	if output == "json" {
		if err := writeJSON(stdout, map[string]any{"sweep_id": sweepID, "workflow_id": runner.WorkflowID(sweepID), "run_id": run.GetRunID(), "trials": plan.TrialCount()}, false); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s\n", sweepID)
		fmt.Fprintf(stderr, "started sweep %s: %d trials on task queue %q; follow with 'rebound sweep status %s', report with 'rebound report %s'\n", sweepID, plan.TrialCount(), queue, sweepID, sweepID)
	}
	if !wait {
		return nil
	}
	return followToEnd(ctx, c, conn, run, sweepID, stderr)
}

// sweepResume continues a stopped, cancelled or failed sweep with a new run
// of its workflow on the cluster's workers (conn's task queue) and prints
// its id; with wait, it follows it to its end. A sweep whose workflow is
// still open is only followed.
func sweepResume(ctx context.Context, c runner.Client, conn *connection, key []byte, sweepID, output string, wait bool, stdout, stderr io.Writer) error {
	st, err := runner.DescribeSweep(ctx, c, key, sweepID)
	if err != nil {
		return err
	}
	run := runner.SweepRun(ctx, c, sweepID)
	if !st.Running() {
		store, err := conn.openStore(ctx)
		if err != nil {
			return err
		}
		run, err = runner.ResumeSweep(ctx, c, store, key, conn.taskQueue, sweepID)
		store.Close()
		if err != nil {
			return err
		}
	}
	if output == "json" {
		if err := writeJSON(stdout, map[string]any{"sweep_id": sweepID, "workflow_id": runner.WorkflowID(sweepID), "run_id": run.GetRunID(), "resumed": !st.Running()}, false); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s\n", sweepID)
		fmt.Fprintf(stderr, "resumed sweep %s on task queue %q; its stored trials are reused; follow with 'rebound sweep status %s'\n", sweepID, conn.taskQueue, sweepID)
	}
	if !wait {
		return nil
	}
	return followToEnd(ctx, c, conn, run, sweepID, stderr)
}

// followToEnd follows a sweep of the cluster until it ends; Ctrl-C stops
// it: recorded stopped in the store of --clickhouse-dsn when one is given
// (without one, the workers record it cancelled: resumable too).
func followToEnd(ctx context.Context, c runner.Client, conn *connection, run runner.WorkflowRun, sweepID string, stderr io.Writer) error {
	var store storage.Store
	if conn.clickhouseDSN != "" {
		st, err := conn.openStore(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		defer st.Close()
		store = st
	}
	final, err := followSweep(ctx, c, run, sweepID, time.Second, newStatus(stderr), store, nil)
	if err != nil {
		return err
	}
	return sweepOutcome(sweepID, final)
}

// sweepStatus prints a sweep's progress (when its workflow answers; the
// stored state when it ended with none: a stopped sweep's trials and how to
// resume it) and the shards Temporal holds for it, with failing attempts
// and their last error.
func sweepStatus(ctx context.Context, c runner.Client, conn *connection, key []byte, sweepID, output string, stdout io.Writer) error {
	st, err := runner.DescribeSweep(ctx, c, key, sweepID)
	if err != nil {
		return err
	}
	if !st.Found {
		return usagef("sweep %s is unknown to this Temporal (stored sweeps: 'rebound sweeps')", sweepID)
	}
	p, perr := runner.CurrentProgress(ctx, c, st)
	var stored *storedSweep
	if perr != nil && !st.Running() {
		// No progress to query: what the store holds (none readable: the
		// workflow's word alone).
		stored, _ = readStoredSweep(ctx, conn, sweepID)
	}
	if output == "json" {
		out := map[string]any{"sweep_id": sweepID, "workflow": st}
		if perr == nil {
			out["progress"] = p
		} else {
			out["progress_error"] = perr.Error()
		}
		if stored != nil {
			out["stored"] = stored
		}
		return writeJSON(stdout, out, false)
	}
	if stored != nil {
		stored.write(stdout, sweepID, st.Status)
	} else if perr != nil {
		fmt.Fprintf(stdout, "sweep %s: workflow %s; progress unavailable: %v\n", sweepID, st.Status, perr)
	} else {
		fmt.Fprintf(stdout, "sweep %s: %s, %d/%d trials, %d/%d shards, attrition %d\n", sweepID, p.Status, p.TrialsDone, p.TrialsPlanned, p.ShardsDone, p.ShardsTotal, p.Attrition)
		if p.Stopped != "" {
			fmt.Fprintf(stdout, "stopped: %s\n", p.Stopped)
		}
	}
	if st.Running() {
		fmt.Fprintf(stdout, "task queue %s: %d worker(s) polling", st.TaskQueue, st.Pollers)
		if st.Reconnecting() {
			fmt.Fprintf(stdout, " (reconnecting: a worker held a shard within the last %s)", workflows.HeartbeatTimeout)
		} else if st.Pollers == 0 {
			fmt.Fprintf(stdout, " (nothing runs its shards: start 'rebound worker --task-queue %s', or on the embedded stack 'rebound run --resume %s')", st.TaskQueue, sweepID)
		}
		fmt.Fprintln(stdout)
	}
	for _, w := range st.WaitingForStore() {
		fmt.Fprintf(stdout, "  %s %s (attempt %d of %d): %s\n", w.Activity, w.ActivityID, w.Attempt, w.MaxAttempts, termSafe(w.Waiting, false))
	}
	failing := st.Failing()
	if len(failing) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "%d shard(s) failing:\n", len(failing))
	for _, f := range failing {
		next := ""
		if !f.NextAttemptAt.IsZero() {
			next = fmt.Sprintf(", next attempt in %s", time.Until(f.NextAttemptAt).Round(time.Second))
		}
		fmt.Fprintf(stdout, "  %s %s: attempt %d of %d (%s%s): %s\n", f.Activity, f.ActivityID, f.Attempt, f.MaxAttempts, f.State, next, termSafe(f.LastError, false))
	}
	return nil
}

// cancelled is what `sweep cancel` did. Result is cancelled (its workflow
// recorded the cancellation), already_ended (nothing to do: Status is how
// it ended) or orphaned (its workflow was gone; recorded cancelled in
// storage).
type cancelled struct {
	SweepID string `json:"sweep_id"`
	Result  string `json:"result"`
	Status  string `json:"status"`
}

func (c cancelled) text() string {
	switch c.Result {
	case "already_ended":
		return fmt.Sprintf("sweep %s already ended %s", c.SweepID, c.Status)
	case "orphaned":
		return fmt.Sprintf("sweep %s: workflow gone (orphaned); recorded cancelled", c.SweepID)
	}
	return fmt.Sprintf("sweep %s cancelled", c.SweepID)
}

// sweepCancel cancels a sweep's workflow and waits until it recorded the
// status cancelled. On the embedded stack no worker polls the sweep's own
// queue, so this process runs one until the cancellation is recorded. A
// sweep stored as running whose workflow is gone is marked cancelled in
// storage directly.
func sweepCancel(ctx context.Context, c runner.Client, conn *connection, key []byte, sweepID string, stderr io.Writer) (cancelled, error) {
	res := cancelled{SweepID: sweepID, Result: "cancelled", Status: sweepstatus.Cancelled}
	st, err := runner.DescribeSweep(ctx, c, key, sweepID)
	if err != nil {
		return res, err
	}
	store, err := conn.openExistingStore(ctx)
	if err != nil {
		return res, err
	}
	defer store.Close()
	if !st.Running() {
		wasStopped := false
		if sw, err := store.Sweep(ctx, sweepID); err == nil {
			wasStopped = sw.Status == sweepstatus.Stopped
		}
		ended, err := runner.CancelOrphan(ctx, store, sweepID)
		switch {
		case err != nil:
			return res, err
		case ended != "":
			res.Result, res.Status = "already_ended", ended
		case !wasStopped:
			res.Result = "orphaned"
		}
		return res, nil
	}
	// Nothing polls the queue of a sweep of the embedded stack: a worker
	// runs here until the cancellation is processed and recorded.
	newActs := func() (*activities.Activities, error) { return newActivities(store, key) }
	if err := runner.CancelRunning(ctx, c, st, newActs, 2*time.Minute, newStatus(stderr).linef); err != nil {
		return res, err
	}
	return res, nil
}
