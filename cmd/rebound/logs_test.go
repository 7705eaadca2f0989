package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
)

// jsonLines decodes every non-empty line of s as one JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not a JSON object: %q\n(all: %s)", line, s)
		}
		out = append(out, rec)
	}
	return out
}

// rebound worker --log-format json: every line on stderr is a JSON record
// with time, level and msg (the worker's and the Temporal SDK's, tagged
// component=temporal-sdk); --log-level warn keeps the info records out.
func TestWorkerLogs(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	for _, level := range []string{"debug", "warn"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var stderr devstacktest.Output
		done := make(chan int, 1)
		go func() {
			done <- dispatch(ctx, []string{"worker", "--temporal-address", srv.Address(), "--task-queue", "logs-" + level,
				"--data-dir", t.TempDir(), "--listen", addr, "--log-format", "json", "--log-level", level}, &devstacktest.Output{}, &stderr)
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("%s: the worker was never ready:\n%s", level, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if c := <-done; c != exitOK {
			t.Fatalf("%s: worker exit %d\n%s", level, c, stderr.String())
		}
		recs := jsonLines(t, stderr.String())
		msgs := map[string]map[string]any{}
		sdk := 0
		for _, r := range recs {
			if r["time"] == nil || r["level"] == nil || r["msg"] == nil {
				t.Errorf("%s: a record without time, level or msg: %v", level, r)
			}
			if level == "warn" && (r["level"] == "INFO" || r["level"] == "DEBUG") {
				t.Errorf("--log-level warn kept %v", r)
			}
			if r["component"] == "temporal-sdk" {
				sdk++
			}
			msgs[strings.SplitN(r["msg"].(string), " ", 3)[0]+" "+strings.SplitN(r["msg"].(string)+" ", " ", 3)[1]] = r
		}
		if level == "debug" {
			if p := msgs["worker polling"]; p == nil || p["task_queue"] != "logs-debug" || p["namespace"] != "default" {
				t.Errorf("no 'worker polling' record with its task queue: %v", msgs)
			}
			if msgs["worker stopped"] == nil || msgs["serving /metrics,"] == nil {
				t.Errorf("the worker's records are missing: %v", msgs)
			}
			if sdk == 0 {
				t.Error("no Temporal SDK record at debug level")
			}
		}
	}
}

// rebound run --log-format json: the embedded dev server logs JSON into
// DATA_DIR/temporal.log, and its banner and devstack's own lines are
// relayed as JSON records: every line of the file is one JSON object.
func TestRunDevServerLogJSON(t *testing.T) {
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_TEMPORAL_BIN", devstacktest.TemporalBin(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	dir := t.TempDir()
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("name: logs\nseeds: 1\nscenarios: ["+sc+"]\narms:\n  - {name: careful, agent: careful}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, _, errOut := runCLI(t, "run", "--data-dir", data, "--log-format", "json", "--log-level", "info", plan); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(data, "temporal.log"))
	if err != nil {
		t.Fatal(err)
	}
	recs := jsonLines(t, string(b))
	relayed, server := 0, 0
	for _, r := range recs {
		if r["source"] == "temporal-dev-server" {
			relayed++
		} else {
			server++
		}
	}
	if relayed == 0 || server == 0 {
		t.Fatalf("temporal.log: %d relayed lines and %d of the server's own, want both:\n%.2000s", relayed, server, b)
	}
	if code, _, errOut := runCLI(t, "run", "--data-dir", data, "--log-level", "loud", plan); code != exitUsage || !strings.Contains(errOut, "--log-level") {
		t.Fatalf("--log-level loud: exit %d\n%s", code, errOut)
	}
}
