package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
)

// Ctrl-C (or SIGTERM) during a long statement: rebound sql leaves within a
// second with exit 130, and the data dir is free at once for the next
// command. The embedded engine stops the running statement (KILL QUERY
// when the context ends), so the process leaves through its ordinary path,
// not by abandoning the statement.
func TestSQLInterruptReleasesTheStore(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	dir := t.TempDir()
	heavy := "SELECT count() FROM (SELECT arrayJoin(range(100000)) AS a) AS x, (SELECT arrayJoin(range(100000)) AS b) AS y"
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append([]string{"sql", "--data-dir", dir}, args...)...)
		cmd.Env = append(os.Environ(), envCLIChild+"=1", "REBOUND_CHDB_LIB="+lib, "REBOUND_CLICKHOUSE_DSN=")
		return cmd
	}
	// The store exists (a read-only statement never creates one).
	if out, err := run("--write", "SELECT 1").CombinedOutput(); err != nil {
		t.Fatalf("creating the store: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := run(heavy)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // the engine loads, the statement runs
		sent := time.Now()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		took := time.Since(sent)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Fatalf("%v: %v, want exit %d\n%s", sig, err, exitInterrupted, stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: stderr %q does not say it was interrupted", sig, stderr.String())
		}
		// The engine stopped the statement (KILL QUERY): the process did
		// not have to exit from under it.
		if strings.Contains(stderr.String(), "abandoned") {
			t.Errorf("%v: the statement was abandoned, not stopped: %q", sig, stderr.String())
		}
		t.Logf("%v: exit %d %v after the signal", sig, ee.ExitCode(), took)
		if took > 2*time.Second {
			t.Errorf("%v: exit took %v after the signal, want about a second at most", sig, took)
		}
		// The lock went with the process: the next command opens the store.
		out, err := run("SELECT 41 + 1 AS n").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "42") {
			t.Fatalf("the store after %v: %v\n%s", sig, err, out)
		}
	}
}
