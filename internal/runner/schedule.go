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
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	if len(planJSON) > activities.MaxPlanPayload {
		return fmt.Errorf("plan %s is %d bytes resolved, over the limit of %d: split it into several plans", plan.Name, len(planJSON), activities.MaxPlanPayload)
	}
	in := workflows.SweepInput{ // SweepID empty: the run's workflow id names it
		PlanJSON: string(planJSON), Trials: plan.TrialCount(),
		ShardSize: plan.ShardSize, Concurrency: plan.Concurrency, Judge: plan.Judge != nil, MaxUSD: plan.MaxUSD,
	}
	var s client.ScheduleSpec
	switch {
	case spec.Cron != "" && spec.Every > 0:
		return errors.New("give a cron expression or an interval, not both")
	case spec.Cron != "":
		s.CronExpressions = []string{spec.Cron}
	case spec.Every > 0 && spec.Every < MinScheduleInterval:
		return fmt.Errorf("%w: an interval of %s is under the floor of %s", ErrBadSchedule, spec.Every, MinScheduleInterval)
	case spec.Every > 0:
		s.Intervals = []client.ScheduleIntervalSpec{{Every: spec.Every}}
	default:
		return errors.New("a schedule needs a cron expression or an interval")
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
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &exists) || errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("%w: %q (delete it first, or pick another name)", ErrScheduleExists, name)
	case errors.As(err, &invalid):
		// Temporal parses the cron expression: what it refuses is the
		// user's to fix.
		return fmt.Errorf("%w: %s", ErrBadSchedule, invalid.Message)
	}
	return err
}

// ErrScheduleExists is returned by CreateSchedule for a name in use, and
// ErrBadSchedule for a spec Temporal refuses (a cron expression it cannot
// parse): both are the user's input (exit 2).
var (
	ErrScheduleExists = errors.New("schedule already exists")
	ErrBadSchedule    = errors.New("bad schedule")
)

// ScheduleSummary is what `schedule list` and `describe` show.
type ScheduleSummary struct {
	Name       string      `json:"name"`
	Spec       string      `json:"spec"`
	Paused     bool        `json:"paused"`
	Note       string      `json:"note,omitempty"`
	NextRuns   []time.Time `json:"next_runs"`
	RecentRuns []string    `json:"recent_runs"` // sweep ids, newest first
	Running    []string    `json:"running"`     // sweep ids
}

// Schedules lists rebound's schedules, by name.
func Schedules(ctx context.Context, c client.Client) ([]ScheduleSummary, error) {
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, err
	}
	var out []ScheduleSummary
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutPrefix(e.ID, ScheduleID(""))
		if !ok {
			continue
		}
		s := ScheduleSummary{Name: name, Paused: e.Paused, Note: e.Note, NextRuns: e.NextActionTimes, Spec: specString(e.Spec)}
		for i := len(e.RecentActions) - 1; i >= 0; i-- {
			if r := e.RecentActions[i].StartWorkflowResult; r != nil {
				s.RecentRuns = append(s.RecentRuns, strings.TrimPrefix(r.WorkflowID, "sweep/"))
			}
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
	if d.Schedule.Spec != nil {
		s.Spec = specString(d.Schedule.Spec)
	}
	for i := len(d.Info.RecentActions) - 1; i >= 0; i-- {
		if r := d.Info.RecentActions[i].StartWorkflowResult; r != nil {
			s.RecentRuns = append(s.RecentRuns, strings.TrimPrefix(r.WorkflowID, "sweep/"))
		}
	}
	for _, r := range d.Info.RunningWorkflows {
		s.Running = append(s.Running, strings.TrimPrefix(r.WorkflowID, "sweep/"))
	}
	return s, nil
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

// TriggerSchedule starts a run now (skipped if one is still running).
func TriggerSchedule(ctx context.Context, c client.Client, name string) error {
	return scheduleErr(name, c.ScheduleClient().GetHandle(ctx, ScheduleID(name)).Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP}))
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

func specString(s *client.ScheduleSpec) string {
	if s == nil {
		return ""
	}
	var parts []string
	parts = append(parts, s.CronExpressions...)
	for _, iv := range s.Intervals {
		parts = append(parts, "every "+iv.Every.String())
	}
	for _, c := range s.Calendars {
		parts = append(parts, fmt.Sprintf("calendar %v", c.Comment))
	}
	return strings.Join(parts, "; ")
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
