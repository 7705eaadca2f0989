package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// Nightly regression sweeps run on Temporal Schedules. A schedule starts
// the sweep workflow with its resolved plan; each run is a normal sweep
// whose id is the run's workflow id: sched-NAME-<start time>.

// ScheduleSpec says when a schedule fires.
type ScheduleSpec struct {
	Cron    string        // a cron expression ("0 2 * * *"), or
	Every   time.Duration // an interval
	Catchup time.Duration // how late a missed run may still start (0: one minute)
	Paused  bool
	Note    string
}

// MinScheduleInterval is the shortest --every a schedule takes: a sweep is
// a batch of trials, not a poll, and an interval under a minute would pile
// skipped runs onto one that is still going.
const MinScheduleInterval = time.Minute

// ScheduleID is the Temporal id of a rebound schedule.
func ScheduleID(name string) string { return "rebound-schedule/" + name }

// ScheduledSweepPrefix is the sweep id prefix of a schedule's runs.
func ScheduledSweepPrefix(name string) string { return "sched-" + name + "-" }

// ValidScheduleName reports whether name can name a schedule (and prefix
// sweep ids): letters, digits, '-' and '_'.
func ValidScheduleName(name string) bool { return scheduleName.MatchString(name) }

var scheduleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// CreateSchedule creates a schedule that runs plan on queue; overlapping
// runs are skipped (a night that is still running when the next one is due
// keeps running, and the next one is not started).
func CreateSchedule(ctx context.Context, c client.Client, queue, name string, plan *scenario.Resolved, spec ScheduleSpec) error {
	if !ValidScheduleName(name) {
		return fmt.Errorf("schedule name %q: use letters, digits, '-' and '_'", name)
	}
	in, err := scheduleInput(plan)
	if err != nil {
		return err
	}
	s, err := scheduleSpec(spec.Cron, spec.Every)
	if err != nil {
		return err
	}
	catchup := spec.Catchup
	if catchup <= 0 {
		catchup = time.Minute
	}
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   ScheduleID(name),
		Spec: s,
		Action: &client.ScheduleWorkflowAction{
			ID:        WorkflowID(strings.TrimSuffix(ScheduledSweepPrefix(name), "-")),
			Workflow:  workflows.SweepWorkflowName,
			Args:      []any{in},
			TaskQueue: queue,
		},
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: catchup,
		Paused:        spec.Paused,
		Note:          spec.Note,
	})
	var exists *serviceerror.AlreadyExists
	switch {
	case errors.As(err, &exists) || errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("%w: %q (delete it first, pick another name, or change it with 'rebound schedule update')", ErrScheduleExists, name)
	}
	return specErr(err)
}

// specErr makes what Temporal refuses in a spec (a cron expression it
// cannot parse) an ErrBadSchedule: the user's to fix.
func specErr(err error) error {
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) {
		return fmt.Errorf("%w: %s", ErrBadSchedule, invalid.Message)
	}
	return err
}

// scheduleInput is the sweep workflow's input for a schedule's runs.
func scheduleInput(plan *scenario.Resolved) (workflows.SweepInput, error) {
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return workflows.SweepInput{}, fmt.Errorf("encode plan: %w", err)
	}
	if len(planJSON) > activities.MaxPlanPayload {
		return workflows.SweepInput{}, fmt.Errorf("plan %s is %d bytes resolved, over the limit of %d: split it into several plans", plan.Name, len(planJSON), activities.MaxPlanPayload)
	}
	return workflows.SweepInput{ // SweepID empty: the run's workflow id names it
		PlanJSON: string(planJSON), Trials: plan.TrialCount(),
		ShardSize: plan.ShardSize, Concurrency: plan.Concurrency, Judge: plan.Judge != nil, MaxUSD: plan.MaxUSD,
	}, nil
}

// cronComment prefixes the comment that keeps a cron expression as it was
// given: Temporal stores a cron expression as a structured calendar (what
// describe and list return), and keeps the text after '#' as its comment.
const cronComment = "rebound-cron: "

// scheduleSpec says when a schedule fires: a cron expression (kept as
// given, in the calendar's comment) or an interval of at least
// MinScheduleInterval.
func scheduleSpec(cron string, every time.Duration) (client.ScheduleSpec, error) {
	var s client.ScheduleSpec
	switch {
	case cron != "" && every > 0:
		return s, errors.New("give a cron expression or an interval, not both")
	case cron != "":
		expr := strings.TrimSpace(cron)
		if i := strings.IndexByte(expr, '#'); i >= 0 {
			expr = strings.TrimSpace(expr[:i])
		}
		s.CronExpressions = []string{expr + " # " + cronComment + strings.TrimSpace(cron)}
	case every > 0 && every < MinScheduleInterval:
		return s, fmt.Errorf("%w: an interval of %s is under the floor of %s", ErrBadSchedule, every, MinScheduleInterval)
	case every > 0:
		s.Intervals = []client.ScheduleIntervalSpec{{Every: every}}
	default:
		return s, errors.New("a schedule needs a cron expression or an interval")
	}
	return s, nil
}

// ErrScheduleExists is returned by CreateSchedule for a name in use, and
// ErrBadSchedule for a spec Temporal refuses (a cron expression it cannot
// parse): both are the user's input (exit 2).
var (
	ErrScheduleExists = errors.New("schedule already exists")
	ErrBadSchedule    = errors.New("bad schedule")
)

// ScheduleSummary is what `schedule list` and `describe` show. Spec is
// when it fires as it was given: the cron expression ("0 2 * * *") or
// "every 24h"; Cron and Every say the same for machines.
type ScheduleSummary struct {
	Name       string      `json:"name"`
	Spec       string      `json:"spec"`
	Cron       string      `json:"cron,omitempty"`
	Every      string      `json:"every,omitempty"`
	Paused     bool        `json:"paused"`
	Note       string      `json:"note,omitempty"`
	NextRuns   []time.Time `json:"next_runs"`
	RecentRuns []string    `json:"recent_runs"` // sweep ids, newest first
	Running    []string    `json:"running"`     // sweep ids
}

// Schedules lists rebound's schedules, by name. Each is described (the
// list Temporal keeps is updated asynchronously: a schedule just updated
// would show its old spec).
func Schedules(ctx context.Context, c client.Client) ([]ScheduleSummary, error) {
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, err
	}
	out := []ScheduleSummary{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutPrefix(e.ID, ScheduleID(""))
		if !ok {
			continue
		}
		s, err := DescribeSchedule(ctx, c, name)
		if errors.Is(err, ErrNoSchedule) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DescribeSchedule returns one schedule.
func DescribeSchedule(ctx context.Context, c client.Client, name string) (ScheduleSummary, error) {
	d, err := c.ScheduleClient().GetHandle(ctx, ScheduleID(name)).Describe(ctx)
	if err != nil {
		return ScheduleSummary{}, scheduleErr(name, err)
	}
	s := ScheduleSummary{Name: name, Paused: d.Schedule.State.Paused, Note: d.Schedule.State.Note, NextRuns: d.Info.NextActionTimes}
	s.setSpec(d.Schedule.Spec)
	s.RecentRuns = recentRuns(d.Info.RecentActions)
	for _, r := range d.Info.RunningWorkflows {
		s.Running = append(s.Running, strings.TrimPrefix(r.WorkflowID, "sweep/"))
	}
	return s, nil
}

// recentRuns are the sweep ids of a schedule's recent actions, newest first.
func recentRuns(actions []client.ScheduleActionResult) []string {
	var out []string
	for i := len(actions) - 1; i >= 0; i-- {
		if r := actions[i].StartWorkflowResult; r != nil {
			out = append(out, strings.TrimPrefix(r.WorkflowID, "sweep/"))
		}
	}
	return out
}

func (s *ScheduleSummary) setSpec(spec *client.ScheduleSpec) {
	if spec == nil {
		return
	}
	var parts []string
	for _, e := range spec.CronExpressions {
		s.Cron = e
		parts = append(parts, e)
	}
	for _, c := range spec.Calendars {
		if expr, ok := strings.CutPrefix(c.Comment, cronComment); ok {
			s.Cron = expr
			parts = append(parts, expr)
		} else {
			parts = append(parts, fmt.Sprintf("calendar %v", c.Comment))
		}
	}
	for _, iv := range spec.Intervals {
		s.Every = shortDuration(iv.Every)
		parts = append(parts, "every "+s.Every)
	}
	s.Spec = strings.Join(parts, "; ")
}

// shortDuration prints 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	str := d.String()
	if strings.HasSuffix(str, "m0s") {
		str = strings.TrimSuffix(str, "0s")
	}
	if strings.HasSuffix(str, "h0m") {
		str = strings.TrimSuffix(str, "0m")
	}
	return str
}

// PauseSchedule pauses (or, with pause false, resumes) a schedule.
func PauseSchedule(ctx context.Context, c client.Client, name string, pause bool, note string) error {
	h := c.ScheduleClient().GetHandle(ctx, ScheduleID(name))
	var err error
	if pause {
		err = h.Pause(ctx, client.SchedulePauseOptions{Note: note})
	} else {
		err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note})
	}
	return scheduleErr(name, err)
}

// DeleteSchedule deletes a schedule; its past sweeps stay stored.
func DeleteSchedule(ctx context.Context, c client.Client, name string) error {
	return scheduleErr(name, c.ScheduleClient().GetHandle(ctx, ScheduleID(name)).Delete(ctx))
}

// TriggerResult is what a trigger did: Started a run (SweepID, RunID), or
// Skipped it because a run is still going (Running lists those). Neither
// set: Temporal had not acted on the trigger when TriggerSchedule stopped
// waiting.
type TriggerResult struct {
	Started bool     `json:"started"`
	SweepID string   `json:"sweep_id,omitempty"`
	RunID   string   `json:"run_id,omitempty"`
	Skipped bool     `json:"skipped"`
	Running []string `json:"running"`
}

// TriggerSchedule starts a run now, or skips it when one is still running,
// and waits up to wait for Temporal to say which: the schedule's counts of
// actions taken and skipped move by one. A trigger in the second its last
// run started waits for the next second (sameSecond), so every run has a
// sweep id of its own.
func TriggerSchedule(ctx context.Context, c client.Client, name string, wait time.Duration) (TriggerResult, error) {
	h := c.ScheduleClient().GetHandle(ctx, ScheduleID(name))
	before, err := h.Describe(ctx)
	if err != nil {
		return TriggerResult{}, scheduleErr(name, err)
	}
	if err := sameSecond(ctx, before.Info.RecentActions); err != nil {
		return TriggerResult{}, err
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP}); err != nil {
		return TriggerResult{}, scheduleErr(name, err)
	}
	deadline := time.Now().Add(wait)
	for {
		d, err := h.Describe(ctx)
		if err != nil {
			return TriggerResult{}, scheduleErr(name, err)
		}
		if r, done := triggerOutcome(before.Info, d.Info); done || !time.Now().Before(deadline) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return TriggerResult{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sameSecond waits, when the schedule's last run started in the current
// second, until the next one: a run's workflow id (and sweep id) is its
// start time to the second, and Temporal starts a second run under the id
// of a run that has already ended, so two triggers in one second of a
// short sweep would write two runs into one sweep. The margin covers a
// little clock skew with the server, whose time names the run.
func sameSecond(ctx context.Context, recent []client.ScheduleActionResult) error {
	if len(recent) == 0 {
		return nil
	}
	const margin = 150 * time.Millisecond
	next := recent[len(recent)-1].ScheduleTime.Truncate(time.Second).Add(time.Second + margin)
	wait := time.Until(next)
	if wait <= 0 || wait > time.Second+margin {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// triggerOutcome compares a schedule's info before and after a trigger.
func triggerOutcome(before, after client.ScheduleInfo) (TriggerResult, bool) {
	r := TriggerResult{}
	for _, w := range after.RunningWorkflows {
		r.Running = append(r.Running, strings.TrimPrefix(w.WorkflowID, "sweep/"))
	}
	switch {
	case after.NumActions > before.NumActions && len(after.RecentActions) > 0:
		r.Started = true
		if w := after.RecentActions[len(after.RecentActions)-1].StartWorkflowResult; w != nil {
			r.SweepID, r.RunID = strings.TrimPrefix(w.WorkflowID, "sweep/"), w.FirstExecutionRunID
		}
		return r, true
	case after.NumActionsSkippedOverlap > before.NumActionsSkippedOverlap:
		r.Skipped = true
		return r, true
	}
	return r, false
}

// ScheduleChange is what UpdateSchedule changes; what is zero (nil) stays.
type ScheduleChange struct {
	Plan    *scenario.Resolved // the plan the runs sweep (resolved now)
	Cron    string             // a new cron expression, or
	Every   time.Duration      // a new interval (replacing the cron expression or interval)
	Catchup time.Duration
}

// UpdateSchedule changes a schedule in place: its plan, when it fires,
// its catch-up window. Its state (paused or not, the note), its task queue
// and its past runs are kept.
func UpdateSchedule(ctx context.Context, c client.Client, name string, ch ScheduleChange) error {
	var (
		spec client.ScheduleSpec
		in   workflows.SweepInput
		err  error
	)
	if ch.Cron != "" || ch.Every != 0 {
		if spec, err = scheduleSpec(ch.Cron, ch.Every); err != nil {
			return err
		}
	}
	if ch.Plan != nil {
		if in, err = scheduleInput(ch.Plan); err != nil {
			return err
		}
	}
	h := c.ScheduleClient().GetHandle(ctx, ScheduleID(name))
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := u.Description.Schedule
		if ch.Cron != "" || ch.Every != 0 {
			s.Spec = &spec
		}
		action, ok := s.Action.(*client.ScheduleWorkflowAction)
		if !ok {
			return nil, fmt.Errorf("schedule %q does not start a workflow", name)
		}
		if ch.Plan != nil {
			action.Args = []any{in}
		}
		if ch.Catchup > 0 && s.Policy != nil {
			s.Policy.CatchupWindow = ch.Catchup
		}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	return specErr(scheduleErr(name, err))
}

// ErrNoSchedule is returned for an unknown schedule.
var ErrNoSchedule = errors.New("no such schedule")

func scheduleErr(name string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %q (list them with 'rebound schedule list')", ErrNoSchedule, name)
	}
	return err
}

// ScheduleRuns returns the stored sweeps of a schedule, newest first,
// limited to n (all when n <= 0); completedOnly keeps finished runs.
func ScheduleRuns(ctx context.Context, store storage.Store, name string, n int, completedOnly bool) ([]record.Sweep, error) {
	all, err := store.Sweeps(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []record.Sweep
	for _, sw := range all { // newest first
		if !IsRunOf(sw.SweepID, name) || (completedOnly && sw.Status != sweepstatus.Completed) {
			continue
		}
		out = append(out, sw)
		if n > 0 && len(out) == n {
			break
		}
	}
	return out, nil
}

// ScheduleOf returns the schedule name of a scheduled run's sweep id:
// "sched-NAME-<start time>", the start time as Temporal writes it (RFC 3339
// in UTC, "2026-11-30T02:00:00Z"). The name is what precedes the time,
// exactly, so schedules whose names share a prefix ("nightly",
// "nightly-fast") never read each other's runs.
func ScheduleOf(sweepID string) (string, bool) {
	rest, ok := strings.CutPrefix(sweepID, "sched-")
	if !ok {
		return "", false
	}
	const stamp = len("2006-01-02T15:04:05Z")
	if len(rest) < stamp+2 || rest[len(rest)-stamp-1] != '-' {
		return "", false
	}
	if _, err := time.Parse(time.RFC3339, rest[len(rest)-stamp:]); err != nil {
		return "", false
	}
	name := rest[:len(rest)-stamp-1]
	if !ValidScheduleName(name) {
		return "", false
	}
	return name, true
}

// IsRunOf reports whether a sweep is a run of the named schedule.
func IsRunOf(sweepID, schedule string) bool {
	name, ok := ScheduleOf(sweepID)
	return ok && name == schedule
}
