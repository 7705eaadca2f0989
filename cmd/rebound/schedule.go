package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"rebound/runner"
)

const scheduleAbout = `Nightly regression sweeps on Temporal Schedules. A schedule starts the sweep
workflow of a plan (resolved when the schedule is created) by cron or at an
interval; each run is a normal sweep named sched-NAME-<start time>, so
'rebound report', 'rebound compare' and 'rebound gate' work on it, and
'rebound trend NAME' follows its rates night over night. A run still going
when the next is due is left alone and the next is skipped; a run missed
while the cluster was down starts late within the catch-up window.

A schedule needs a running worker on its task queue ('rebound worker') and a
Temporal cluster (--temporal-address); the embedded 'rebound run' stack does
not stay up between runs.

  rebound schedule create (--cron "0 2 * * *" | --every 24h) [--catchup 1h] [--paused] NAME PLAN
  rebound schedule list
  rebound schedule describe NAME
  rebound schedule pause|resume [--note TEXT] NAME
  rebound schedule trigger NAME        start a run now
  rebound schedule delete NAME         stored sweeps stay

Examples:
  rebound schedule create --cron "0 2 * * *" nightly examples/plans/library.yaml
  rebound trend --last 14 nightly
  rebound gate --baseline careful --baseline-sweep previous --candidate careful \
      --thresholds examples/gates/release.yaml sched-nightly-2026-12-01T02:00:00Z`

func scheduleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	subs := []string{"create", "list", "describe", "pause", "resume", "trigger", "delete"}
	if len(args) == 0 || !contains(subs, args[0]) {
		fmt.Fprintf(stderr, "Usage: rebound schedule %s ...\n\n%s\n", strings.Join(subs, "|"), scheduleAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("schedule needs a subcommand: %s", strings.Join(subs, ", "))
	}
	sub := args[0]
	fs := newFlags("schedule "+sub, "rebound schedule "+sub+" [flags] ARGS", scheduleAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	cron := fs.String("cron", "", "create: a cron expression, e.g. \"0 2 * * *\" (UTC)")
	every := fs.Duration("every", 0, "create: an interval instead of a cron expression, e.g. 24h")
	catchup := fs.Duration("catchup", time.Hour, "create: how late a run missed while the cluster was down may still start")
	paused := fs.Bool("paused", false, "create: create it paused")
	note := fs.String("note", "", "create, pause, resume: a note kept with the schedule")
	output := outputFlag(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	want := map[string]int{"create": 2, "list": 0}
	n, ok := want[sub]
	if !ok {
		n = 1
	}
	if fs.NArg() != n {
		return usagef("schedule %s takes %d argument(s), got %d", sub, n, fs.NArg())
	}
	if *every < 0 || *catchup < 0 {
		return usagef("--every and --catchup must not be negative")
	}
	if sub == "create" {
		if !runner.ValidScheduleName(fs.Arg(0)) {
			return usagef("schedule name %q: use letters, digits, '-' and '_'", fs.Arg(0))
		}
		if (*cron == "") == (*every == 0) {
			return usagef("schedule create needs exactly one of --cron or --every")
		}
	}
	if conn.temporalAddress == "" {
		return usagef("schedule needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS): schedules live on a Temporal cluster with a worker")
	}
	key, err := envRedactionKey()
	if err != nil {
		return err
	}
	c, err := conn.dialTemporal(ctx, conn.temporalAddress, key)
	if err != nil {
		return err
	}
	defer c.Close()
	name := fs.Arg(0)
	done := func(msg string) error {
		if *output == "json" {
			return json.NewEncoder(stdout).Encode(map[string]string{"schedule": name, "result": msg})
		}
		fmt.Fprintf(stdout, "schedule %s: %s\n", name, msg)
		return nil
	}
	switch sub {
	case "create":
		p, err := preparePlan(ctx, fs.Arg(1))
		if err != nil {
			return err
		}
		spec := runner.ScheduleSpec{Cron: *cron, Every: *every, Catchup: *catchup, Paused: *paused, Note: *note}
		if err := runner.CreateSchedule(ctx, c, conn.taskQueue, name, p, spec); err != nil {
			return err
		}
		return done(fmt.Sprintf("created (%d trials a run on task queue %q)", p.TrialCount(), conn.taskQueue))
	case "list":
		list, err := runner.Schedules(ctx, c)
		if err != nil {
			return err
		}
		if *output == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		if len(list) == 0 {
			fmt.Fprintln(stdout, "no schedules (create one with 'rebound schedule create')")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tWHEN\tSTATE\tNEXT RUN\tLAST RUN")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Spec, state(s.Paused), first(s.NextRuns), firstString(s.RecentRuns))
		}
		return tw.Flush()
	case "describe":
		s, err := runner.DescribeSchedule(ctx, c, name)
		if errors.Is(err, runner.ErrNoSchedule) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		if *output == "json" {
			return json.NewEncoder(stdout).Encode(s)
		}
		fmt.Fprintf(stdout, "schedule %s: %s, %s\n", s.Name, s.Spec, state(s.Paused))
		if s.Note != "" {
			fmt.Fprintf(stdout, "note: %s\n", s.Note)
		}
		fmt.Fprintf(stdout, "next runs: %s\n", joinTimes(s.NextRuns))
		fmt.Fprintf(stdout, "running: %s\n", orNone(strings.Join(s.Running, ", ")))
		fmt.Fprintf(stdout, "recent runs: %s\n", orNone(strings.Join(s.RecentRuns, ", ")))
		return nil
	case "pause", "resume":
		err = runner.PauseSchedule(ctx, c, name, sub == "pause", *note)
	case "trigger":
		err = runner.TriggerSchedule(ctx, c, name)
	case "delete":
		err = runner.DeleteSchedule(ctx, c, name)
	}
	if errors.Is(err, runner.ErrNoSchedule) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	return done(map[string]string{"pause": "paused", "resume": "resumed", "trigger": "triggered (skipped if a run is still going)", "delete": "deleted (its sweeps stay stored)"}[sub])
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
