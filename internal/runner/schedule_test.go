package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// A schedule on a real dev server: triggered, its run is a normal sweep
// named after the schedule, stored completely; list and describe show it;
// pause, resume and delete work; an unknown schedule is reported as such.
func TestScheduleRunsASweep(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	store, c := openStack(t, ctx, srv, lib, "runner_schedule")
	queue := "runner-schedule-" + t.Name()
	w, err := NewWorker(c, queue, &activities.Activities{Store: store, RedactionKey: testRedactionKey}, WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	plan, err := scenario.LoadPlan("../../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	name := "nightly-test"
	if err := CreateSchedule(ctx, c, queue, name, plan, ScheduleSpec{Every: 24 * time.Hour, Paused: true, Note: "test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DeleteSchedule(context.Background(), c, name) })
	if err := CreateSchedule(ctx, c, queue, name, plan, ScheduleSpec{Every: time.Hour}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
	trig, err := TriggerSchedule(ctx, c, name, 30*time.Second)
	if err != nil || !trig.Started || !IsRunOf(trig.SweepID, name) || trig.RunID == "" {
		t.Fatalf("trigger: %+v %v", trig, err)
	}
	var run record.Sweep
	for run.Status != sweepstatus.Completed {
		if ctx.Err() != nil {
			t.Fatalf("the triggered run did not complete: %+v", run)
		}
		time.Sleep(300 * time.Millisecond)
		runs, err := ScheduleRuns(ctx, store, name, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 {
			run = runs[0]
		}
	}
	if run.SweepID != trig.SweepID || run.TrialsPlanned != uint64(plan.TrialCount()) {
		t.Fatalf("run = %+v", run)
	}
	if got, ok := ScheduleOf(run.SweepID); !ok || got != name {
		t.Fatalf("ScheduleOf(%s) = %q, %v", run.SweepID, got, ok)
	}
	if n, err := store.CountTrials(ctx, run.SweepID); err != nil || n != uint64(plan.TrialCount()) {
		t.Fatalf("stored %d trials (%v), want %d", n, err, plan.TrialCount())
	}
	d, err := DescribeSchedule(ctx, c, name)
	if err != nil || !d.Paused || d.Spec != "every 24h" || d.Every != "24h" || len(d.RecentRuns) != 1 || d.RecentRuns[0] != run.SweepID {
		t.Fatalf("describe = %+v (%v)", d, err)
	}
	list, err := Schedules(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range list {
		found = found || s.Name == name
	}
	if !found {
		t.Fatalf("list = %+v", list)
	}
	if err := PauseSchedule(ctx, c, name, false, "resumed"); err != nil {
		t.Fatal(err)
	}
	if d, _ := DescribeSchedule(ctx, c, name); d.Paused {
		t.Fatalf("still paused after resume")
	}
	// schedule update: a new plan takes effect at the next run; the
	// schedule's past runs stay.
	small, err := scenario.LoadPlan("../../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	small.Seeds = small.Seeds[:1]
	if err := UpdateSchedule(ctx, c, name, ScheduleChange{Plan: small, Every: 12 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	trig2, err := TriggerSchedule(ctx, c, name, 30*time.Second)
	if err != nil || !trig2.Started || trig2.SweepID == trig.SweepID {
		t.Fatalf("trigger after update: %+v %v", trig2, err)
	}
	for {
		sw, err := store.Sweep(ctx, trig2.SweepID)
		if err == nil && sw.Status == sweepstatus.Completed {
			if sw.TrialsPlanned != uint64(small.TrialCount()) {
				t.Fatalf("the run after update planned %d trials, want the new plan's %d", sw.TrialsPlanned, small.TrialCount())
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run after update did not complete: %+v %v", sw, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if d, err := DescribeSchedule(ctx, c, name); err != nil || d.Spec != "every 12h" || len(d.RecentRuns) != 2 {
		t.Fatalf("describe after update: %+v %v", d, err)
	}
	if err := DeleteSchedule(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	if _, err := DescribeSchedule(ctx, c, name); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("describe after delete: %v", err)
	}
}

func TestScheduleNames(t *testing.T) {
	for name, ok := range map[string]bool{"nightly": true, "prod_v2-eu": true, "": false, "a b": false, "x/y": false, "-x": false, "a.b": false} {
		if ValidScheduleName(name) != ok {
			t.Errorf("ValidScheduleName(%q) = %v, want %v", name, !ok, ok)
		}
	}
	if got, ok := ScheduleOf("sched-prod-eu-2026-12-01T02:00:00Z"); !ok || got != "prod-eu" {
		t.Errorf("ScheduleOf = %q, %v", got, ok)
	}
	if _, ok := ScheduleOf("quickstart-20261201-020000-abc123"); ok {
		t.Errorf("an unscheduled sweep parsed as scheduled")
	}
}

// sweepList is a store that knows only its sweeps (newest first).
type sweepList struct {
	storage.Store
	sweeps []record.Sweep
}

func (s sweepList) Sweeps(context.Context, int) ([]record.Sweep, error) { return s.sweeps, nil }

func (s sweepList) Sweep(_ context.Context, id string) (record.Sweep, error) {
	for _, sw := range s.sweeps {
		if sw.SweepID == id {
			return sw, nil
		}
	}
	return record.Sweep{}, record.ErrNotFound
}

// Schedules whose names share a prefix ("nightly", "nightly-fast") never
// read each other's runs: not in trend's list, not as the previous run a
// nightly gate pairs against.
func TestSchedulesSharingAPrefix(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC) }
	run := func(name string, h int) record.Sweep {
		return record.Sweep{SweepID: "sched-" + name + "-" + at(h).Format(time.RFC3339), Name: "plan", Status: sweepstatus.Completed, CreatedAt: at(h)}
	}
	store := sweepList{sweeps: []record.Sweep{ // newest first
		run("nightly-fast", 5), run("nightly", 4), run("nightly-fast", 3), run("nightly-fast-eu", 2), run("nightly", 1),
	}}
	ctx := context.Background()
	runs, err := ScheduleRuns(ctx, store, "nightly", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].SweepID != "sched-nightly-2026-12-01T04:00:00Z" || runs[1].SweepID != "sched-nightly-2026-12-01T01:00:00Z" {
		t.Fatalf("nightly's runs: %+v", runs)
	}
	fast, _ := ScheduleRuns(ctx, store, "nightly-fast", 0, false)
	if len(fast) != 2 {
		t.Fatalf("nightly-fast's runs: %+v", fast)
	}
	prev, err := PreviousRun(ctx, store, "sched-nightly-2026-12-01T04:00:00Z")
	if err != nil || prev != "sched-nightly-2026-12-01T01:00:00Z" {
		t.Fatalf("previous of nightly's 04:00 run: %q, %v (nightly-fast's 03:00 run must not be it)", prev, err)
	}
	prev, err = PreviousRun(ctx, store, "sched-nightly-fast-2026-12-01T05:00:00Z")
	if err != nil || prev != "sched-nightly-fast-2026-12-01T03:00:00Z" {
		t.Fatalf("previous of nightly-fast's 05:00 run: %q, %v", prev, err)
	}
	if _, err := PreviousRun(ctx, store, "sched-nightly-fast-eu-2026-12-01T02:00:00Z"); !errors.Is(err, ErrNoPreviousRun) {
		t.Fatalf("nightly-fast-eu has one run: %v", err)
	}
	for id, want := range map[string]string{
		"sched-nightly-2026-12-01T04:00:00Z":      "nightly",
		"sched-nightly-fast-2026-12-01T04:00:00Z": "nightly-fast",
		"sched-a-b-c-2026-12-01T04:00:00Z":        "a-b-c",
		"sched-nightly-2026-12-01":                "",
		"sched-2026-12-01T04:00:00Z":              "",
		"sched-nightly-2026-13-01T04:00:00Z":      "",
	} {
		got, ok := ScheduleOf(id)
		if got != want || ok != (want != "") {
			t.Errorf("ScheduleOf(%q) = %q, %v, want %q", id, got, ok, want)
		}
	}
}

// describe and list show a cron expression as it was given (Temporal
// stores a calendar), through updates too; a trigger says which run it
// started, and a second trigger in the same second, while that run is
// still going, says it was skipped.
func TestScheduleAsSeen(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, c := openStack(t, ctx, srv, lib, "runner_schedule_seen")
	plan, err := scenario.LoadPlan("../../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	name := "seen-test"
	// No worker polls this queue: a run, once started, keeps going.
	queue := "runner-schedule-seen-no-worker"
	if err := CreateSchedule(ctx, c, queue, name, plan, ScheduleSpec{Cron: "0 2 * * *", Paused: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DeleteSchedule(context.Background(), c, name) })
	seen := func(want string) {
		t.Helper()
		d, err := DescribeSchedule(ctx, c, name)
		if err != nil || d.Spec != want {
			t.Fatalf("describe: spec %q (%v), want %q: %+v", d.Spec, err, want, d)
		}
		list, err := Schedules(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Name == name && s.Spec != want {
				t.Fatalf("list: spec %q, want %q", s.Spec, want)
			}
		}
	}
	seen("0 2 * * *")
	if err := UpdateSchedule(ctx, c, name, ScheduleChange{Cron: "30 3 * * 1-5 # weekdays"}); err != nil {
		t.Fatal(err)
	}
	seen("30 3 * * 1-5 # weekdays")
	if err := UpdateSchedule(ctx, c, name, ScheduleChange{Cron: "bogus"}); !errors.Is(err, ErrBadSchedule) {
		t.Fatalf("update --cron bogus: %v", err)
	}
	if err := UpdateSchedule(ctx, c, "no-such-schedule", ScheduleChange{Every: time.Hour}); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("update of an unknown schedule: %v", err)
	}
	first, err := TriggerSchedule(ctx, c, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	second, err := TriggerSchedule(ctx, c, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Started || !IsRunOf(first.SweepID, name) || first.Skipped {
		t.Fatalf("first trigger: %+v", first)
	}
	if !second.Skipped || second.Started || len(second.Running) != 1 || second.Running[0] != first.SweepID {
		t.Fatalf("second trigger, the first run still going: %+v", second)
	}
	_ = c.CancelWorkflow(ctx, WorkflowID(first.SweepID), "")
}

// A trigger in the second the schedule's last run started waits for the
// next second: the run's sweep id is its start time to the second, and a
// second run under the id of one that ended would share its sweep.
func TestTriggerWaitsForAFreshSecond(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	start := time.Now()
	if err := sameSecond(ctx, []client.ScheduleActionResult{{ScheduleTime: now}}); err != nil {
		t.Fatal(err)
	}
	if after := time.Now(); after.Truncate(time.Second).Equal(now.Truncate(time.Second)) {
		t.Fatalf("sameSecond returned in the second of the last run (%v after %v)", after, now)
	}
	if waited := time.Since(start); waited > 1200*time.Millisecond {
		t.Fatalf("sameSecond waited %v, want under a second and a margin", waited)
	}
	start = time.Now()
	for _, recent := range [][]client.ScheduleActionResult{nil, {{ScheduleTime: now.Add(-5 * time.Second)}}, {{ScheduleTime: now.Add(time.Hour)}}} {
		if err := sameSecond(ctx, recent); err != nil {
			t.Fatal(err)
		}
	}
	if waited := time.Since(start); waited > 50*time.Millisecond {
		t.Fatalf("sameSecond waited %v with no run in this second", waited)
	}
}
