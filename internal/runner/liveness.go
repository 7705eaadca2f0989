package runner

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"rebound/workflows"
)

// goneLocally reports whether a worker identity (the SDK's "PID@HOST@...")
// names a process of this host that no longer exists. Temporal keeps a
// poller in a task queue's list for minutes after its worker stopped, and a
// shard's last worker after it died; a worker of this host is checked
// instead of believed. An identity of another host, or one in another shape
// (a custom --identity), is never judged gone.
func goneLocally(identity string) bool {
	parts := strings.SplitN(identity, "@", 3)
	if len(parts) < 2 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	if host, err := os.Hostname(); err != nil || parts[1] != host {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// Reconnecting says whether a running sweep that no worker polls right now
// has a shard whose worker heartbeat within the heartbeat timeout and is
// not known to be gone: after the Temporal server restarted, its workers
// reconnect (a few seconds) and poll again, and the shards they hold are
// not lost.
func (s SweepState) Reconnecting() bool {
	if !s.Running() || s.Pollers > 0 {
		return false
	}
	for _, p := range s.Pending {
		if p.State == "started" && !p.LastHeartbeat.IsZero() && time.Since(p.LastHeartbeat) < workflows.HeartbeatTimeout && !goneLocally(p.LastWorker) {
			return true
		}
	}
	return false
}
