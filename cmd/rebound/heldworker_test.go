package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
)

// heldDataDir is a worker process that holds an embedded data dir (and
// serves its store) on a real Temporal dev server, with a plan of
// charge-502-twice under a careful and a naive arm: the setting of the tests
// of read commands that find the store a worker serves.
type heldDataDir struct {
	data, plan string
	cluster    []string // --temporal-address and --task-queue of the worker
	worker     *exec.Cmd
	stderr     *devstacktest.Output
	stopped    bool
}

// startHeldDataDir starts the worker (queue names its task queue and the
// plan) and waits until it polls; it is killed when the test ends unless
// stop ran.
func startHeldDataDir(t *testing.T, queue string, seeds int) *heldDataDir {
	t.Helper()
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	dir := t.TempDir()
	h := &heldDataDir{data: filepath.Join(dir, "data"), plan: filepath.Join(dir, "plan.yaml"), stderr: &devstacktest.Output{},
		cluster: []string{"--temporal-address", srv.Address(), "--task-queue", queue}}
	scenario, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := "name: " + queue + "\nseeds: " + strconv.Itoa(seeds) + "\nscenarios:\n  - " + scenario +
		"\narms:\n  - {name: careful, agent: careful}\n  - {name: naive, agent: naive_retrier}\n"
	if err := os.WriteFile(h.plan, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	h.worker = exec.Command(os.Args[0], append([]string{"worker", "--data-dir", h.data}, h.cluster...)...)
	h.worker.Env = append(os.Environ(), envCLIChild+"=1")
	h.worker.Stderr = h.stderr
	if err := h.worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !h.stopped {
			_ = h.worker.Process.Kill()
			_ = h.worker.Wait()
		}
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(h.stderr.String(), "worker polling"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", h.stderr.String())
		}
	}
	return h
}

// cli runs rebound in process and fails the test unless it exits want.
func (h *heldDataDir) cli(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != want {
		t.Fatalf("rebound %s: exit %d, want %d\nstdout: %s\nstderr: %s\nworker: %s", strings.Join(args, " "), code, want, out, errOut, h.stderr.String())
	}
	return out
}

// stop stops the worker as Ctrl-C does and waits for it to exit cleanly.
func (h *heldDataDir) stop(t *testing.T) {
	t.Helper()
	if err := h.worker.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Wait(); err != nil {
		t.Fatalf("worker: %v\n%s", err, h.stderr.String())
	}
	h.stopped = true
}
