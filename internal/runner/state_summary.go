package runner

import (
	"fmt"

	"rebound/workflows"
)

// Summary says in one line what a sweep stored as running is doing on
// Temporal: running with N workers, reconnecting (no worker polls yet, but
// one held a shard moments ago: the server restarted), stalled (no worker
// polls its queue: an embedded run was killed), or orphaned (its workflow is gone or closed),
// with its failing shards' count and first error.
func (s SweepState) Summary() string {
	var out string
	switch {
	case !s.Found:
		out = "orphaned: its workflow is unknown to Temporal"
	case !s.Running():
		out = "orphaned: its workflow is " + s.Status
	case s.Reconnecting():
		out = "reconnecting: no worker polls task queue " + s.TaskQueue + " yet, but the worker of a running shard heartbeat within " + workflows.HeartbeatTimeout.String()
	case s.Pollers == 0:
		out = "stalled: no worker polls task queue " + s.TaskQueue
	default:
		out = fmt.Sprintf("running: %d worker(s)", s.Pollers)
	}
	if w := s.WaitingForStore(); len(w) > 0 {
		out += fmt.Sprintf("; %d shard(s) %s", len(w), w[0].Waiting)
	}
	if f := s.Failing(); len(f) > 0 {
		out += fmt.Sprintf("; %d shard(s) failing, last error: %s", len(f), f[0].LastError)
	}
	return out
}
