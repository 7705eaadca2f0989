package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
)

// A command that reads what sweeps stored, given a data dir that holds no
// store (a typo in --data-dir), says so and exits 2: it neither creates a
// store to find it empty nor creates the directory.
func TestReadCommandsNeedAStore(t *testing.T) {
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_REDACTION_KEY", "")
	gates, err := filepath.Abs("../../examples/gates/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const sweep = "quickstart-20261130-160116-6f44b0"
	const trial = "0123456789abcdef01234567"
	commands := [][]string{
		{"report", sweep},
		{"compare", "--baseline", "a", "--candidate", "b", sweep},
		{"gate", "--baseline", "a", "--candidate", "b", "--thresholds", gates, sweep},
		{"sweeps"},
		{"sweeps", "--running"},
		{"trials", sweep},
		{"trial", "show", trial},
		{"replay", trial},
		{"judge", "agreement", sweep},
		{"judge", "queue", sweep},
		{"review", "export", sweep},
		{"ui"},
		{"regrade", sweep},
		{"trend", "nightly"},
		{"sql", "SELECT 1"},
		{"sweep", "status", sweep},
		{"sweep", "cancel", sweep},
		{"run", "--resume", sweep},
	}
	parent := t.TempDir()
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(parent, "typo"), empty} {
		for _, args := range commands {
			code, out, errOut := runCLI(t, append(args, "--data-dir", dir)...)
			if code != exitUsage || !strings.Contains(errOut, `no store in data dir "`+dir+`"`) || out != "" {
				t.Errorf("%v on %s: exit %d, want 2 and \"no store in data dir\"\nstdout: %s\nstderr: %s", args, filepath.Base(dir), code, out, errOut)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(parent, "typo")); !os.IsNotExist(err) {
		t.Errorf("the mistyped data dir was created: %v", err)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("something was created in the empty data dir: %v %v", entries, err)
	}
}

// Schedule input Temporal refuses is the user's to fix: a cron expression
// it cannot parse and a name already taken exit 2, like any bad input.
func TestScheduleInputErrors(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	plan := "../../examples/plans/quickstart.yaml"
	cluster := []string{"--temporal-address", srv.Address(), "--task-queue", "schedule-input-errors"}
	code, _, errOut := runCLI(t, append([]string{"schedule", "create", "--cron", "bogus", "input-errors-cron", plan}, cluster...)...)
	if code != exitUsage || !strings.Contains(errOut, "bad schedule") {
		t.Errorf("--cron bogus: exit %d, want 2\n%s", code, errOut)
	}
	name := "input-errors-exists"
	if code, _, errOut := runCLI(t, append([]string{"schedule", "create", "--every", "24h", "--paused", name, plan}, cluster...)...); code != exitOK {
		t.Fatalf("create: exit %d\n%s", code, errOut)
	}
	defer runCLI(t, append([]string{"schedule", "delete", name}, cluster...)...)
	code, _, errOut = runCLI(t, append([]string{"schedule", "create", "--every", "24h", name, plan}, cluster...)...)
	if code != exitUsage || !strings.Contains(errOut, "schedule already exists") {
		t.Errorf("create twice: exit %d, want 2\n%s", code, errOut)
	}
}

// --baseline-sweep previous on a first run: the gate has nothing to
// compare yet, says "no baseline yet" in every format and exits 0, unless
// --require-baseline (exit 2).
func TestGateWithoutABaseline(t *testing.T) {
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_TEMPORAL_BIN", devstacktest.TemporalBin(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	dir := t.TempDir()
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("name: first-night\nseeds: 1\nscenarios: ["+sc+"]\narms:\n  - {name: careful, agent: careful}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errOut := runCLI(t, "run", "--data-dir", data, "--output", "json", plan)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	var rep struct {
		SweepID string `json:"sweep_id"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	gates, err := filepath.Abs("../../examples/gates/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "gate.xml")
	gate := []string{"gate", "--data-dir", data, "--baseline", "careful", "--candidate", "careful", "--baseline-sweep", "previous", "--thresholds", gates}
	code, out, errOut = runCLI(t, append(gate, "--save", junit, rep.SweepID)...)
	if code != exitOK || !strings.Contains(out, "no baseline yet: no completed run of plan \"first-night\" before "+rep.SweepID) || !strings.Contains(errOut, "--require-baseline") {
		t.Fatalf("gate on a first night: exit %d, want 0 and no baseline yet\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), "<skipped message=\"no baseline yet") {
		t.Fatalf("--save gate.xml: %v\n%s", err, x)
	}
	code, out, _ = runCLI(t, append(gate, "--output", "json", rep.SweepID)...)
	var res struct {
		Passed     bool `json:"passed"`
		NoBaseline bool `json:"no_baseline"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || !res.Passed || !res.NoBaseline {
		t.Fatalf("gate --output json on a first night: exit %d %v\n%s", code, err, out)
	}
	code, _, errOut = runCLI(t, append(gate, "--require-baseline", rep.SweepID)...)
	if code != exitUsage || !strings.Contains(errOut, "no completed run of plan") {
		t.Fatalf("gate --require-baseline on a first night: exit %d, want 2\n%s", code, errOut)
	}
}

// SIGINT and SIGTERM stop a worker gracefully, and a stopped worker exits
// 0 (what Kubernetes expects of a pod it stops), as docs/commands.md says.
func TestWorkerExitsZeroWhenStopped(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	doc, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "A stopped `rebound worker` exits 0") {
		t.Error("docs/commands.md does not say that a stopped worker exits 0")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0], "worker", "--temporal-address", srv.Address(), "--task-queue", "worker-exit-"+sig.String(), "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), envCLIChild+"=1", "REBOUND_CHDB_LIB="+lib, "REBOUND_CLICKHOUSE_DSN=",
			"REBOUND_REDACTION_KEY=cli-test-redaction-key-0123456789abcdef")
		var stderr devstacktest.Output
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stderr.String(), "worker polling") {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("%v: the worker did not start:\n%s", sig, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil || !strings.Contains(stderr.String(), "worker stopping") {
			t.Errorf("%v: %v, want exit 0 after stopping\n%s", sig, err, stderr.String())
		}
	}
}

// Schedules as a user sees them: the cron expression given (not Temporal's
// calendar), through schedule update; a trigger prints the run it started,
// and a second one while that run is still going prints that it was
// skipped.
func TestScheduleCommandsAsSeen(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	plan := "../../examples/plans/quickstart.yaml"
	// No worker polls this queue: a triggered run keeps going.
	cluster := []string{"--temporal-address", srv.Address(), "--task-queue", "schedule-as-seen-no-worker"}
	name := "as-seen"
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append(args, cluster...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out + errOut
	}
	cli(exitOK, "schedule", "create", "--cron", "0 2 * * *", "--paused", name, plan)
	defer runCLI(t, append([]string{"schedule", "delete", name}, cluster...)...)
	if out := cli(exitOK, "schedule", "describe", name); !strings.Contains(out, "schedule "+name+": 0 2 * * *, paused") {
		t.Errorf("describe: %s", out)
	}
	if out := cli(exitOK, "schedule", "update", "--cron", "15 4 * * *", name); !strings.Contains(out, "updated: cron 15 4 * * *") {
		t.Errorf("update: %s", out)
	}
	if out := cli(exitOK, "schedule", "list"); !strings.Contains(out, name+"  15 4 * * *  paused") {
		t.Errorf("list after update: %s", out)
	}
	if out := cli(exitUsage, "schedule", "update", name); !strings.Contains(out, "needs something to change") {
		t.Errorf("update without a change: %s", out)
	}
	if out := cli(exitUsage, "schedule", "update", "--every", "30s", name); !strings.Contains(out, "--every: must be between 1m") {
		t.Errorf("update --every 30s: %s", out)
	}
	started := cli(exitOK, "schedule", "trigger", name)
	skipped := cli(exitOK, "schedule", "trigger", name)
	m := regexp.MustCompile(`started run (sched-` + name + `-\S+) \(run id \S+\)`).FindStringSubmatch(started)
	if m == nil {
		t.Fatalf("first trigger: %s", started)
	}
	if !strings.Contains(skipped, "schedule "+name+": skipped (a run is still going: "+m[1]+")") {
		t.Fatalf("second trigger while %s is still going: %s", m[1], skipped)
	}
}
