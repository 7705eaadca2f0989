// Package devstacktest gives integration tests a shared Temporal dev server
// and the path of libchdb, with one rule for missing tools: the test is
// skipped with instructions, unless REBOUND_REQUIRE_INTEGRATION=1 (set by
// `make test`), in which case it fails. In -short mode (`make unit`) the
// integration tests are skipped.
//
// Use it from a package's tests like this:
//
//	func TestMain(m *testing.M) { devstacktest.Main(m) }
//
//	func TestSweep(t *testing.T) {
//		srv := devstacktest.Temporal(t)
//		c, err := client.Dial(srv.ClientOptions())
//		...
//	}
//
// Without Main the server is still killed when the test binary exits (by the
// parent-death signal), but its temporary data directory is left behind.
package devstacktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"rebound/internal/devstack"
)

var shared struct {
	once sync.Once
	srv  *devstack.Temporal
	err  error
	mu   sync.Mutex
}

// Temporal returns the dev server shared by the tests of this test binary,
// starting it on first use (headless, namespace "default", state in a
// temporary directory). Tests must not stop it; Main does. Tests that share
// it should use their own workflow IDs and task queues.
func Temporal(t testing.TB) *devstack.Temporal {
	t.Helper()
	bin := TemporalBin(t)
	shared.once.Do(func() {
		srv, err := devstack.StartTemporal(context.Background(), devstack.Options{Bin: bin})
		shared.mu.Lock()
		shared.srv, shared.err = srv, err
		shared.mu.Unlock()
	})
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.err != nil {
		t.Fatalf("devstacktest: starting the shared Temporal dev server: %v", shared.err)
	}
	return shared.srv
}

// TemporalBin returns the path of the Temporal CLI, or skips (or fails, see
// the package comment) when it is not installed.
func TemporalBin(t testing.TB) string {
	t.Helper()
	skipShort(t)
	p, err := devstack.LocateTemporal()
	need(t, err)
	return p
}

// ChDBLib returns the path of libchdb.so, or skips (or fails, see the
// package comment) when it is not installed.
func ChDBLib(t testing.TB) string {
	t.Helper()
	skipShort(t)
	p, err := devstack.LocateChDB()
	need(t, err)
	return p
}

// Required reports whether REBOUND_REQUIRE_INTEGRATION=1: a missing tool
// fails the test instead of skipping it.
func Required() bool { return os.Getenv(devstack.EnvRequireIntegration) == "1" }

// Main runs the tests, then stops the shared server, then exits with the
// tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "devstacktest: stopping the shared Temporal dev server: %v\n", err)
	}
	os.Exit(code)
}

// Stop stops the shared server if it was started. Main calls it.
func Stop() error {
	shared.mu.Lock()
	srv := shared.srv
	shared.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Stop()
}

// errShort is why no integration test runs in -short mode.
var errShort = errors.New("integration test: skipped in -short mode (make test runs it)")

// ChDBLibForMain is ChDBLib for a TestMain, which has no test to skip: it
// returns the path of libchdb.so, or why the package's integration tests
// cannot run (-short mode, or the library is missing), without loading
// anything. Call it after flag.Parse, and hand the reason to Unavailable in
// each integration test.
func ChDBLibForMain() (lib string, unavailable error) {
	if testing.Short() {
		return "", errShort
	}
	p, err := devstack.LocateChDB()
	if err != nil {
		return "", err
	}
	return p, nil
}

// Unavailable applies the package's rule to a reason an integration test
// cannot run (from ChDBLibForMain): nil returns, -short mode and a missing
// tool skip (a missing tool fails when Required), anything else fails.
func Unavailable(t testing.TB, reason error) {
	t.Helper()
	if errors.Is(reason, errShort) {
		t.Skip(reason.Error())
	}
	need(t, reason)
}

func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip(errShort.Error())
	}
}

func need(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, devstack.ErrNotFound) && !Required():
		t.Skipf("integration test skipped: %v (set %s=1 to fail instead)", err, devstack.EnvRequireIntegration)
	default:
		t.Fatalf("integration test: %v", err)
	}
}

// nodeAndRepo returns the repository's root for a test that runs a Node
// program setup installed under .cache/, skipping (or failing, see the
// package comment) without node.
func nodeAndRepo(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	need(t, err)
	root, ok := devstack.RepoRoot(wd)
	if !ok {
		t.Fatalf("devstacktest: %s is not inside the rebound repository", wd)
	}
	if _, err := exec.LookPath("node"); err != nil {
		need(t, fmt.Errorf("node: %w (install Node.js 20 or later)", devstack.ErrNotFound))
	}
	return root
}

// ExampleAgent returns the launcher of the TypeScript example agents
// (examples/agents/openai-agents-ts/run), or skips (or fails, see the
// package comment) when node or their build under .cache/ (make setup) is
// missing.
func ExampleAgent(t testing.TB) string {
	t.Helper()
	skipShort(t)
	root := nodeAndRepo(t)
	built := filepath.Join(root, ".cache", "agents", "openai-agents-ts", "dist", "agent.js")
	if _, err := os.Stat(built); err != nil {
		need(t, fmt.Errorf("%s: %w (run make setup)", built, devstack.ErrNotFound))
	}
	return filepath.Join(root, "examples", "agents", "openai-agents-ts", "run")
}

// ReferenceServers returns the directory holding the official MCP
// reference servers setup installs for upstream-world tests
// (.cache/upstreams/node_modules/@modelcontextprotocol: server-filesystem,
// server-memory), skipping (or failing, with REBOUND_REQUIRE_INTEGRATION=1)
// without them or without node.
func ReferenceServers(t testing.TB) string {
	t.Helper()
	root := nodeAndRepo(t)
	dir := filepath.Join(root, ".cache", "upstreams", "node_modules", "@modelcontextprotocol")
	for _, s := range []string{"server-filesystem", "server-memory"} {
		if _, err := os.Stat(filepath.Join(dir, s, "dist", "index.js")); err != nil {
			need(t, fmt.Errorf("%s: %w (run make setup)", s, devstack.ErrNotFound))
		}
	}
	return dir
}

// ClickHouseClient returns the node_modules holding the official ClickHouse
// Node client (@clickhouse/client) setup installs under
// .cache/clickhouse-client, skipping (or failing, with
// REBOUND_REQUIRE_INTEGRATION=1) without it or without node.
func ClickHouseClient(t testing.TB) string {
	t.Helper()
	modules := filepath.Join(nodeAndRepo(t), ".cache", "clickhouse-client", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@clickhouse", "client", "package.json")); err != nil {
		need(t, fmt.Errorf("@clickhouse/client: %w (run make setup)", devstack.ErrNotFound))
	}
	return modules
}

// Chromium returns the system Chromium (Debian's package, which make setup
// installs as root) for browser tests, or skips (or fails, see the package
// comment) when it is missing.
func Chromium(t testing.TB) string {
	t.Helper()
	skipShort(t)
	for _, name := range []string{"/usr/bin/chromium", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	need(t, fmt.Errorf("chromium: %w (as root: apt-get install chromium, or make setup)", devstack.ErrNotFound))
	return ""
}

// MCPConformance returns the entry point of the MCP conformance suite for
// servers setup installs (.cache/mcp-conformance, from
// scripts/mcp-conformance/package-lock.json), skipping (or failing, with
// REBOUND_REQUIRE_INTEGRATION=1) without it or without node.
func MCPConformance(t testing.TB) string {
	t.Helper()
	skipShort(t)
	root := nodeAndRepo(t)
	cli := filepath.Join(root, ".cache", "mcp-conformance", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		need(t, fmt.Errorf("%s: %w (run make setup)", cli, devstack.ErrNotFound))
	}
	return cli
}
