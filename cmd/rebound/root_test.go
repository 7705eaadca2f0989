package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandPaths lists every runnable command of the tree, as argument lists
// ("sweep", "status"), the groups included.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, s := range c.Commands() {
			if s.Hidden || s.Name() == "help" {
				continue
			}
			p := append(append([]string{}, path...), s.Name())
			out = append(out, p)
			walk(s, p)
		}
	}
	root := newRoot()
	setOutput(root, io.Discard, io.Discard)
	walk(root, nil)
	if len(out) < 30 {
		t.Fatalf("only %d commands found: %v", len(out), out)
	}
	return out
}

// Help, asked for in any of the three ways, goes to stdout and exits 0, for
// every command and subcommand.
func TestHelpOnStdout(t *testing.T) {
	for _, path := range commandPaths(t) {
		name := "rebound " + strings.Join(path, " ")
		for _, args := range [][]string{
			append(append([]string{}, path...), "-h"),
			append(append([]string{}, path...), "--help"),
			append([]string{"help"}, path...),
		} {
			code, out, errOut := runCLI(t, args...)
			if code != exitOK || !strings.Contains(out, "Usage:\n  "+name) || errOut != "" {
				t.Errorf("%v: exit %d, want 0 with the usage of %q on stdout and nothing on stderr\nstdout: %.300s\nstderr: %s", args, code, name, out, errOut)
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "completion") || errOut != "" {
			t.Errorf("%v: exit %d\nstdout: %.300s\nstderr: %s", args, code, out, errOut)
		}
	}
}

// A group without a subcommand, or with an unknown one, is a usage error
// (exit 2) with its usage on stderr.
func TestGroupsNeedASubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep"}, "sweep needs a subcommand: start, status or cancel"},
		{[]string{"sweep", "stop", "x"}, `unknown sweep subcommand "stop"`},
		{[]string{"judge"}, "judge needs a subcommand: agreement or queue"},
		{[]string{"trial", "list"}, `unknown trial subcommand "list": use show`},
		{[]string{"schedule", "remove", "x"}, `unknown schedule subcommand "remove"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "rebound"`},
		{[]string{"reprot", "x"}, "did you mean report?"},
		{[]string{"help", "frobnicate"}, `no help topic "frobnicate"`},
		{[]string{"help", "sweep", "stop"}, `no help topic "sweep stop"`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, want 2 and %q on stderr, nothing on stdout\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// Flags go anywhere: after the positional arguments as well as before, with
// the same result.
func TestFlagsAfterPositionalArguments(t *testing.T) {
	file := "../../examples/scenarios/refund-timeout-after-send.yaml"
	code1, before, _ := runCLI(t, "scenario", "variants", "--all", "--output", "json", file)
	code2, after, _ := runCLI(t, "scenario", "variants", file, "--all", "--output", "json")
	code3, mixed, _ := runCLI(t, "scenario", "variants", "--output=json", file, "--all")
	if code1 != exitOK || code2 != exitOK || code3 != exitOK || before != after || before != mixed || !strings.Contains(before, `"gen/payments.refund/timeout_after_send"`) {
		t.Fatalf("exits %d %d %d; outputs differ or lack the generated variant:\n%s\n---\n%s\n---\n%s", code1, code2, code3, before, after, mixed)
	}
	// A flag after the plan reaches run: the nonexistent Temporal CLI and
	// data dir are the ones given after it, and nothing starts for a
	// scenario given as a plan.
	data := filepath.Join(t.TempDir(), "data")
	code, _, errOut := runCLI(t, "run", "/nonexistent/plan.yaml", "--data-dir", data, "--temporal-bin", "/nonexistent/temporal")
	if code != exitUsage || !strings.Contains(errOut, "/nonexistent/plan.yaml") {
		t.Fatalf("run PLAN --flags: exit %d\n%s", code, errOut)
	}
	// -- ends the flags: what follows is positional even if it looks like one.
	code, out, errOut := runCLI(t, "scenario", "lint", "--", "--output")
	if code != exitFailed || !strings.Contains(out, "--output") {
		t.Fatalf("lint -- --output: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// Numeric flags are checked when parsed: exit 2 naming the flag and the
// bounds, before anything is opened or started.
func TestNumericFlagBounds(t *testing.T) {
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--baseline", "a", "--candidate", "b", "--bootstrap", "-1", "id"}, "--bootstrap: must be between 0 and 100000, got -1"},
		{[]string{"gate", "--baseline", "a", "--candidate", "b", "--bootstrap", "100001", "id"}, "--bootstrap: must be between 0 and 100000, got 100001"},
		{[]string{"compare", "--baseline", "a", "--candidate", "b", "--bootstrap", "many", "id"}, `--bootstrap: not a whole number: "many"`},
		{[]string{"sweeps", "--limit", "0"}, "--limit: must be between 1 and 10000, got 0"},
		{[]string{"sweeps", "--limit", "1e9"}, `--limit: not a whole number: "1e9"`},
		{[]string{"trend", "nightly", "--last", "366"}, "--last: must be between 1 and 365, got 366"},
		{[]string{"worker", "--max-concurrent-shards", "-2"}, "--max-concurrent-shards: must be between 0 and 4096, got -2"},
		{[]string{"worker", "--stop-timeout", "-1s"}, "--stop-timeout: must be between 0s and 1h, got -1s"},
		{[]string{"worker", "--stop-timeout", "soon"}, `--stop-timeout: not a duration (e.g. 90s, 5m, 24h): "soon"`},
		{[]string{"run", "plan.yaml", "--progress-every", "1ms"}, "--progress-every: must be between 50ms and 1m, got 1ms"},
		{[]string{"schedule", "create", "--every", "-1h", "n", "plan.yaml"}, "--every: must be between 1m and 8784h, got -1h"},
		{[]string{"schedule", "create", "--every", "1s", "n", "plan.yaml"}, "--every: must be between 1m and 8784h, got 1s"},
		{[]string{"schedule", "create", "--cron", "0 2 * * *", "--catchup", "-5m", "n", "plan.yaml"}, "--catchup: must be between 0s and 8784h, got -5m"},
		{[]string{"compare", "--baseline", "a", "--candidate", "b", "--confidence", "1", "id"}, "--confidence must lie strictly between 0 and 1"},
		{[]string{"compare", "--baseline", "a", "--candidate", "b", "--output", "pdf", "id"}, `--output: must be one of text, markdown, json, junit, html, got "pdf"`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// A scenario given where a plan is expected, and the reverse, fails with a
// hint saying which file the command takes, before anything starts.
func TestPlanScenarioHint(t *testing.T) {
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	scenarioFile := "../../examples/scenarios/charge-502-twice.yaml"
	planFile := "../../examples/plans/quickstart.yaml"
	data := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", scenarioFile, "--data-dir", data, "--temporal-bin", "/nonexistent/temporal"}, scenarioFile + " is a scenario, not a plan: give a plan, which names scenarios, arms and seeds"},
		{[]string{"sweep", "start", scenarioFile, "--temporal-address", "127.0.0.1:1"}, scenarioFile + " is a scenario, not a plan"},
		{[]string{"scenario", "variants", planFile}, planFile + " is a plan, not a scenario: scenario variants takes scenario files"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\nstderr: %s", tc.args, code, tc.want, errOut)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data dir was created (something started): %v", err)
	}
}

// rebound completion SHELL prints the shell's script on stdout, unfiltered.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "# bash completion V2 for rebound",
		"zsh":        "#compdef rebound",
		"fish":       "complete -c rebound",
		"powershell": "Register-ArgumentCompleter -CommandName 'rebound'",
	} {
		code, out, errOut := runCLI(t, "completion", shell)
		if code != exitOK || !strings.Contains(out, marker) || errOut != "" {
			t.Errorf("completion %s: exit %d, stdout lacks %q\nstdout: %.200s\nstderr: %s", shell, code, marker, out, errOut)
		}
	}
	if code, _, _ := runCLI(t, "completion", "tcsh"); code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
	// The shell asks the binary itself for candidates: commands, then flags.
	code, out, _ := runCLI(t, "__complete", "sw")
	if code != exitOK || !strings.Contains(out, "sweep\t") || !strings.Contains(out, "sweeps\t") {
		t.Errorf("__complete sw: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "__complete", "help", "sweep", "st")
	if code != exitOK || !strings.Contains(out, "start\t") || !strings.Contains(out, "status\t") || strings.Contains(out, "cancel") {
		t.Errorf("__complete help sweep st: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "__complete", "report", "--out")
	if code != exitOK || !strings.Contains(out, "--output\t") {
		t.Errorf("__complete report --out: exit %d\n%s", code, out)
	}
}

// Environment fallbacks: the variable applies when the flag is not given,
// the flag wins when it is, a value the flag refuses names the variable,
// and help names the variable but never prints its value.
func TestEnvironmentFallbacks(t *testing.T) {
	t.Setenv("REBOUND_REDACTION_KEY", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "127.0.0.1:1")
	// The address comes from the environment: the worker gets past it to
	// the redaction key check.
	if code, _, errOut := runCLI(t, "worker"); code != exitUsage || !strings.Contains(errOut, "REBOUND_REDACTION_KEY is not set") {
		t.Fatalf("worker with REBOUND_TEMPORAL_ADDRESS: exit %d\n%s", code, errOut)
	}
	// The flag, even empty, wins.
	if code, _, errOut := runCLI(t, "worker", "--temporal-address", ""); code != exitUsage || !strings.Contains(errOut, "needs --temporal-address") {
		t.Fatalf("worker --temporal-address '': exit %d\n%s", code, errOut)
	}
	t.Setenv("REBOUND_TEMPORAL_TLS", "maybe")
	if code, _, errOut := runCLI(t, "worker"); code != exitUsage || !strings.Contains(errOut, "REBOUND_TEMPORAL_TLS (for --temporal-tls)") {
		t.Fatalf("bad REBOUND_TEMPORAL_TLS: exit %d\n%s", code, errOut)
	}
	t.Setenv("REBOUND_TEMPORAL_TLS", "")
	t.Setenv("REBOUND_MCP_URL", "")
	if code, _, errOut := runCLI(t, "mcp-stdio"); code != exitUsage || !strings.Contains(errOut, "needs --url or REBOUND_MCP_URL") {
		t.Fatalf("mcp-stdio: exit %d\n%s", code, errOut)
	}
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "clickhouse://rebound:hunter2-secret@db:9000/rebound")
	t.Setenv("REBOUND_DATA_DIR", "/var/lib/rebound-from-env")
	code, out, _ := runCLI(t, "report", "--help")
	if code != exitOK || strings.Contains(out, "hunter2-secret") || strings.Contains(out, "rebound-from-env") || !strings.Contains(out, "(env REBOUND_CLICKHOUSE_DSN)") || !strings.Contains(out, `(env REBOUND_DATA_DIR) (default "data")`) {
		t.Fatalf("report --help with a DSN in the environment: exit %d\n%s", code, out)
	}
}
