package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
)

// TestMain stops the dev server TestWorkerListen shares (devstacktest).
// With REBOUND_CLI_CHILD=1 the test binary is the rebound command itself
// (tests that signal a running command: sql_interrupt_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(envCLIChild) == "1" {
		main()
	}
	// Embedded-stack keys made by the tests stay out of the user's key
	// directory (internal/localkey), in a temporary one (left behind:
	// Main exits the process).
	if os.Getenv("REBOUND_KEY_DIR") == "" {
		dir, err := os.MkdirTemp("", "rebound-test-keys-")
		if err == nil {
			os.Setenv("REBOUND_KEY_DIR", dir)
		}
	}
	devstacktest.Main(m)
}

const envCLIChild = "REBOUND_CLI_CHILD"

// `rebound worker --listen` serves /healthz, a /readyz that turns ready once
// the worker polls with its store open, and /metrics with the Temporal
// SDK's metrics; Ctrl-C stops it cleanly.
func TestWorkerListen(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr devstacktest.Output
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"worker", "--temporal-address", srv.Address(), "--task-queue", "listen-test",
			"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0"}, io.Discard, &stderr)
	}()
	addrRe := regexp.MustCompile(`/readyz on (127\.0\.0\.1:\d+)`)
	get := func(path string) (int, string) {
		m := addrRe.FindStringSubmatch(stderr.String())
		if m == nil {
			return 0, ""
		}
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _ := get("/readyz")
		if code == http.StatusOK {
			break
		}
		select {
		case c := <-done:
			t.Fatalf("worker exited %d before it was ready:\n%s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never turned 200 (last %d):\n%s", code, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "temporal_") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d, without the Temporal SDK's metrics:\n%.2000s", code, body)
	}
	cancel()
	select {
	case c := <-done:
		if c != exitOK && c != exitInterrupted {
			t.Fatalf("worker exit %d after Ctrl-C:\n%s", c, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not stop")
	}
}
