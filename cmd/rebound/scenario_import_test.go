package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	seed004       = "../../examples/import/recovery-test.yaml"
	seed004Golden = "../../examples/import/recovery-test.rebound.yaml"
)

func TestScenarioSubcommands(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "imported.yaml")
	badImport := filepath.Join(dir, "bad-import.yaml")
	seed, err := os.ReadFile(seed004)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badImport, []byte(strings.Replace(string(seed), "trigger: first_write_attempt", "trigger: sometimes", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	badGen := filepath.Join(dir, "bad-gen.yaml")
	if err := os.WriteFile(badGen, []byte(`name: x
world: payments
goal: g
tools: [payments.charge]
permissions: [payments.write]
plan: [{id: c, tool: payments.charge}]
generate: [slow, explode]
metamorphic:
  - {base: gen/payments.charge/slow, flipped: nope, property: retryable, expect: {recovered: {from: true, to: false}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		inOut    string
		inStderr string
	}{
		{"no subcommand", []string{"scenario"}, exitUsage, "", "lint, variants, check or import"},
		{"unknown subcommand", []string{"scenario", "frob"}, exitUsage, "", `unknown scenario subcommand "frob"`},
		{"help", []string{"scenario", "-h"}, exitOK, "rebound scenario import FILE [-o OUT]", ""},
		{"lint examples", []string{"scenario", "lint", "../../examples/scenarios/refund-timeout-after-send.yaml", "../../core/scenario/testdata/refund-metamorphic.yaml", seed004Golden, "../../examples/plans/quickstart.yaml"},
			exitOK, "ok    " + seed004Golden, ""},
		{"lint new fields", []string{"scenario", "lint", badGen}, exitFailed, badGen + `:7:18: generate: unknown kind "explode"`, "problem(s) found"},
		{"lint the import source", []string{"scenario", "lint", seed004}, exitFailed, seed004 + ":14:1: category: unknown field", ""},
		{"variants of a generating scenario", []string{"scenario", "variants", "../../core/scenario/testdata/refund-metamorphic.yaml"}, exitOK,
			"refund-metamorphic (../../core/scenario/testdata/refund-metamorphic.yaml): 15 variants, 2 hand-written, 13 generated", ""},
		{"variants --all", []string{"scenario", "variants", "../../examples/scenarios/refund-timeout-after-send.yaml", "--all"}, exitOK,
			"gen/payments.refund/timeout_after_send     true         payments.refund timeout_after_send attempts [1]", ""},
		{"variants needs a file", []string{"scenario", "variants"}, exitUsage, "", "at least one scenario file"},
		{"check the pairs", []string{"scenario", "check", "../../examples/scenarios/charge-timeout-before-send.yaml", "--seeds", "1"}, exitOK,
			"ok   charge-timeout-before-send metamorphic[0] (reconciliation), arm careful: timeout-after-send -> timeout-after-send-status-down: held on 1 seed(s)", ""},
		{"check finds a pair that did not hold", []string{"scenario", "check", "../../examples/scenarios/charge-timeout-before-send.yaml", "--agent", "blind_resubmitter", "--seeds", "1"}, exitFailed,
			"FAIL charge-timeout-before-send metamorphic[0] (reconciliation), arm blind_resubmitter", "did not hold"},
		{"check names the seed, side and variant", []string{"scenario", "check", "../../examples/scenarios/charge-timeout-before-send.yaml", "--agent", "blind_resubmitter", "--seeds", "1"}, exitFailed,
			"seed 1, base variant timeout-after-send: recovered is false, expected true", ""},
		{"check a file without pairs", []string{"scenario", "check", "../../examples/scenarios/charge-502-twice.yaml"}, exitUsage, "", "declares a metamorphic pair"},
		{"check an unknown agent", []string{"scenario", "check", "../../examples/scenarios/charge-timeout-before-send.yaml", "--agent", "nobody"}, exitUsage, "", `--agent "nobody"`},
		{"check a plan", []string{"scenario", "check", "../../examples/plans/quickstart.yaml"}, exitUsage, "", "plan"},
		{"variants of a broken file", []string{"scenario", "variants", badGen}, exitUsage, "", "generate: unknown kind"},
		{"import to a file", []string{"scenario", "import", seed004, "-o", out}, exitOK, "", "wrote " + out + ": scenario recovery-test, 2 variants, 14 note(s)"},
		{"import notes are located", []string{"scenario", "import", seed004, "-o", out}, exitOK, "", "note: " + seed004 + ":98:5: validation[4]: no_escalation_needed"},
		{"import to stdout", []string{"scenario", "import", seed004}, exitOK, "# Imported by `rebound scenario import` from recovery-test.yaml", ""},
		{"import needs one file", []string{"scenario", "import"}, exitUsage, "", "exactly one FILE"},
		{"import an unsupported construct", []string{"scenario", "import", badImport}, exitUsage, "",
			badImport + `:48:5: setup.failure_simulation.trigger: unsupported trigger "sometimes"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.inOut) || !strings.Contains(stderr, tc.inStderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
		})
	}
	// The written scenario is the checked-in one, byte for byte.
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(seed004Golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("import differs from %s:\n%s", seed004Golden, got)
	}
}

func TestScenarioVariantsJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "scenario", "variants", "--output", "json", "../../core/scenario/testdata/customer-fallback.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []struct {
		Scenario string
		Variants []struct {
			Name        string
			Recoverable bool
			Generated   *struct{ Kind, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(got) != 1 || len(got[0].Variants) != 4 {
		t.Fatalf("%+v", got)
	}
	perm := got[0].Variants[2]
	if perm.Name != "gen/customer.readProfile/permanent" || !perm.Recoverable || perm.Generated == nil || !strings.Contains(perm.Generated.Reason, "falls back to warehouse.runSql") {
		t.Fatalf("%+v", perm)
	}
}
