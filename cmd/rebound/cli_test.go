package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Exit codes mean something: 0 done, 1 problems found, 2 bad input.
func TestExitCodesAndHelp(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nworld: payments\ngoal: g\ntools: [payments.charge]\ngaol: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		inOut    string
		inStderr string
	}{
		{"overview", []string{"help"}, exitOK, "Commands:", ""},
		{"no args", nil, exitUsage, "Commands:", ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"command help", []string{"run", "-h"}, exitOK, "Usage:\n  rebound run [flags] PLAN", ""},
		{"bad flag", []string{"report", "--nope"}, exitUsage, "", "unknown flag: --nope"},
		{"run without plan", []string{"run"}, exitUsage, "", "exactly one PLAN"},
		{"run missing plan file", []string{"run", "/nonexistent/plan.yaml"}, exitUsage, "", "no such file"},
		{"bad output", []string{"report", "--output", "xml", "id"}, exitUsage, "", `--output: must be text or json, got "xml"`},
		{"lint ok", []string{"scenario", "lint", "../../examples/scenarios/charge-502-twice.yaml"}, exitOK, "ok    ../../examples/scenarios/charge-502-twice.yaml", ""},
		{"lint problems", []string{"scenario", "lint", bad}, exitFailed, bad + ":5:1: gaol: unknown field", "problem(s) found"},
		{"sql refuses an empty statement", []string{"sql", " \n "}, exitUsage, "", "empty statement"},
		{"worker needs temporal", []string{"worker", "--temporal-address", ""}, exitUsage, "", "needs --temporal-address"},
		{"mcp-stdio needs a url", []string{"mcp-stdio", "--url", ""}, exitUsage, "", "needs --url or REBOUND_MCP_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.inOut) || !strings.Contains(errOut, tc.inStderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
		})
	}
}

// Lint warns, without failing, when a variant's declared recoverability does
// not hold for every seed; verdicts use the realized value per trial.
func TestLintWarnsAboutDeclaredRecoverability(t *testing.T) {
	src, err := os.ReadFile("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(src), "attempts: [1, 2]}", "from: 1, count: 6, probability: 0.6}", 1)
	if body == string(src) {
		t.Fatal("the example changed: adapt this test")
	}
	path := filepath.Join(t.TempDir(), "thinned.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "scenario", "lint", path)
	if code != exitOK || !strings.Contains(out, "warn  "+path+": variant 502-twice: declared recoverable: true, but for ") || !strings.Contains(out, "ok    "+path) {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// A scenario whose reference plan cannot reach the goal even without faults
// is a bug in the scenario, and lint says so (exit 1).
func TestLintRejectsAPlanThatNeverReachesTheGoal(t *testing.T) {
	src, err := os.ReadFile("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(src), "{path: orders.A-4417.charges, equals: 1}", "{path: orders.A-4417.charges, equals: 2}", 1)
	if body == string(src) {
		t.Fatal("the example changed: adapt this test")
	}
	path := filepath.Join(t.TempDir(), "unreachable.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "scenario", "lint", path)
	if code != exitFailed || !strings.Contains(out, "the reference plan does not reach the goal even without faults") || !strings.Contains(out, "goal does not hold") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// Schedules and trends refuse bad input before touching any server.
func TestScheduleAndTrendUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"schedule"}, "schedule needs a subcommand"},
		{[]string{"schedule", "create", "--every", "1h", "bad name", "plan.yaml"}, "use letters, digits"},
		{[]string{"schedule", "create", "nightly", "plan.yaml"}, "exactly one of --cron or --every"},
		{[]string{"schedule", "create", "--cron", "0 2 * * *", "--every", "1h", "nightly", "plan.yaml"}, "exactly one of --cron or --every"},
		{[]string{"schedule", "list"}, "needs --temporal-address"},
		{[]string{"trend", "--last", "0", "nightly"}, "--last: must be between 1 and 365, got 0"},
		{[]string{"trend", "--metric", "speed", "nightly"}, `unknown metric "speed"`},
	}
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	for _, tc := range cases {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
