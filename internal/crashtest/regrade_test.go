package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage"
)

// maxBlock is the highest block number among the parts of a MergeTree
// table's directory (all_MIN_MAX_LEVEL): every insert takes a new one.
func maxBlock(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the trials table's directory: %v", err)
	}
	top := 0
	for _, e := range entries {
		var lo, hi, level int
		if n, _ := fmt.Sscanf(e.Name(), "all_%d_%d_%d", &lo, &hi, &level); n == 3 && hi > top {
			top = hi
		}
	}
	return top
}

// A SIGKILLed `rebound regrade` leaves no orphan rows: plain SQL finds no
// trial of a sweep without its sweep row (the regraded sweep is stored as
// regrading before its first trial), and running it again completes it
// with the verdicts a regrade that was never interrupted writes.
func TestKilledRegradeLeavesNoOrphans(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	bin := reboundBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	examples, err := filepath.Abs("../../examples/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "regrade.yaml", fmt.Sprintf(`name: regrade
scenarios: [%s/*.yaml]
seeds: 2
arms:
  - {name: careful, agent: careful}
  - {name: naive-retrier, agent: naive_retrier}
  - {name: fabricator, agent: fabricator}
`, examples))
	env := append(os.Environ(), "REBOUND_DATA_DIR="+data, "REBOUND_CHDB_LIB="+chdbLib, "REBOUND_TEMPORAL_BIN="+temporalBin,
		"REBOUND_TEMPORAL_ADDRESS=", "REBOUND_CLICKHOUSE_DSN=")
	rebound := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("rebound %v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	rebound("run", filepath.Join(dir, "regrade.yaml"))
	var rows []struct {
		SweepID string `json:"sweep_id"`
	}
	if err := json.Unmarshal([]byte(rebound("sweeps", "--output", "json")), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("sweeps: %v %+v", err, rows)
	}
	from, into := rows[0].SweepID, rows[0].SweepID+"-regraded"

	withStore := func(fn func(storage.Store)) {
		t.Helper()
		st, err := storage.Open(ctx, storage.Config{DataDir: filepath.Join(data, "chdb"), LibPath: chdbLib})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fn(st)
	}
	count := func(st storage.Store, sql string) int64 {
		t.Helper()
		tab, err := st.Query(ctx, sql)
		if err != nil || len(tab.Rows) != 1 {
			t.Fatalf("%s: %v %+v", sql, err, tab)
		}
		var n int64
		fmt.Sscan(fmt.Sprint(tab.Rows[0][0]), &n)
		return n
	}

	// SIGKILL regrade as soon as its first batch of trials is written:
	// the engine holds the data dir while regrade runs, so the test watches
	// the trials table's directory for a new part (an insert's block number
	// above every earlier one).
	trialsDir := filepath.Join(data, "chdb", "data", "rebound", "trials")
	landed := false
	for attempt := 1; attempt <= 3 && !landed; attempt++ {
		before := maxBlock(t, trialsDir)
		cmd := exec.Command(bin, "regrade", from, "--into", into)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		start := time.Now()
	watch:
		for maxBlock(t, trialsDir) <= before {
			select {
			case <-exited:
				break watch
			case <-ctx.Done():
				t.Fatal("timed out waiting for regrade's first insert")
			case <-time.After(5 * time.Millisecond):
			}
		}
		after := time.Since(start).Milliseconds()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		var stored, orphans int64
		status := ""
		withStore(func(st storage.Store) {
			stored = count(st, fmt.Sprintf("SELECT count() FROM rebound.trials FINAL WHERE sweep_id = '%s'", into))
			orphans = count(st, "SELECT count() FROM rebound.trials FINAL WHERE sweep_id NOT IN (SELECT sweep_id FROM rebound.sweeps FINAL)")
			if sw, err := st.Sweep(ctx, into); err == nil {
				status = sw.Status
			}
		})
		t.Logf("regrade killed after %dms: %d trials stored, sweep %q, %d orphan rows", after, stored, status, orphans)
		if orphans != 0 {
			t.Fatalf("a killed regrade left %d trial rows with no sweep row", orphans)
		}
		if status == "completed" {
			t.Fatalf("regrade completed within %dms: no kill landed mid-way (make the sweep larger)", after)
		}
		if stored > 0 {
			if status != "regrading" {
				t.Errorf("killed mid-way, the regraded sweep is stored as %q, want regrading", status)
			}
			landed = true
		}
	}
	if !landed {
		t.Fatal("no kill landed while regrade was writing")
	}

	rebound("regrade", from, "--into", into)
	rebound("regrade", from, "--into", into+"-clean")
	withStore(func(st storage.Store) {
		sw, err := st.Sweep(ctx, into)
		if err != nil || sw.Status != "completed" {
			t.Fatalf("after the rerun: %+v, %v", sw, err)
		}
		a := count(st, fmt.Sprintf("SELECT count() FROM rebound.trials FINAL WHERE sweep_id = '%s'", into))
		b := count(st, fmt.Sprintf("SELECT count() FROM rebound.trials FINAL WHERE sweep_id = '%s-clean'", into))
		differ := count(st, fmt.Sprintf(`SELECT count() FROM
  (SELECT arm, scenario, variant, seed, verdicts, grader_version FROM rebound.trials FINAL WHERE sweep_id = '%s') AS r
  FULL OUTER JOIN
  (SELECT arm, scenario, variant, seed, verdicts, grader_version FROM rebound.trials FINAL WHERE sweep_id = '%s-clean') AS c
  USING (arm, scenario, variant, seed)
WHERE r.verdicts != c.verdicts OR r.grader_version != c.grader_version`, into, into))
		t.Logf("resumed regrade: %d trials, uninterrupted: %d, %d differ", a, b, differ)
		if a != b || a == 0 || differ != 0 || sw.TrialsPlanned != uint64(a) {
			t.Errorf("the resumed regrade holds %d trials (planned %d), the uninterrupted one %d; %d verdicts differ", a, sw.TrialsPlanned, b, differ)
		}
	})
}
