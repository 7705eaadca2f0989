package runner

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// exitedPID is the pid of a process of this host that has exited.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no 'true' to run: %v", err)
	}
	return cmd.Process.Pid
}

func TestGoneLocally(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	dead := exitedPID(t)
	for _, tc := range []struct {
		identity string
		want     bool
	}{
		{fmt.Sprintf("%d@%s@rebound", os.Getpid(), host), false}, // this process
		{fmt.Sprintf("%d@%s@", dead, host), true},                // exited
		{fmt.Sprintf("%d@%s-elsewhere@rebound", dead, host), false},
		{"worker-7", false},
		{"@" + host + "@", false},
		{"", false},
	} {
		if got := goneLocally(tc.identity); got != tc.want {
			t.Errorf("goneLocally(%q) = %v, want %v", tc.identity, got, tc.want)
		}
	}
}

func TestReconnecting(t *testing.T) {
	host, _ := os.Hostname()
	alive := fmt.Sprintf("%d@%s@rebound", os.Getpid(), host)
	dead := fmt.Sprintf("%d@%s@rebound", exitedPID(t), host)
	now := time.Now()
	running := func(pollers int, p ...PendingShard) SweepState {
		return SweepState{Found: true, Status: "running", TaskQueue: "q", Pollers: pollers, Pending: p}
	}
	for _, tc := range []struct {
		name string
		s    SweepState
		want bool
	}{
		{"a fresh heartbeat, worker alive", running(0, PendingShard{State: "started", LastWorker: alive, LastHeartbeat: now.Add(-3 * time.Second)}), true},
		{"a fresh heartbeat of another host", running(0, PendingShard{State: "started", LastWorker: "1@elsewhere@", LastHeartbeat: now}), true},
		{"the worker is gone", running(0, PendingShard{State: "started", LastWorker: dead, LastHeartbeat: now}), false},
		{"a stale heartbeat", running(0, PendingShard{State: "started", LastWorker: alive, LastHeartbeat: now.Add(-time.Minute)}), false},
		{"scheduled only", running(0, PendingShard{State: "scheduled"}), false},
		{"polled", running(1, PendingShard{State: "started", LastWorker: alive, LastHeartbeat: now}), false},
		{"closed", SweepState{Found: true, Status: "completed", Pending: []PendingShard{{State: "started", LastWorker: alive, LastHeartbeat: now}}}, false},
	} {
		if got := tc.s.Reconnecting(); got != tc.want {
			t.Errorf("%s: Reconnecting = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := running(0, PendingShard{State: "started", LastWorker: alive, LastHeartbeat: now}).Summary(); got != "reconnecting: no worker polls task queue q yet, but the worker of a running shard heartbeat within 20s" {
		t.Errorf("Summary = %q", got)
	}
	if got := running(0, PendingShard{State: "started", LastWorker: dead, LastHeartbeat: now}).Summary(); got != "stalled: no worker polls task queue q" {
		t.Errorf("Summary of a dead worker's sweep = %q", got)
	}
}
