package crashtest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
)

// stack is a Temporal dev server and one worker on a free port, each a
// real process of its own a test kills, stops and restarts; its data
// (dev server database, logs, the worker's data dir) lives in dir.
type stack struct {
	t                          *testing.T
	ctx                        context.Context
	dir, bin, temporalBin, lib string
	queue, address             string
	port                       int
	dataDir                    string
	temporal, worker           *proc
	client                     client.Client
}

// startStack starts the dev server, dials it and starts the worker on
// queue; both are killed when the test ends.
func startStack(t *testing.T, ctx context.Context, dir, temporalBin, bin, chdbLib, queue string) *stack {
	t.Helper()
	s := &stack{t: t, ctx: ctx, dir: dir, bin: bin, temporalBin: temporalBin, lib: chdbLib, queue: queue,
		port: freePort(t), dataDir: filepath.Join(dir, "data"),
		temporal: &proc{t: t, name: "temporal", log: filepath.Join(dir, "temporal.log")},
		worker:   &proc{t: t, name: "worker", log: filepath.Join(dir, "worker.log")}}
	s.address = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.startTemporal()
	t.Cleanup(s.temporal.kill)
	s.client = dial(t, ctx, s.address, []byte(redactionKey))
	t.Cleanup(s.client.Close)
	s.startWorker()
	t.Cleanup(s.worker.kill)
	return s
}

// startTemporal (re)starts the dev server on the stack's port and database.
func (s *stack) startTemporal() {
	s.temporal.start(s.ctx, s.temporalBin, "server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--headless", "--db-filename", filepath.Join(s.dir, "temporal.db"), "--log-level", "error")
}

// startWorker (re)starts the worker on the stack's data dir and queue.
func (s *stack) startWorker() {
	s.worker.start(s.ctx, s.bin, "worker", "--temporal-address", s.address, "--data-dir", s.dataDir, "--chdb-lib", s.lib, "--task-queue", s.queue)
}

// sweepStart starts the sweep of plan on the stack's queue and returns its id.
func (s *stack) sweepStart(plan string) string {
	s.t.Helper()
	start := exec.CommandContext(s.ctx, s.bin, "sweep", "start", "--temporal-address", s.address, "--task-queue", s.queue, plan)
	start.Env = append(os.Environ(), "REBOUND_REDACTION_KEY="+redactionKey)
	out, err := start.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			s.t.Fatalf("sweep start: %v\n%s", err, exit.Stderr)
		}
		s.t.Fatalf("sweep start: %v", err)
	}
	return strings.TrimSpace(string(out))
}
