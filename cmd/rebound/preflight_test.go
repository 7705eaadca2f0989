package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/internal/localkey"
	"rebound/internal/redact"
)

// Everything that can be checked before a sweep is checked before the dev
// server starts, and fails with exit 2: an unknown agent, a files-world
// initial path that escapes the workspace, a redact file that is not a
// regular file, a plan file that is not one.
func TestRunChecksBeforeStartingAnything(t *testing.T) {
	examples, err := filepath.Abs("../../examples/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	escape := write("escape.yaml", `name: escape
world: files
goal: Read the config.
tools: [fs.read]
permissions: [fs.read]
budget: {tool_calls: 3}
initial:
  files:
    ../../outside.txt: "x"
plan:
  - {id: read, tool: fs.read, args: {path: config.json}}
claim: {fields: []}
variants:
  - {name: v, recoverable: true}
`)
	good := filepath.Join(examples, "charge-502-twice.yaml")
	badAgent := write("bad-agent.yaml", "name: p\nscenarios: ["+good+"]\nseeds: 1\narms:\n  - {name: a, agent: nobody}\n")
	badWorld := write("bad-world.yaml", "name: p\nscenarios: ["+escape+"]\nseeds: 1\narms:\n  - {name: a, agent: careful}\n")
	okPlan := write("ok.yaml", "name: p\nscenarios: ["+good+"]\nseeds: 1\narms:\n  - {name: a, agent: careful}\n")
	for _, tc := range []struct {
		name, plan, redactFile, want string
	}{
		{"unknown agent", badAgent, "", `arm a: agent "nobody"`},
		{"files world path", badWorld, "", "escape.yaml: initial: world files refuses the initial state"},
		{"redact file is a device", okPlan, "/dev/zero", "REBOUND_REDACT_FILE: /dev/zero: is a device"},
		{"plan is a directory", dir, "", "is a directory; a plan file must be a regular file"},
		{"plan is a device", "/dev/zero", "", "is a device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("REBOUND_REDACT_FILE", tc.redactFile)
			t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
			data := filepath.Join(t.TempDir(), "data")
			code, out, errOut := runCLI(t, "run", "--data-dir", data, "--temporal-bin", "/nonexistent/temporal", tc.plan)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want 2 with %q\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("the data dir was created (something started): %v", err)
			}
		})
	}
}

// lint --output json: every problem of every file, with notes, in one
// object; exit 1 when there are problems.
func TestLintJSON(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nworld: payments\ngoal: g\ntools: [payments.charge]\npermissions: [payments.write]\ngaol: typo\nweight: heavy\nplan: []\nclaim: {fields: [{name: f, type: nonsense}]}\nvariants: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "scenario", "lint", "--output", "json", bad, "/dev/zero", "../../examples/scenarios/charge-502-twice.yaml")
	if code != exitFailed {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var res struct {
		Files []struct {
			Path     string
			OK       bool
			Problems []struct {
				File, Field, Message string
				Line, Column         int
			}
			Notes []struct{ Field, Message string }
		}
		Problems int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Files) != 3 || res.Files[0].OK || res.Files[1].OK || !res.Files[2].OK || res.Problems != len(res.Files[0].Problems)+len(res.Files[1].Problems) {
		t.Fatalf("%+v", res)
	}
	fields := map[string]bool{}
	for _, p := range res.Files[0].Problems {
		fields[p.Field] = true
		if p.File != bad || p.Line == 0 {
			t.Errorf("unlocated: %+v", p)
		}
	}
	// A syntax-level problem (unknown field), a type problem and semantic
	// ones, all at once.
	for _, f := range []string{"gaol", "weight", "claim.fields[0].type", "plan"} {
		if !fields[f] {
			t.Errorf("no problem reported for %s: %+v", f, res.Files[0].Problems)
		}
	}
	if len(res.Files[0].Notes) != 1 || res.Files[0].Notes[0].Field != "budget.tool_calls" {
		t.Errorf("notes %+v", res.Files[0].Notes)
	}
}

// A worker (and a sweep client) without REBOUND_REDACTION_KEY refuses to
// start; run generates a key once and keeps it in its data dir.
func TestRedactionKeyRequiredOrGenerated(t *testing.T) {
	t.Setenv("REBOUND_REDACTION_KEY", "")
	for _, args := range [][]string{
		{"worker", "--temporal-address", "127.0.0.1:1"},
		{"sweep", "status", "--temporal-address", "127.0.0.1:1", "some-sweep"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "REBOUND_REDACTION_KEY is not set") {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	t.Setenv("REBOUND_REDACTION_KEY", "too-short")
	if code, _, errOut := runCLI(t, "worker", "--temporal-address", "127.0.0.1:1"); code != exitUsage {
		t.Fatalf("short key: exit %d\n%s", code, errOut)
	}
	t.Setenv("REBOUND_REDACTION_KEY", "")
	t.Setenv(localkey.EnvDir, t.TempDir())
	dir := filepath.Join(t.TempDir(), "data")
	k1, err := localRedactionKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := localRedactionKey(dir)
	if err != nil || string(k1) != string(k2) || len(k1) != 64 {
		t.Fatalf("keys %q %q, %v", k1, k2, err)
	}
	// The key is kept outside the data dir (internal/localkey), 0600.
	_, paths, err := localkey.Load(dir, redact.GenerateKey, redact.CheckKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(paths.KeyFile)
	if err != nil || st.Mode().Perm() != 0o600 || strings.HasPrefix(paths.KeyFile, dir) {
		t.Fatalf("key file %s: %v %v", paths.KeyFile, st, err)
	}
	other, _ := localRedactionKey(filepath.Join(t.TempDir(), "data"))
	if string(other) == string(k1) {
		t.Fatal("two data dirs got the same key")
	}
	t.Setenv("REBOUND_REDACTION_KEY", "an-explicit-key-that-is-long-enough-0123456789")
	if k, _ := localRedactionKey(dir); string(k) != "an-explicit-key-that-is-long-enough-0123456789" {
		t.Fatalf("the environment's key did not win: %q", k)
	}
}

// Ctrl-C while a file loads: the command stops waiting at once.
func TestInterruptibleLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := interruptible(ctx, func() (int, error) { <-release; return 1, nil })
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}
