// Package archtest holds tests of the repository's shape rather than of one
// package's behaviour.
package archtest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// corePackages are the domain core: plain Go that injects faults, runs
// trials, grades them and computes rates. It must build without Temporal
// and without ClickHouse, so that it runs anywhere (the CLI's offline
// commands, a test, another orchestrator) and so that a change to the
// orchestration or the storage cannot change a verdict.
var corePackages = []string{
	"./core/...",
	"./stats/...",
	"./internal/endpoint/...",
	"./internal/fileerr/...",
	"./internal/redact/...",
	"./internal/sweepstatus/...",
}

// forbidden are the module path prefixes the core must not link.
var forbidden = []string{"go.temporal.io/", "github.com/ClickHouse/"}

func TestCoreLinksNeitherTemporalNorClickHouse(t *testing.T) {
	for _, bad := range forbiddenDeps(t, corePackages...) {
		t.Errorf("the core links %s; keep Temporal and ClickHouse behind activities/, workflows/ and storage/ (see README, Layout)", bad)
	}
}

// offlinePackages read stored results (or re-run one trial) without a
// Temporal cluster: the reports, the gate, the judge, replay and regrade.
var offlinePackages = []string{"./results/..."}

func TestOfflineCommandsDoNotLinkTemporal(t *testing.T) {
	for _, bad := range forbiddenDeps(t, offlinePackages...) {
		if strings.HasPrefix(bad, "go.temporal.io/") {
			t.Errorf("an offline results package links %s; orchestration stays in activities/, workflows/ and runner/", bad)
		}
	}
}

// The LLM judge is pure: it scores an input; reading trials and writing
// judgements is its edge package's work (results/judge/judgestore).
func TestJudgeIsPure(t *testing.T) {
	for _, bad := range forbiddenDeps(t, "./results/judge") {
		t.Errorf("results/judge links %s; storage belongs in results/judge/judgestore", bad)
	}
}

// TestDetectorSeesForbiddenDeps keeps the test above honest: the same
// check run on the storage package, which is built on the ClickHouse
// driver, must report it.
func TestDetectorSeesForbiddenDeps(t *testing.T) {
	got := forbiddenDeps(t, "./storage")
	if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "github.com/ClickHouse/") }) {
		t.Fatalf("forbiddenDeps(./storage) = %v, want the ClickHouse driver among them", got)
	}
}

// forbiddenDeps lists the forbidden packages in the transitive
// dependencies of patterns (production code, not tests).
func forbiddenDeps(t *testing.T, patterns ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list", "-deps"}, patterns...)...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", strings.Join(patterns, " "), err, stderr)
	}
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, prefix := range forbidden {
			if strings.HasPrefix(pkg, prefix) {
				bad = append(bad, pkg)
			}
		}
	}
	return bad
}

// repoRoot is two directories above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
