package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rebound/internal/runner"
)

const scheduleAbout = `Nightly regression sweeps on Temporal Schedules. A schedule starts the sweep
workflow of a plan (resolved when the schedule is created or updated) by cron
or at an interval (--every takes at least 1m); each run is a normal sweep
named sched-NAME-<start time>, so 'rebound report', 'rebound compare' and
'rebound gate' work on it, and 'rebound trend NAME' follows its rates night
over night. A run still going
when the next is due is left alone and the next is skipped; a run missed
while the cluster was down starts late within the catch-up window.

A schedule needs a running worker on its task queue ('rebound worker') and a
Temporal cluster (--temporal-address); the embedded 'rebound run' stack does
not stay up between runs.

  rebound schedule create (--cron "0 2 * * *" | --every 24h) [--catchup 1h] [--paused] NAME PLAN
  rebound schedule list
  rebound schedule describe NAME
  rebound schedule update [--cron EXPR | --every D] [--catchup D] NAME [PLAN]
                                       a new plan (resolved now) or spec; state and runs kept
  rebound schedule pause|resume [--note TEXT] NAME
  rebound schedule trigger NAME        start a run now: prints its sweep id, or
                                       "skipped" when a run is still going
  rebound schedule delete NAME         stored sweeps stay

Examples:
  rebound schedule create --cron "0 2 * * *" nightly examples/plans/library.yaml
  rebound trend --last 14 nightly
  rebound gate --baseline careful --baseline-sweep previous --candidate careful \
      --thresholds examples/gates/release.yaml sched-nightly-2026-12-01T02:00:00Z`

func newScheduleCmd() *cobra.Command {
	var (
		cron, note     string
		every, catchup time.Duration
		paused         bool
	)
	create := scheduleSubcommand("create", "create (--cron EXPR | --every DURATION) [flags] NAME PLAN", "create a schedule that sweeps PLAN by cron or at an interval", 2,
		func(fs *pflag.FlagSet) {
			fs.StringVar(&cron, "cron", "", "a cron expression, e.g. \"0 2 * * *\" (UTC)")
			durationFlag(fs, &every, "every", 0, runner.MinScheduleInterval, 366*24*time.Hour, "an interval instead of a cron expression, e.g. 24h")
			durationFlag(fs, &catchup, "catchup", time.Hour, 0, 366*24*time.Hour, "how late a run missed while the cluster was down may still start")
			fs.BoolVar(&paused, "paused", false, "create it paused")
			fs.StringVar(&note, "note", "", "a note kept with the schedule")
		},
		func(args []string) error {
			if !runner.ValidScheduleName(args[0]) {
				return usagef("schedule name %q: use letters, digits, '-' and '_'", args[0])
			}
			if (cron == "") == (every == 0) {
				return usagef("schedule create needs exactly one of --cron or --every")
			}
			return nil
		},
		func(ctx context.Context, c runner.Client, conn *connection, args []string, out scheduleOutput) error {
			p, err := preparePlan(ctx, args[1])
			if err != nil {
				return err
			}
			spec := runner.ScheduleSpec{Cron: cron, Every: every, Catchup: catchup, Paused: paused, Note: note}
			if err := runner.CreateSchedule(ctx, c, conn.taskQueue, args[0], p, spec); err != nil {
				return err
			}
			return out.done(args[0], fmt.Sprintf("created (%d trials a run on task queue %q)", p.TrialCount(), conn.taskQueue))
		})
	list := scheduleSubcommand("list", "list [flags]", "list the schedules", 0, nil, nil,
		func(ctx context.Context, c runner.Client, _ *connection, _ []string, out scheduleOutput) error {
			list, err := runner.Schedules(ctx, c)
			if err != nil {
				return err
			}
			if out.json {
				return writeJSON(out.w, list, false)
			}
			if len(list) == 0 {
				fmt.Fprintln(out.w, "no schedules (create one with 'rebound schedule create')")
				return nil
			}
			tw := tabwriter.NewWriter(out.w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWHEN\tSTATE\tNEXT RUN\tLAST RUN")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Spec, state(s.Paused), first(s.NextRuns), firstString(s.RecentRuns))
			}
			return tw.Flush()
		})
	describe := scheduleSubcommand("describe", "describe [flags] NAME", "a schedule's spec, state, next and recent runs", 1, nil, nil,
		func(ctx context.Context, c runner.Client, _ *connection, args []string, out scheduleOutput) error {
			s, err := runner.DescribeSchedule(ctx, c, args[0])
			if err != nil {
				return err
			}
			if out.json {
				return writeJSON(out.w, s, false)
			}
			fmt.Fprintf(out.w, "schedule %s: %s, %s\n", s.Name, s.Spec, state(s.Paused))
			if s.Note != "" {
				fmt.Fprintf(out.w, "note: %s\n", s.Note)
			}
			fmt.Fprintf(out.w, "next runs: %s\n", joinTimes(s.NextRuns))
			fmt.Fprintf(out.w, "running: %s\n", orNone(strings.Join(s.Running, ", ")))
			fmt.Fprintf(out.w, "recent runs: %s\n", orNone(strings.Join(s.RecentRuns, ", ")))
			return nil
		})
	pauseResume := func(name string, pause bool) *cobra.Command {
		var note string
		return scheduleSubcommand(name, name+" [--note TEXT] NAME", name+" a schedule", 1,
			func(fs *pflag.FlagSet) { fs.StringVar(&note, "note", "", "a note kept with the schedule") }, nil,
			func(ctx context.Context, c runner.Client, _ *connection, args []string, out scheduleOutput) error {
				if err := runner.PauseSchedule(ctx, c, args[0], pause, note); err != nil {
					return err
				}
				return out.done(args[0], name+"d")
			})
	}
	trigger := scheduleSubcommand("trigger", "trigger [flags] NAME", "start a run now (skipped if one is still going): prints the run's sweep id, or skipped", 1, nil, nil,
		func(ctx context.Context, c runner.Client, _ *connection, args []string, out scheduleOutput) error {
			r, err := runner.TriggerSchedule(ctx, c, args[0], 15*time.Second)
			if err != nil {
				return err
			}
			return out.triggered(args[0], r)
		})
	del := scheduleSubcommand("delete", "delete [flags] NAME", "delete a schedule; its stored sweeps stay", 1, nil, nil,
		func(ctx context.Context, c runner.Client, _ *connection, args []string, out scheduleOutput) error {
			if err := runner.DeleteSchedule(ctx, c, args[0]); err != nil {
				return err
			}
			return out.done(args[0], "deleted (its sweeps stay stored)")
		})
	return group(&cobra.Command{
		Use:   "schedule create|list|describe|update|pause|resume|trigger|delete",
		Short: "nightly sweeps on Temporal Schedules (schedule create|list|describe|update|pause|resume|trigger|delete)",
		Long:  scheduleAbout,
	}, create, list, describe, newScheduleUpdateCmd(), pauseResume("pause", true), pauseResume("resume", false), trigger, del)
}

// newScheduleUpdateCmd is schedule update: a new plan, spec or catch-up
// window for an existing schedule, its state, task queue and past runs
// kept.
func newScheduleUpdateCmd() *cobra.Command {
	var (
		cron           string
		every, catchup time.Duration
	)
	return scheduleSubcommand("update", "update [--cron EXPR | --every DURATION] [--catchup D] NAME [PLAN]",
		"change a schedule: its plan (re-resolved from PLAN), when it fires, its catch-up window", -1,
		func(fs *pflag.FlagSet) {
			fs.StringVar(&cron, "cron", "", "a new cron expression (UTC), replacing the cron expression or interval")
			durationFlag(fs, &every, "every", 0, runner.MinScheduleInterval, 366*24*time.Hour, "a new interval, replacing the cron expression or interval")
			durationFlag(fs, &catchup, "catchup", 0, 0, 366*24*time.Hour, "a new catch-up window")
		},
		func(args []string) error {
			switch {
			case len(args) < 1 || len(args) > 2:
				return usagef("schedule update takes NAME and optionally a PLAN; got %d argument(s)", len(args))
			case cron != "" && every != 0:
				return usagef("schedule update takes at most one of --cron or --every")
			case len(args) == 1 && cron == "" && every == 0 && catchup == 0:
				return usagef("schedule update needs something to change: a PLAN, --cron, --every or --catchup")
			}
			return nil
		},
		func(ctx context.Context, c runner.Client, _ *connection, args []string, out scheduleOutput) error {
			ch := runner.ScheduleChange{Cron: cron, Every: every, Catchup: catchup}
			var what []string
			if len(args) == 2 {
				p, err := preparePlan(ctx, args[1])
				if err != nil {
					return err
				}
				ch.Plan = p
				what = append(what, fmt.Sprintf("plan %s (%d trials a run)", p.Name, p.TrialCount()))
			}
			if err := runner.UpdateSchedule(ctx, c, args[0], ch); err != nil {
				return err
			}
			if cron != "" {
				what = append(what, "cron "+cron)
			}
			if every != 0 {
				what = append(what, "every "+shortDuration(every))
			}
			if catchup != 0 {
				what = append(what, "catch-up "+shortDuration(catchup))
			}
			return out.done(args[0], "updated: "+strings.Join(what, ", "))
		})
}

// scheduleOutput is where a schedule subcommand prints, and how.
type scheduleOutput struct {
	w    io.Writer
	json bool
}

// triggered prints what a trigger did: the run it started, or that it was
// skipped because a run is still going.
func (o scheduleOutput) triggered(name string, r runner.TriggerResult) error {
	if o.json {
		return writeJSON(o.w, struct {
			Schedule string `json:"schedule"`
			runner.TriggerResult
		}{name, r}, false)
	}
	switch {
	case r.Started:
		fmt.Fprintf(o.w, "schedule %s: started run %s (run id %s)\n", name, r.SweepID, r.RunID)
	case r.Skipped:
		fmt.Fprintf(o.w, "schedule %s: skipped (a run is still going: %s)\n", name, orNone(strings.Join(r.Running, ", ")))
	default:
		fmt.Fprintf(o.w, "schedule %s: triggered; Temporal has not started or skipped it yet (see 'rebound schedule describe %s')\n", name, name)
	}
	return nil
}

func (o scheduleOutput) done(name, msg string) error {
	if o.json {
		return writeJSON(o.w, map[string]string{"schedule": name, "result": msg}, false)
	}
	fmt.Fprintf(o.w, "schedule %s: %s\n", name, msg)
	return nil
}

// scheduleSubcommand builds a schedule subcommand taking nargs arguments:
// flags adds its own flags, check validates its input before any
// connection, run does the work with a client of the cluster.
func scheduleSubcommand(name, use, short string, nargs int, flags func(*pflag.FlagSet), check func(args []string) error,
	run func(ctx context.Context, c runner.Client, conn *connection, args []string, out scheduleOutput) error) *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  scheduleAbout,
		Args:  scheduleArgs(name, nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check != nil {
				if err := check(args); err != nil {
					return err
				}
			}
			if conn.temporalAddress == "" {
				return usagef("schedule needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS): schedules live on a Temporal cluster with a worker")
			}
			key, err := envRedactionKey()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := conn.dialTemporal(ctx, conn.temporalAddress, key)
			if err != nil {
				return err
			}
			defer c.Close()
			err = run(ctx, c, &conn, args, scheduleOutput{w: cmd.OutOrStdout(), json: output == "json"})
			if errors.Is(err, runner.ErrNoSchedule) {
				return usageError{err}
			}
			return err
		},
	}
	conn.temporalFlags(cmd.Flags())
	if flags != nil {
		flags(cmd.Flags())
	}
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// scheduleArgs is exactly nargs arguments, or (nargs < 0) whatever the
// subcommand's check accepts.
func scheduleArgs(name string, nargs int) cobra.PositionalArgs {
	if nargs < 0 {
		return cobra.ArbitraryArgs
	}
	return exactArgs(nargs, fmt.Sprintf("schedule %s takes %d argument(s)", name, nargs))
}

func state(paused bool) string {
	if paused {
		return "paused"
	}
	return "active"
}

func first(ts []time.Time) string {
	if len(ts) == 0 {
		return "-"
	}
	return ts[0].UTC().Format(time.RFC3339)
}

func firstString(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return ss[0]
}

func joinTimes(ts []time.Time) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.UTC().Format(time.RFC3339)
	}
	return orNone(strings.Join(parts, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
