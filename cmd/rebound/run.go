package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"rebound/core/scenario"
	"rebound/internal/runner"
	"rebound/results/report"
	"rebound/storage"
)

const runAbout = `Runs every trial of PLAN and prints the report. By default it starts the
embedded stack itself: a Temporal dev server (a subprocess on a free loopback
port, its SQLite file under --data-dir) and chDB (the ClickHouse engine, data
under --data-dir), plus a worker in this process. Ctrl-C stops the sweep at
once (no model request is sent after it), records it as stopped (its trials
are kept) and stops everything it started.

--resume ID (no PLAN) continues a sweep: one stopped with Ctrl-C, cancelled,
failed, or left unfinished by a killed process. Its stored trials are not run
again and its model answers are not paid for again. On the embedded stack
each sweep has its own task queue, polled only by the process running it: a
sweep left unfinished in the data dir is never run behind your back: run
says so, and you either resume it or throw it away ('rebound sweep cancel
ID').

Point at existing infrastructure instead with --temporal-address and/or
--clickhouse-dsn (or REBOUND_TEMPORAL_ADDRESS, REBOUND_CLICKHOUSE_DSN); the
in-process worker then polls that cluster's task queue.

Example:
  rebound run examples/plans/quickstart.yaml
  rebound run examples/plans/quickstart.yaml --output json > report.json
  rebound run --resume quickstart-20261129-124700-21fe74`

func newRunCmd() *cobra.Command {
	var (
		conn   connection
		output string
		every  time.Duration
		resume string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] PLAN | run --resume SWEEP_ID",
		Short: "run a plan on the embedded stack (Temporal dev server + chDB) and print the report",
		Long:  runAbout,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case resume != "" && len(args) != 0:
				return usagef("run --resume takes no PLAN (got %d arguments); see 'rebound run -h'", len(args))
			case resume == "" && len(args) != 1:
				return usagef("run takes exactly one PLAN file (got %d arguments); see 'rebound run -h'", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var plan *scenario.Resolved
			status := newStatus(cmd.ErrOrStderr())
			if resume != "" && conn.temporalAddress == "" {
				// Resuming reads the embedded stack's sweep: a data dir
				// without one is a typo, not a place to create a stack.
				if err := conn.requireStore(); err != nil {
					return err
				}
			}
			if resume == "" {
				var err error
				if plan, err = preparePlan(ctx, args[0]); err != nil {
					return err
				}
				status.linef("plan %s: %d scenarios, %d arms, %d seeds = %d trials; shards of %d, %d in flight", plan.Name, len(plan.Scenarios), len(plan.Arms), len(plan.Seeds), plan.TrialCount(), plan.ShardSize, plan.Concurrency)
			}
			return runSweep(cmd, &conn, plan, resume, every, status, func(ctx context.Context, store storage.Store, sweepID string) error {
				sum, err := report.Load(ctx, store, sweepID)
				if err != nil {
					return err
				}
				if err := sum.AddSpend(ctx, store); err != nil {
					return err
				}
				lost := lostArms(&sum)
				if lost != "" {
					// The first line says it, whatever else follows.
					if output == "json" {
						fmt.Fprintln(cmd.ErrOrStderr(), lost)
					} else {
						fmt.Fprintln(cmd.OutOrStdout(), lost)
					}
				}
				if err := writeSummary(&sum, output, cmd.OutOrStdout()); err != nil {
					return err
				}
				if lost != "" {
					return failure{}
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	conn.serveFlags(fs)
	conn.devServerFlag(fs)
	outputFlag(fs, &output)
	durationFlag(fs, &every, "progress-every", 500*time.Millisecond, 50*time.Millisecond, time.Minute, "how often to refresh progress")
	fs.StringVar(&resume, "resume", "", "resume the unfinished sweep SWEEP_ID of the data dir (or cluster) instead of starting a PLAN")
	return cmd
}

// lostArms names the arms that lost every trial to attrition (their
// agent's infrastructure, not the agent, failed each time: nothing was
// measured for them), or is empty when every arm has a graded trial.
func lostArms(sum *report.Summary) string {
	var lost []string
	for _, a := range sum.Arms {
		if a.Trials > 0 && a.Attrition == a.Trials {
			lost = append(lost, fmt.Sprintf("%s (%d of %d)", a.Arm, a.Attrition, a.Trials))
		}
	}
	if len(lost) == 0 {
		return ""
	}
	return fmt.Sprintf("FAILED: every trial of arm %s was attrition (the agent's infrastructure failed: a provider, or a declared attrition exit code); nothing was measured for it. 'rebound trials %s --arm ARM' and 'rebound trial show' show why.",
		strings.Join(lost, ", arm "), sum.SweepID)
}

// runSweep runs plan (or resumes the sweep resume) to its end with a worker
// in this process, on the embedded stack unless conn names a cluster; once
// it completed, then reads the result from the store.
func runSweep(cmd *cobra.Command, conn *connection, plan *scenario.Resolved, resume string, every time.Duration, status *status,
	then func(ctx context.Context, store storage.Store, sweepID string) error) error {
	ctx := cmd.Context()
	key, err := localRedactionKey(conn.dataDir)
	if err != nil {
		return err
	}
	tel, err := setupTelemetry(ctx, false, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, cmd.ErrOrStderr())
	embedded := conn.temporalAddress == ""
	address, stopServer, err := startTemporal(ctx, conn, status)
	if err != nil {
		return err
	}
	defer stopServer()
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	// While it runs, the embedded store is read through this process.
	_, stopServing, err := conn.serveStore(ctx, store, nil)
	if err != nil {
		return err
	}
	defer stopServing()
	c, err := conn.dialTemporal(ctx, address, key)
	if err != nil {
		return err
	}
	defer c.Close()

	sweepID, queue := resume, conn.taskQueue
	reopen := false // resume a sweep whose workflow closed: a new run of it
	if resume != "" {
		st, err := runner.DescribeSweep(ctx, c, key, sweepID)
		if err != nil {
			return err
		}
		switch {
		case st.Running():
			queue = st.TaskQueue
		case st.Found && st.TaskQueue != "":
			queue, reopen = st.TaskQueue, true
		case embedded:
			queue, reopen = runner.RunQueue(sweepID), true
		default:
			reopen = true
		}
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
	w, err := runner.StartWorker(c, queue, acts, runner.WorkerOptions{})
	if err != nil {
		return err
	}
	// Stop the worker, then wait for its last write, before the store
	// closes (deferred earlier, so it runs later).
	defer stopWorker(w, status)
	// Ctrl-C halts this process's shards at once: no model request is
	// sent after it (followSweep then records the sweep stopped).
	defer context.AfterFunc(ctx, acts.Halt)()

	planName := ""
	if plan != nil {
		planName = plan.Name
	}
	ctx, span := runner.StartSweepSpan(ctx, sweepID, planName)
	defer span.End()
	var run runner.WorkflowRun
	switch {
	case reopen:
		if run, err = runner.ResumeSweep(ctx, c, store, key, queue, sweepID); err != nil {
			return err
		}
		status.linef("resuming sweep %s: a new run of workflow %s on task queue %s; stored trials and model answers are reused", sweepID, runner.WorkflowID(sweepID), queue)
	case resume != "":
		run = runner.SweepRun(ctx, c, sweepID)
		status.linef("resuming sweep %s (workflow %s, task queue %s)", sweepID, runner.WorkflowID(sweepID), queue)
	default:
		if run, err = runner.StartSweep(ctx, c, queue, sweepID, plan); err != nil {
			return err
		}
		status.linef("sweep %s started (workflow %s)", sweepID, runner.WorkflowID(sweepID))
	}
	final, err := followSweep(ctx, c, run, sweepID, every, status, store, acts)
	if err != nil {
		return err
	}
	if err := sweepOutcome(sweepID, final); err != nil {
		return err
	}
	return then(ctx, store, sweepID)
}
