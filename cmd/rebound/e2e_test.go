package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rebound/internal/devstack/devstacktest"
)

// embeddedStack points the commands a test dispatches at the embedded
// stack: the dev server and libchdb from the cache, no cluster or server
// from the environment.
func embeddedStack(t *testing.T) {
	t.Helper()
	t.Setenv("REBOUND_TEMPORAL_BIN", devstacktest.TemporalBin(t))
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
}

// The CLI end to end, as a user runs it: `rebound run` on the embedded
// stack (its own Temporal dev server and chDB), then `rebound gate` on the
// stored sweep. A regression seeded between two reference agents fails the
// gate (exit 1, one JUnit failure: the harm index, the one blocking metric);
// two identical arms pass it (exit 0). The gate counts evidence per case
// (scenario, variant), so the plan runs the whole example library: a handful
// of cases copied over seeds would be a handful of evidence.
func TestRunThenGate(t *testing.T) {
	embeddedStack(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	scenarios, err := filepath.Abs("../../examples/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	body := "name: gate-e2e\nseeds: 2\nshard_size: 50\nscenarios:\n  - " + filepath.Join(scenarios, "*.yaml") + "\n"
	body += "arms:\n  - {name: careful, agent: careful}\n  - {name: careful-again, agent: careful}\n  - {name: naive, agent: naive_retrier}\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx := context.Background()

	var out, errOut strings.Builder
	if code := dispatch(ctx, []string{"run", "--data-dir", data, "--output", "json", plan}, &out, &errOut); code != exitOK {
		t.Fatalf("run exit %d\n%s", code, errOut.String())
	}
	var rep struct {
		SweepID       string `json:"sweep_id"`
		TrialsStored  int    `json:"trials_stored"`
		TrialsPlanned int    `json:"trials_planned"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.TrialsStored != rep.TrialsPlanned || rep.TrialsPlanned < 300 {
		t.Fatalf("run report: %v %+v\n%s", err, rep, out.String())
	}
	gates, err := filepath.Abs("../../examples/gates/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "gate.xml")
	gate := func(baseline, candidate string, extra ...string) (int, string) {
		var o, e strings.Builder
		args := append([]string{"gate", "--data-dir", data, "--baseline", baseline, "--candidate", candidate, "--thresholds", gates}, extra...)
		code := dispatch(ctx, append(args, rep.SweepID), &o, &e)
		return code, o.String() + e.String()
	}
	if code, text := gate("careful", "naive", "--save", junit); code != exitFailed || !strings.Contains(text, "unsafe_action") {
		t.Fatalf("gate careful -> naive: exit %d, want 1\n%s", code, text)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(x), "<failure"); n != 1 || !strings.Contains(string(x), `name="harm (max_increase 0, weighted, blocking)"`) {
		t.Fatalf("JUnit has %d failures, want 1 (the harm index):\n%s", n, x)
	}
	if code, text := gate("careful", "careful-again"); code != exitOK {
		t.Fatalf("gate on identical arms: exit %d, want 0\n%s", code, text)
	}
	var q, qe strings.Builder
	if code := dispatch(ctx, []string{"sql", "--data-dir", data, "--output", "json",
		"SELECT arm, count() AS trials FROM rebound.trials FINAL WHERE sweep_id = '" + rep.SweepID + "' GROUP BY arm ORDER BY arm"}, &q, &qe); code != exitOK ||
		!strings.Contains(q.String(), fmt.Sprintf(`"rows":[["careful",%[1]d],["careful-again",%[1]d],["naive",%[1]d]]`, rep.TrialsPlanned/3)) {
		t.Fatalf("sql: exit %d\n%s%s", code, q.String(), qe.String())
	}
	// The engine refuses writes without --write (the attack list itself
	// runs in storage's TestReadOnlyAttacks); the trials are still there.
	for _, attack := range []string{"DROP TABLE rebound.trials", "SELECT 1; DROP DATABASE rebound", "SELECT 1 SETTINGS readonly = 0"} {
		var o, e strings.Builder
		if code := dispatch(ctx, []string{"sql", "--data-dir", data, attack}, &o, &e); code != exitUsage || !strings.Contains(e.String(), "rebound sql is read-only") && !strings.Contains(e.String(), "not a single statement") {
			t.Fatalf("sql %q: exit %d, want 2 and a refusal\n%s%s", attack, code, o.String(), e.String())
		}
	}
	q.Reset()
	if code := dispatch(ctx, []string{"sql", "--data-dir", data, "--output", "json", "SELECT count() AS n FROM rebound.trials FINAL WHERE sweep_id = '" + rep.SweepID + "'"}, &q, &qe); code != exitOK || !strings.Contains(q.String(), fmt.Sprintf(`"rows":[[%d]]`, rep.TrialsPlanned)) {
		t.Fatalf("trials after the refused writes: exit %d\n%s%s", code, q.String(), qe.String())
	}
	if code, text := gate("careful", "nobody"); code != exitUsage {
		t.Fatalf("gate with an unknown arm: exit %d, want 2\n%s", code, text)
	}

	// --baseline-sweep previous: the last completed run of the same plan
	// before this one; with none, the gate passes with "no baseline yet"
	// (a first night), or is a usage error with --require-baseline.
	if code, text := gate("careful", "careful", "--baseline-sweep", "previous"); code != exitOK || !strings.Contains(text, "no baseline yet: no completed run of plan") {
		t.Fatalf("gate against the previous run of a first run: exit %d, want 0\n%s", code, text)
	}
	if code, text := gate("careful", "careful", "--baseline-sweep", "previous", "--require-baseline"); code != exitUsage || !strings.Contains(text, "no completed run of plan") {
		t.Fatalf("gate --require-baseline against the previous run of a first run: exit %d, want 2\n%s", code, text)
	}
	out.Reset()
	if code := dispatch(ctx, []string{"run", "--data-dir", data, "--output", "json", plan}, &out, &errOut); code != exitOK {
		t.Fatalf("second run exit %d\n%s", code, errOut.String())
	}
	var second struct {
		SweepID string `json:"sweep_id"`
	}
	if err := json.Unmarshal([]byte(out.String()), &second); err != nil || second.SweepID == rep.SweepID {
		t.Fatalf("second run: %v %s", err, out.String())
	}
	var cmpOut, cmpErr strings.Builder
	if code := dispatch(ctx, []string{"compare", "--data-dir", data, "--output", "json", "--baseline", "careful", "--baseline-sweep", "previous", "--candidate", "careful", second.SweepID}, &cmpOut, &cmpErr); code != exitOK ||
		!strings.Contains(cmpOut.String(), rep.SweepID) {
		t.Fatalf("compare with the previous run: exit %d\n%s%s", code, cmpOut.String(), cmpErr.String())
	}
}

// A command arm as a user runs it: `rebound run` starts the process once per
// trial, and `rebound trial show` prints its exit and its redacted output.
func TestRunCommandArmThenTrialShow(t *testing.T) {
	embeddedStack(t)
	t.Setenv("CMD_E2E_TOKEN", "tok-cmd-e2e-9f8e7d6c5b4a")
	dir := t.TempDir()
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: command-e2e\nseeds: 1\nscenarios: [" + sc + "]\narms:\n" +
		"  - name: shell\n    agent: command\n    timeout: 30s\n    env_from: {TOKEN: CMD_E2E_TOKEN}\n" +
		`    command: [sh, -c, 'echo "goal: $REBOUND_GOAL"; echo "token $TOKEN" >&2; exit 3']` + "\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	var out, errOut strings.Builder
	if code := dispatch(ctx, []string{"run", "--data-dir", data, "--output", "json", plan}, &out, &errOut); code != exitOK {
		t.Fatalf("run exit %d\n%s", code, errOut.String())
	}
	var rep struct {
		SweepID string `json:"sweep_id"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	var list, listErr strings.Builder
	if code := dispatch(ctx, []string{"trials", "--data-dir", data, "--output", "json", rep.SweepID}, &list, &listErr); code != exitOK {
		t.Fatalf("trials exit %d\n%s", code, listErr.String())
	}
	var rows []struct {
		TrialID string `json:"trial_id"`
	}
	if err := json.Unmarshal([]byte(list.String()), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("trials: %v %s", err, list.String())
	}
	var show, showErr strings.Builder
	if code := dispatch(ctx, []string{"trial", "show", "--data-dir", data, rows[0].TrialID}, &show, &showErr); code != exitOK {
		t.Fatalf("trial show exit %d\n%s", code, showErr.String())
	}
	text := show.String()
	for _, want := range []string{"process: exit 3 after", "| goal: Charge order A-4417", "| token [REDACTED]", "claim_parseable"} {
		if !strings.Contains(text, want) {
			t.Errorf("trial show lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "tok-cmd-e2e") {
		t.Errorf("trial show printed the secret:\n%s", text)
	}
}

// Fail closed: where the sandbox cannot be set up (here: no bubblewrap),
// run and sweep start refuse a sealed command arm with exit 2 and say what
// is missing, before anything starts; an arm with sandbox: none is not
// refused.
func TestSealedArmRefusedWithoutSandbox(t *testing.T) {
	t.Setenv("REBOUND_BWRAP", "/nonexistent/bwrap")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	dir := t.TempDir()
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: sealed-refused\nseeds: 1\nscenarios: [" + sc + "]\narms:\n" +
		"  - name: shell\n    agent: command\n    timeout: 30s\n    command: [sh, -c, 'exit 0']\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, args := range [][]string{
		{"run", "--data-dir", filepath.Join(dir, "data"), plan},
		{"sweep", "start", "--temporal-address", "127.0.0.1:1", plan},
	} {
		var out, errOut strings.Builder
		code := dispatch(ctx, args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "bubblewrap") || !strings.Contains(errOut.String(), "sandbox: none") {
			t.Errorf("%s %s: exit %d, want 2 naming bubblewrap and sandbox: none\n%s", args[0], args[1], code, errOut.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("run refused the plan but made its data dir: %v", err)
	}
	unsealed := strings.Replace(body, "    timeout: 30s\n", "    timeout: 30s\n    sandbox: none\n", 1)
	if err := os.WriteFile(plan, []byte(unsealed), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := dispatch(ctx, []string{"plan", "estimate", plan}, &out, &errOut); code != exitOK {
		t.Errorf("an unsealed arm was refused: exit %d\n%s", code, errOut.String())
	}
}
