package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// complete runs `rebound __complete ARGS...` and returns the candidates
// (the lines before the directive, descriptions cut off).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %v: exit %d\n%s", args, code, errOut)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") || line == "" {
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		got = append(got, name)
	}
	return got
}

// The values of flags restricted to a list complete without any store.
func TestCompletionOfChoices(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", "--output", ""}, []string{"text", "json"}},
		{[]string{"compare", "--output", ""}, formats},
		{[]string{"gate", "--output", "j"}, []string{"json", "junit"}},
		{[]string{"worker", "--log-format", ""}, []string{"text", "json"}},
		{[]string{"worker", "--log-level", ""}, []string{"info", "debug", "warn", "error"}},
	} {
		got := complete(t, tc.args...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("__complete %v = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// Sweep ids, arm names and schedule names complete from the store the
// command's flags name; a data dir without a store offers nothing and is
// not created.
func TestCompletionOfStoredNames(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	t.Setenv("REBOUND_CHDB_LIB", lib)
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	data := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DataDir: filepath.Join(data, "chdb"), LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sw := range []record.Sweep{
		{SweepID: "quickstart-20261201-120000-aaaaaa", Name: "quickstart", Status: sweepstatus.Completed, Arms: []string{"careful", "naive-retrier"}},
		{SweepID: "sched-nightly-2026-12-01T02:00:00Z", Name: "library", Status: sweepstatus.Completed, Arms: []string{"careful", "fabricator"}},
		{SweepID: "sched-nightly-fast-2026-12-01T03:00:00Z", Name: "library", Status: sweepstatus.Running, Arms: []string{"careful"}},
		{SweepID: "quickstart-20261201-130000-bbbbbb", Name: "quickstart", Status: sweepstatus.Stopped, Arms: []string{"careful"}},
	} {
		if err := st.PutSweep(ctx, sw); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	d := "--data-dir=" + data
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", d, "quickstart-20261201-12"}, []string{"quickstart-20261201-120000-aaaaaa"}},
		{[]string{"sweep", "status", d, "sched-nightly-f"}, []string{"sched-nightly-fast-2026-12-01T03:00:00Z"}},
		{[]string{"report", d, "quickstart-20261201-120000-aaaaaa", ""}, nil}, // one SWEEP_ID only
		{[]string{"compare", d, "quickstart-20261201-120000-aaaaaa", "--baseline", ""}, []string{"careful", "naive-retrier"}},
		{[]string{"gate", d, "sched-nightly-2026-12-01T02:00:00Z", "--candidate", "f"}, []string{"fabricator"}},
		{[]string{"compare", d, "quickstart-20261201-120000-aaaaaa", "--baseline-sweep", "sched-nightly-2026-12-01T02:00:00Z", "--baseline", ""}, []string{"careful", "naive-retrier", "fabricator"}},
		{[]string{"trials", d, "sched-nightly-2026-12-01T02:00:00Z", "--arm", ""}, []string{"careful", "fabricator"}},
		{[]string{"gate", d, "x", "--baseline-sweep", "pre"}, []string{"previous"}},
		{[]string{"trend", d, ""}, []string{"nightly-fast", "nightly"}},
		{[]string{"run", d, "--resume", ""}, []string{"quickstart-20261201-130000-bbbbbb", "sched-nightly-fast-2026-12-01T03:00:00Z"}},
	} {
		got := complete(t, tc.args...)
		if tc.want == nil {
			if len(got) != 0 {
				t.Errorf("__complete %v = %v, want nothing", tc.args, got)
			}
			continue
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("__complete %v = %v, want %v", tc.args, got, want)
		}
	}
	typo := filepath.Join(t.TempDir(), "typo")
	if got := complete(t, "report", "--data-dir="+typo, ""); len(got) != 0 {
		t.Errorf("completion on a data dir without a store offered %v", got)
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Errorf("completion created the data dir: %v", err)
	}
	// REBOUND_DATA_DIR is read as the command reads it.
	t.Setenv("REBOUND_DATA_DIR", data)
	if got := complete(t, "regrade", "quickstart-20261201-12"); !slices.Equal(got, []string{"quickstart-20261201-120000-aaaaaa"}) {
		t.Errorf("completion with REBOUND_DATA_DIR: %v", got)
	}
}

// Schedule names complete from the cluster, as the schedule commands see
// them.
func TestCompletionOfSchedules(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	cluster := []string{"--temporal-address", srv.Address(), "--task-queue", "complete-schedules"}
	if code, _, errOut := runCLI(t, append([]string{"schedule", "create", "--every", "24h", "--paused", "complete-me", "../../examples/plans/quickstart.yaml"}, cluster...)...); code != exitOK {
		t.Fatalf("create: exit %d\n%s", code, errOut)
	}
	defer runCLI(t, append([]string{"schedule", "delete", "complete-me"}, cluster...)...)
	// Temporal lists schedules from its visibility store, which sees a new
	// schedule a moment after it is created (seconds on a loaded machine):
	// completion may lag by that much, no more.
	for _, sub := range []string{"describe", "trigger", "update", "delete"} {
		var got []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			got = complete(t, append(append([]string{"schedule", sub}, cluster...), "complete-")...)
			if slices.Equal(got, []string{"complete-me"}) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(got, []string{"complete-me"}) {
			t.Errorf("__complete schedule %s complete- = %v", sub, got)
		}
	}
}
