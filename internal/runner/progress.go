package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/workflows"
)

// progressQueryTimeout bounds the progress query of a running sweep.
const progressQueryTimeout = 10 * time.Second

// CurrentProgress reads the progress of the sweep st describes from its
// workflow: a query while a worker serves it, the result once it
// completed. A running sweep no worker polls, or one that ended otherwise,
// has no progress to read: the error says why (a query would only time
// out).
func CurrentProgress(ctx context.Context, c client.Client, st SweepState) (workflows.Progress, error) {
	var p workflows.Progress
	switch {
	case st.Running() && st.Pollers > 0:
		qctx, cancel := context.WithTimeout(ctx, progressQueryTimeout)
		defer cancel()
		return Progress(qctx, c, st.SweepID)
	case st.Found && st.Completed():
		err := c.GetWorkflow(ctx, WorkflowID(st.SweepID), "").Get(ctx, &p)
		return p, err
	case st.Reconnecting():
		return p, errors.New("reconnecting: a worker held a shard moments ago and is not polling yet")
	case st.Running():
		return p, errors.New("no worker polls its task queue")
	case !st.Found:
		return p, errors.New("the workflow is unknown to Temporal")
	}
	return p, fmt.Errorf("the workflow ended %s", st.Status)
}
