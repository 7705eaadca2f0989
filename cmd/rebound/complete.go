package main

// Shell completion beyond commands and flags: the values a command takes,
// asked of the store and of Temporal as the command itself would ask them
// (its flags, and the environment they fall back to). A completion that
// cannot be answered (no store in the data dir, Temporal unreachable)
// offers nothing, quickly, and creates nothing.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rebound/internal/runner"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
)

// completeTimeout bounds what a completion asks of the store or Temporal.
const completeTimeout = 5 * time.Second

// registerCompletions attaches the completion functions to the tree: sweep
// ids, schedule names and arm names where a command takes one, and the
// values of every flag restricted to a list (--output, --log-format, ...).
func registerCompletions(root *cobra.Command) {
	sweepArg := map[string]bool{
		"report": true, "compare": true, "gate": true, "trials": true, "judge agreement": true,
		"judge queue": true, "review export": true, "regrade": true, "sweep status": true, "sweep cancel": true,
	}
	scheduleArg := map[string]bool{
		"schedule describe": true, "schedule update": true, "schedule pause": true,
		"schedule resume": true, "schedule trigger": true, "schedule delete": true,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		path := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		switch {
		case sweepArg[path]:
			c.ValidArgsFunction = firstArg(completeSweeps(""))
		case scheduleArg[path]:
			c.ValidArgsFunction = firstArg(completeSchedules)
		case path == "trend":
			c.ValidArgsFunction = firstArg(completeStoredSchedules)
		}
		fs := c.Flags()
		for _, arm := range []string{"baseline", "candidate", "arm"} {
			if f := fs.Lookup(arm); f != nil && sweepArg[path] {
				_ = c.RegisterFlagCompletionFunc(arm, completeArms)
			}
		}
		if fs.Lookup("baseline-sweep") != nil {
			_ = c.RegisterFlagCompletionFunc("baseline-sweep", completeSweeps(previousSweep))
		}
		if fs.Lookup("resume") != nil {
			_ = c.RegisterFlagCompletionFunc("resume", completeRunning)
		}
		fs.VisitAll(func(f *pflag.Flag) {
			if ch, ok := f.Value.(choice); ok {
				allowed := ch.allowed
				_ = c.RegisterFlagCompletionFunc(f.Name, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
					var out []cobra.Completion
					for _, v := range allowed {
						if strings.HasPrefix(v, toComplete) {
							out = append(out, v)
						}
					}
					return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
				})
			}
		})
	}
	walk(root)
}

type completer func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

// firstArg completes the first positional argument only.
func firstArg(f completer) completer {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(cmd, args, toComplete)
	}
}

// completionConn is the connection cmd's flags (and their environment
// fallbacks) name, read as cmd would read them.
func completionConn(cmd *cobra.Command) (*connection, context.Context, context.CancelFunc) {
	_ = applyEnv(cmd)
	fs := cmd.Flags()
	get := func(name string) string {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	c := &connection{
		temporalAddress: get("temporal-address"), namespace: get("namespace"), taskQueue: get("task-queue"),
		clickhouseDSN: get("clickhouse-dsn"), dataDir: get("data-dir"), chdbLib: get("chdb-lib"),
	}
	c.cluster.Name = get("clickhouse-cluster")
	if c.dataDir == "" {
		c.dataDir = "data"
	}
	if c.namespace == "" {
		c.namespace = "default"
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	return c, ctx, cancel
}

// storedSweeps lists the sweeps of the store cmd's flags name (none when
// there is no store: nothing is created).
func storedSweeps(cmd *cobra.Command) []record.Sweep {
	conn, ctx, cancel := completionConn(cmd)
	defer cancel()
	store, err := conn.openReadOnlyStore(ctx)
	if err != nil {
		return nil
	}
	defer store.Close()
	sweeps, err := store.Sweeps(ctx, 500)
	if err != nil {
		return nil
	}
	return sweeps
}

// completeSweeps offers the stored sweep ids (newest first, with their plan
// and status), and extra when it is set ("previous").
func completeSweeps(extra string) completer {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		if extra != "" && strings.HasPrefix(extra, toComplete) {
			out = append(out, cobra.CompletionWithDesc(extra, "the run before SWEEP_ID, of the same schedule or plan"))
		}
		for _, s := range storedSweeps(cmd) {
			if strings.HasPrefix(s.SweepID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.SweepID, s.Name+", "+s.Status))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeRunning offers the sweeps a --resume can continue: stored as
// running, stopped, cancelled or failed (run --resume, sweep start
// --resume).
func completeRunning(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, s := range storedSweeps(cmd) {
		if sweepstatus.Resumable(s.Status) && strings.HasPrefix(s.SweepID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(s.SweepID, s.Name+", "+s.Status))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeArms offers the arms of the sweep given as the first argument,
// and of the one --baseline-sweep names (the baseline arm may come from
// there).
func completeArms(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids := []string{args[0]}
	if b := cmd.Flags().Lookup("baseline-sweep"); b != nil && b.Value.String() != "" && b.Value.String() != previousSweep {
		ids = append(ids, b.Value.String())
	}
	var out []cobra.Completion
	for _, s := range storedSweeps(cmd) {
		if !slices.Contains(ids, s.SweepID) {
			continue
		}
		for _, a := range s.Arms {
			if strings.HasPrefix(a, toComplete) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeStoredSchedules offers the schedules whose runs are stored
// (trend reads the store, not Temporal).
func completeStoredSchedules(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, s := range storedSweeps(cmd) {
		if name, ok := runner.ScheduleOf(s.SweepID); ok && strings.HasPrefix(name, toComplete) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSchedules offers the schedules of the cluster (--temporal-address
// and REBOUND_REDACTION_KEY, as the schedule commands need them).
func completeSchedules(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	conn, ctx, cancel := completionConn(cmd)
	defer cancel()
	if conn.temporalAddress == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	key, err := envRedactionKey()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := conn.dialTemporal(ctx, conn.temporalAddress, key)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	list, err := runner.Schedules(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, s := range list {
		if strings.HasPrefix(s.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(s.Name, s.Spec+", "+state(s.Paused)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
