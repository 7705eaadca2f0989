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

	"rebound/storage"
)

// corePackages are the domain core: plain Go that injects faults, runs
// trials, grades them and computes rates. It must build without Temporal
// and without ClickHouse, so that it runs anywhere (the CLI's offline
// commands, a test, another orchestrator) and so that a change to the
// orchestration or the storage cannot change a verdict.
var corePackages = []string{
	"./core/...",
	"./stats/...",
	"./internal/buildinfo/...",
	"./internal/childproc/...",
	"./internal/endpoint/...",
	"./internal/fileerr/...",
	"./internal/logging/...",
	"./internal/redact/...",
	"./internal/sweepstatus/...",
	"./internal/strictjson/...",
	"./internal/strictyaml/...",
}

// forbidden are the module path prefixes the core must not link.
var forbidden = []string{"go.temporal.io/", "github.com/ClickHouse/"}

func TestCoreLinksNeitherTemporalNorClickHouse(t *testing.T) {
	for _, bad := range forbiddenDeps(t, corePackages...) {
		t.Errorf("the core links %s; keep Temporal and ClickHouse behind activities/, workflows/ and storage/ (see README, Layout)", bad)
	}
}

// resultsPackages turn stored rows into numbers and documents: the
// reports, the gate, the judge, replay and regrade. They run without a
// Temporal cluster and read through interfaces that storage implements, so
// they link neither Temporal nor the ClickHouse server driver (which only
// programs that may open a server DSN link, by importing
// storage.ServerPackage).
var resultsPackages = []string{"./results/..."}

func TestResultsLinkNeitherTemporalNorClickHouse(t *testing.T) {
	for _, bad := range forbiddenDeps(t, resultsPackages...) {
		t.Errorf("a results package links %s; orchestration stays in activities/, workflows/ and runner/, the server driver in %s", bad, storage.ServerPackage)
	}
}

// The results own the records they read (results/record) and declare each
// read they make as a small interface that storage.Store implements
// (report.Source, replay.Source, regrade.Store, ...). No results package
// links storage, so a report, a gate or a replay is built and tested from
// records without a database, and storage's SQL is one implementation of
// their reads rather than the definition of them.
func TestResultsOwnTheirReadModel(t *testing.T) {
	for _, pkg := range goListDeps(t, resultsPackages...) {
		if pkg == "rebound/storage" || strings.HasPrefix(pkg, "rebound/storage/") {
			t.Errorf("a results package links %s; declare the read as an interface over results/record types where it is used, and let storage implement it", pkg)
		}
	}
	// The records are plain data: the outcome vocabulary and the standard
	// library, nothing that could pull an engine or a driver in.
	for _, pkg := range goListDeps(t, "./results/record") {
		if strings.HasPrefix(pkg, "rebound/") && pkg != "rebound/results/record" && pkg != "rebound/core/outcome" {
			t.Errorf("results/record links %s; it holds plain records, importing only core/outcome", pkg)
		}
	}
}

// Storage without its server transport is the shared SQL and the embedded
// engine: the driver is linked only through storage.ServerPackage.
func TestStorageLinksNoServerDriver(t *testing.T) {
	for _, bad := range forbiddenDeps(t, "./storage") {
		t.Errorf("storage links %s; the server driver belongs in %s", bad, storage.ServerPackage)
	}
}

// The LLM judge is pure: it scores an input; reading trials and writing
// judgements is its edge package's work (results/judge/judgestore).
func TestJudgeIsPure(t *testing.T) {
	for _, bad := range forbiddenDeps(t, "./results/judge") {
		t.Errorf("results/judge links %s; storage belongs in results/judge/judgestore", bad)
	}
}

// The binary that serves --clickhouse-dsn (the CLI and its worker) links the
// server transport; without it a server DSN is refused at run time.
func TestCLILinksServerTransport(t *testing.T) {
	if deps := goListDeps(t, "./cmd/rebound"); !slices.Contains(deps, storage.ServerPackage) {
		t.Fatalf("cmd/rebound does not link %s: --clickhouse-dsn would fail with storage.ErrNoServerTransport", storage.ServerPackage)
	}
}

// TestDetectorSeesForbiddenDeps keeps the tests above honest: the same
// check run on the server transport, which is built on the ClickHouse
// driver, must report it.
func TestDetectorSeesForbiddenDeps(t *testing.T) {
	got := forbiddenDeps(t, "./storage/clickhouseserver")
	if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "github.com/ClickHouse/") }) {
		t.Fatalf("forbiddenDeps(./storage/clickhouseserver) = %v, want the ClickHouse driver among them", got)
	}
}

// forbiddenDeps lists the forbidden packages in the transitive
// dependencies of patterns (production code, not tests).
func forbiddenDeps(t *testing.T, patterns ...string) []string {
	t.Helper()
	var bad []string
	for _, pkg := range goListDeps(t, patterns...) {
		for _, prefix := range forbidden {
			if strings.HasPrefix(pkg, prefix) {
				bad = append(bad, pkg)
			}
		}
	}
	return bad
}

// goListDeps lists the transitive dependencies of patterns (production
// code, not tests), the patterns' own packages included.
func goListDeps(t *testing.T, patterns ...string) []string {
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
	return strings.Fields(string(out))
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

// cmd/rebound parses flags, calls one library function and prints: the
// orchestration (dialing Temporal, the dev server, an in-process worker,
// following and cancelling a sweep) is internal/runner's, so the CLI
// imports no Temporal SDK package itself (its tests may, to check what
// the commands did).
func TestCLIDoesNotCallTemporalDirectly(t *testing.T) {
	for _, imp := range goListImports(t, "./cmd/rebound") {
		if strings.HasPrefix(imp, "go.temporal.io/") {
			t.Errorf("cmd/rebound imports %s; move the code that needs it to internal/runner (see ARCHITECTURE.md, What touches Temporal and ClickHouse)", imp)
		}
	}
	// The check sees an import where there is one: runner's own.
	if !slices.ContainsFunc(goListImports(t, "./internal/runner"), func(p string) bool { return strings.HasPrefix(p, "go.temporal.io/") }) {
		t.Fatal("goListImports(./internal/runner) shows no Temporal import: the check above would pass whatever cmd/rebound imports")
	}
}

// goListImports lists the packages pkg's production code imports directly.
func goListImports(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, pkg)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -f {{.Imports}} %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
