package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"rebound/activities"
	"rebound/workflows"
)

// RunQueue is the task queue of a sweep started by `rebound run` on the
// embedded stack: one queue per sweep, polled only by the process that runs
// it (or resumes it on request), so an unfinished sweep left in a data dir
// never runs its shards inside an unrelated later run.
func RunQueue(sweepID string) string { return "rebound-run-" + sweepID }

// PendingShard is a shard activity Temporal holds for a sweep: its attempt
// and, when an attempt failed, the last error (disk full, store down...).
type PendingShard struct {
	ActivityID  string `json:"activity_id"`
	Activity    string `json:"activity"`
	State       string `json:"state"` // scheduled, started, cancel_requested
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	LastError   string `json:"last_error,omitempty"`
	// Waiting says why a shard is waiting for the store (full or
	// unreachable) instead of failing its attempt, from its heartbeat.
	Waiting       string    `json:"waiting,omitempty"`
	LastWorker    string    `json:"last_worker,omitempty"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitempty"`
}

// SweepState is what Temporal knows of a sweep's workflow.
type SweepState struct {
	SweepID   string `json:"sweep_id"`
	Found     bool   `json:"found"`  // the workflow exists on this cluster
	Status    string `json:"status"` // running, completed, failed, canceled, terminated, timed_out, continued_as_new
	TaskQueue string `json:"task_queue,omitempty"`
	// Pollers is the number of workers polling the sweep's task queue for
	// activities (0: nothing will run its shards), less those of this host
	// whose process is gone.
	Pollers int            `json:"pollers"`
	Pending []PendingShard `json:"pending,omitempty"`
}

// Running says whether the workflow is open.
func (s SweepState) Running() bool {
	return s.Found && s.Status == workflowStatus(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
}

// Completed says whether the workflow closed successfully (its result holds
// the final progress).
func (s SweepState) Completed() bool {
	return s.Found && s.Status == workflowStatus(enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
}

// WaitingForStore lists the pending shards waiting for the store.
func (s SweepState) WaitingForStore() []PendingShard {
	var out []PendingShard
	for _, p := range s.Pending {
		if p.Waiting != "" {
			out = append(out, p)
		}
	}
	return out
}

// Failing lists the pending shards whose last attempt failed.
func (s SweepState) Failing() []PendingShard {
	var out []PendingShard
	for _, p := range s.Pending {
		if p.LastError != "" {
			out = append(out, p)
		}
	}
	return out
}

// DescribeSweep reads a sweep's workflow state from Temporal: status, task
// queue, the workers polling it and the pending shard activities with their
// attempts and last errors (failure messages travel encrypted: redactionKey
// decrypts them). A sweep Temporal does not know has Found false.
func DescribeSweep(ctx context.Context, c client.Client, redactionKey []byte, sweepID string) (SweepState, error) {
	st := SweepState{SweepID: sweepID}
	secure, err := SecureClientOptions(client.Options{}, redactionKey)
	if err != nil {
		return st, err
	}
	desc, err := c.DescribeWorkflow(ctx, WorkflowID(sweepID), "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return st, nil
		}
		return st, fmt.Errorf("describe sweep %s: %w", sweepID, err)
	}
	d := desc.RawResponse
	st.Found = true
	info := d.GetWorkflowExecutionInfo()
	st.Status = workflowStatus(info.GetStatus())
	st.TaskQueue = info.GetTaskQueue()
	for _, p := range d.GetPendingActivities() {
		ps := PendingShard{
			ActivityID: p.GetActivityId(), Activity: p.GetActivityType().GetName(),
			State:   strings.ToLower(strings.TrimPrefix(p.GetState().String(), "PENDING_ACTIVITY_STATE_")),
			Attempt: int(p.GetAttempt()), MaxAttempts: int(p.GetMaximumAttempts()),
			LastWorker: p.GetLastWorkerIdentity(),
		}
		if f := p.GetLastFailure(); f != nil {
			ps.LastError = secure.FailureConverter.FailureToError(f).Error()
		}
		if t := p.GetLastHeartbeatTime(); t != nil {
			ps.LastHeartbeat = t.AsTime()
		}
		if hd := p.GetHeartbeatDetails(); hd != nil && secure.DataConverter != nil {
			var cp activities.ShardCheckpoint
			if err := secure.DataConverter.FromPayloads(hd, &cp); err == nil {
				ps.Waiting = cp.Waiting
			}
		}
		if t := p.GetNextAttemptScheduleTime(); t != nil {
			ps.NextAttemptAt = t.AsTime()
		}
		st.Pending = append(st.Pending, ps)
	}
	sort.Slice(st.Pending, func(i, j int) bool { return st.Pending[i].ActivityID < st.Pending[j].ActivityID })
	if st.Running() && st.TaskQueue != "" {
		tq, err := c.DescribeTaskQueue(ctx, st.TaskQueue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err == nil {
			for _, p := range tq.GetPollers() {
				// Temporal lists a stopped worker for minutes.
				if !goneLocally(p.GetIdentity()) {
					st.Pollers++
				}
			}
		}
	}
	return st, nil
}

func workflowStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// OpenSweep is a sweep whose workflow is running.
type OpenSweep struct {
	SweepID   string    `json:"sweep_id"`
	TaskQueue string    `json:"task_queue"`
	StartedAt time.Time `json:"started_at"`
}

// OpenSweeps lists the sweeps whose workflows are running on the cluster.
func OpenSweeps(ctx context.Context, c client.Client) ([]OpenSweep, error) {
	var out []OpenSweep
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.SweepWorkflowName),
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list running sweeps: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := strings.TrimPrefix(e.GetExecution().GetWorkflowId(), "sweep/")
			o := OpenSweep{SweepID: id, TaskQueue: e.GetTaskQueue()}
			if t := e.GetStartTime(); t != nil {
				o.StartedAt = t.AsTime()
			}
			out = append(out, o)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// CancelSweep asks a sweep's workflow to cancel: it stops scheduling
// shards, its running shards see the cancellation at their next heartbeat,
// and it records the status cancelled (which needs a worker on its queue).
func CancelSweep(ctx context.Context, c client.Client, sweepID string) error {
	if err := c.CancelWorkflow(ctx, WorkflowID(sweepID), ""); err != nil {
		return fmt.Errorf("cancel sweep %s: %w", sweepID, err)
	}
	return nil
}

// WaitClosed waits until a sweep's workflow is closed and returns its final
// progress (the zero value, with the error, when it did not complete).
func WaitClosed(ctx context.Context, c client.Client, sweepID string) (workflows.Progress, error) {
	var p workflows.Progress
	err := c.GetWorkflow(ctx, WorkflowID(sweepID), "").Get(ctx, &p)
	return p, err
}
