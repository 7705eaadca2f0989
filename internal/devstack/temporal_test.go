package devstack_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/internal/devstack"
	"rebound/internal/devstack/devstacktest"
)

// groupGone reports whether no live process is left in process group pgid.
// Zombies count as gone: a grandchild orphaned by the group's leader waits
// for init to reap it, which can take a while in a container.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			return false
		}
	}
	return true
}

func waitGone(t *testing.T, pgid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still alive after %s", pgid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func start(t *testing.T, opts devstack.Options) *devstack.Temporal {
	t.Helper()
	began := time.Now()
	srv, err := devstack.StartTemporal(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dev server healthy at %s after %s", srv.Address(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { srv.Stop() })
	return srv
}

func TestStartHealthyStop(t *testing.T) {
	bin := devstacktest.TemporalBin(t)
	var log lockedBuffer
	srv := start(t, devstack.Options{Bin: bin, DataDir: t.TempDir(), LogWriter: &log})

	if host, _, _ := net.SplitHostPort(srv.Address()); host != "127.0.0.1" {
		t.Errorf("Address() = %s, want loopback", srv.Address())
	}
	if srv.Namespace() != "default" || srv.UIAddress() != "" {
		t.Errorf("Namespace() = %q, UIAddress() = %q", srv.Namespace(), srv.UIAddress())
	}
	c, err := client.Dial(srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckHealth(context.Background(), &client.CheckHealthRequest{}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	pid := srv.PID()
	began := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
	select {
	case <-srv.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if !groupGone(pid) {
		t.Fatalf("process group %d still alive after Stop", pid)
	}
	if conn, err := net.DialTimeout("tcp", srv.Address(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", srv.Address())
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if !strings.Contains(log.String(), "server start-dev") {
		t.Errorf("LogWriter did not get the command line; got:\n%s", log.String())
	}
}

// A server on a temporary data directory is killed at once by Stop, and the
// directory is removed. This one also serves the Web UI.
func TestTemporaryDataDirWithUI(t *testing.T) {
	srv := start(t, devstack.Options{Bin: devstacktest.TemporalBin(t), UI: true})
	resp, err := http.Get(srv.UIAddress())
	if err != nil {
		t.Fatalf("Web UI: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Web UI at %s: %s", srv.UIAddress(), resp.Status)
	}
	dir := filepath.Dir(srv.DBFile())
	if _, err := os.Stat(srv.DBFile()); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
	if !groupGone(srv.PID()) {
		t.Fatalf("process group %d still alive after Stop", srv.PID())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary data dir %s after Stop: %v", dir, err)
	}
}

// Workflows survive a restart on the same DataDir, and a second server on
// a DataDir in use is refused.
func TestDataDirSurvivesRestart(t *testing.T) {
	bin := devstacktest.TemporalBin(t)
	dir := t.TempDir()
	ctx := context.Background()

	srv := start(t, devstack.Options{Bin: bin, DataDir: dir, Namespace: "rebound-test"})
	if _, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, DataDir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server on the same data dir: err = %v, want 'in use'", err)
	}
	c, err := client.Dial(srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	// No worker: the workflow just stays open, which is all we need.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "survivor", TaskQueue: "nobody"}, "Nothing")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, devstack.DBFileName)); err != nil || fi.Size() == 0 {
		t.Fatalf("SQLite file after stop: %v", err)
	}

	srv = start(t, devstack.Options{Bin: bin, DataDir: dir, Namespace: "rebound-test"})
	if srv.DBFile() != filepath.Join(dir, devstack.DBFileName) {
		t.Errorf("DBFile() = %s", srv.DBFile())
	}
	c, err = client.Dial(srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, err := c.DescribeWorkflow(ctx, "survivor", run.GetRunID())
	if err != nil {
		t.Fatalf("workflow started before the restart: %v", err)
	}
	if got := desc.RawResponse.GetWorkflowExecutionInfo().GetType().GetName(); got != "Nothing" {
		t.Fatalf("workflow type after restart = %q", got)
	}
}

// The server dies with the process that started it, even when that process
// is killed without a chance to clean up.
func TestServerDiesWithParent(t *testing.T) {
	if os.Getenv("DEVSTACK_TEST_CHILD") == "1" {
		return // the child's work is in TestMain
	}
	bin := devstacktest.TemporalBin(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DEVSTACK_TEST_CHILD=1", devstack.EnvTemporalBin+"="+bin)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child did not report the server pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	if groupGone(pid) {
		t.Fatalf("server %d not running while its parent lives", pid)
	}
	cmd.Process.Kill() // SIGKILL: no deferred Stop runs in the child
	cmd.Wait()
	waitGone(t, pid, 5*time.Second)
}

func TestMain(m *testing.M) {
	if os.Getenv("DEVSTACK_TEST_CHILD") == "1" {
		srv, err := devstack.StartTemporal(context.Background(), devstack.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(srv.PID())
		select {} // until killed
	}
	devstacktest.Main(m)
}

// fakeBin writes a shell script standing in for the temporal binary.
func fakeBin(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "temporal")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartErrorsShowLogTail(t *testing.T) {
	ctx := context.Background()

	t.Run("exits", func(t *testing.T) {
		bin := fakeBin(t, `echo "fatal: something specific went wrong" >&2; exit 3`)
		_, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin})
		if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "something specific went wrong") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("port taken", func(t *testing.T) {
		// A lost port race is retried on other ports, a few times. The message
		// is the real server's when its port is taken.
		count := filepath.Join(t.TempDir(), "count")
		bin := fakeBin(t, `echo x >> `+count+`; echo "level=ERROR msg=\"can't set frontend port 1: listen tcp: bind: address already in use\"" >&2; exit 1`)
		var log lockedBuffer
		_, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, LogWriter: &log})
		if err == nil || !strings.Contains(err.Error(), "could not bind") {
			t.Fatalf("err = %v", err)
		}
		if n := strings.Count(log.String(), "retrying on other ports"); n != 2 {
			t.Errorf("log mentions %d retries, want 2:\n%s", n, log.String())
		}
		if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 3 {
			t.Fatalf("started %d times, want 3", strings.Count(string(b), "x"))
		}
	})

	t.Run("never healthy", func(t *testing.T) {
		// A clear timeout, and the process group (shell and sleep) is gone after.
		pidFile := filepath.Join(t.TempDir(), "pid")
		bin := fakeBin(t, `echo $$ > `+pidFile+`; echo "still warming up"; sleep 60 & wait`)
		_, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, StartTimeout: 300 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "not healthy after 300ms") || !strings.Contains(err.Error(), "still warming up") {
			t.Fatalf("err = %v", err)
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			t.Fatal("fake server did not write its pid")
		}
		waitGone(t, pid, 5*time.Second)
	})
}

// lockedBuffer is a log sink safe to read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
