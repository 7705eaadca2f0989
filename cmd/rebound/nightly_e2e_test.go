package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/storage/served"
)

// The README's nightly loop on one machine, on the embedded store: a
// worker runs (and holds the data dir), a schedule is triggered twice, and
// trend, gate, report, sweeps, trials and sql read the runs while the
// worker still runs, through the store it serves (the ClickHouse server
// transport over HTTP); once it stops, they open the store themselves.
func TestNightlyLoopOnOneMachine(t *testing.T) {
	h := startHeldDataDir(t, "nightly-e2e", 3)
	data, plan, cluster, workerErr := h.data, h.plan, h.cluster, h.stderr
	ep, found, err := served.Find(data)
	if err != nil || !found || ep.PID != h.worker.Process.Pid {
		t.Fatalf("served.json: %+v %t %v", ep, found, err)
	}

	cli := func(want int, args ...string) string {
		t.Helper()
		return h.cli(t, want, args...)
	}
	cli(exitOK, append([]string{"schedule", "create", "--every", "24h", "--paused", "nightly", plan}, cluster...)...)
	var nights []string
	for night := 0; night < 2; night++ {
		var trig struct {
			Started bool   `json:"started"`
			SweepID string `json:"sweep_id"`
		}
		if err := json.Unmarshal([]byte(cli(exitOK, append([]string{"schedule", "trigger", "--output", "json", "nightly"}, cluster...)...)), &trig); err != nil || !trig.Started {
			t.Fatalf("trigger: %+v %v", trig, err)
		}
		nights = append(nights, trig.SweepID)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var d struct {
				Running []any `json:"running"`
			}
			if err := json.Unmarshal([]byte(cli(exitOK, append([]string{"schedule", "describe", "--output", "json", "nightly"}, cluster...)...)), &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Running) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("night %d did not end\nworker: %s", night+1, workerErr.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	// While the worker runs and holds the data dir.
	local := []string{"--data-dir", data}
	trend := cli(exitOK, append([]string{"trend", "--last", "14", "nightly"}, local...)...)
	for _, id := range nights {
		if !strings.Contains(trend, strings.TrimPrefix(id, "sched-nightly-")) {
			t.Errorf("trend does not show %s:\n%s", id, trend)
		}
	}
	gate := cli(exitOK, append([]string{"gate", "--baseline", "careful", "--candidate", "careful", "--baseline-sweep", "previous",
		"--thresholds", "../../examples/gates/release.yaml", "--output", "json", nights[1]}, local...)...)
	var g map[string]any
	if err := json.Unmarshal([]byte(gate), &g); err != nil || g["no_baseline"] == true {
		t.Errorf("gate against the night before: %v\n%s", err, gate)
	}
	if out := cli(exitOK, append([]string{"report", nights[1]}, local...)...); !strings.Contains(out, "careful") {
		t.Errorf("report:\n%s", out)
	}
	if out := cli(exitOK, append([]string{"sweeps"}, local...)...); !strings.Contains(out, nights[0]) {
		t.Errorf("sweeps:\n%s", out)
	}
	cli(exitOK, append([]string{"trials", nights[0]}, local...)...)
	if out := cli(exitOK, append([]string{"sql", "--output", "json", "SELECT count() AS n FROM rebound.trials FINAL"}, local...)...); !strings.Contains(out, "12") {
		t.Errorf("sql: %s", out)
	}
	// rebound sql's door holds at the served store: exit 2 for a refusal.
	cli(exitUsage, append([]string{"sql", "SELECT * FROM system.users"}, local...)...)
	// So do its limits: --timeout 1s stops a statement that runs for
	// seconds (a billion-row cross join), --max-memory one that holds a
	// 24 MB array; exit 1, with the flags to raise.
	slow := "SELECT count() FROM (SELECT arrayJoin(range(20000)) AS a) AS x CROSS JOIN (SELECT arrayJoin(range(100000)) AS b) AS y WHERE a + b > 7"
	start := time.Now()
	if code, _, errOut := runCLI(t, append([]string{"sql", "--timeout", "1s", slow}, local...)...); code != exitFailed || !strings.Contains(errOut, "TIMEOUT_EXCEEDED") || !strings.Contains(errOut, "raise --timeout") || time.Since(start) > 30*time.Second {
		t.Errorf("sql --timeout 1s through the served store: exit %d after %v, %s", code, time.Since(start), errOut)
	}
	// Above the defaults, the note says they stay.
	if code, _, errOut := runCLI(t, append([]string{"sql", "--timeout", "10m", "SELECT 1"}, local...)...); code != exitOK || !strings.Contains(errOut, "stays at those") {
		t.Errorf("sql --timeout 10m through the served store: exit %d, %s", code, errOut)
	}
	big := "SELECT length(groupArray(x)) AS n FROM (SELECT arrayJoin(range(3000000)) AS x)"
	if code, _, errOut := runCLI(t, append([]string{"sql", "--max-memory", "8MiB", big}, local...)...); code != exitFailed || !strings.Contains(errOut, "MEMORY_LIMIT_EXCEEDED") {
		t.Errorf("sql --max-memory 8MiB through the served store: exit %d, %s", code, errOut)
	}
	// A command that writes is told who holds the data dir.
	if code, _, errOut := runCLI(t, append([]string{"sql", "--write", "SELECT 1"}, local...)...); code == exitOK || !strings.Contains(errOut, "held by process") {
		t.Errorf("sql --write while the worker holds the data dir: exit %d, %s", code, errOut)
	}

	h.stop(t)
	if _, err := os.Stat(filepath.Join(data, served.File)); !os.IsNotExist(err) {
		t.Errorf("served.json outlived the worker: %v", err)
	}
	// The worker gone, the read commands open the store themselves.
	if out := cli(exitOK, append([]string{"trend", "--last", "14", "nightly"}, local...)...); out != trend {
		t.Errorf("trend after the worker stopped differs:\n%s\nwhile it ran:\n%s", out, trend)
	}
	cli(exitOK, append([]string{"schedule", "delete", "nightly"}, cluster...)...)
}
