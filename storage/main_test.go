package storage

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rebound/storage/chdb"
)

// Integration tests run on the embedded engine. libchdb takes seconds to
// load, so TestMain opens it once for the whole test binary (one data
// directory, kept alive by a handle held here) and each test works in its
// own database.

const envRequireIntegration = "REBOUND_REQUIRE_INTEGRATION"

// envSubprocess marks a re-executed test binary that must not load libchdb.
const envSubprocess = "REBOUND_STORAGE_TEST_SUBPROCESS"

var integ struct {
	lib      string // resolved library path
	dataDir  string
	skip     string // why integration tests cannot run ("" when they can)
	keep     Store  // holds the session open for the test binary
	loadTime time.Duration
	stats    chdb.Stats
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if os.Getenv(envSubprocess) != "" {
		integ.skip = "subprocess"
		return m.Run()
	}
	integ.lib = chdb.LibPath("")
	if os.Getenv(envReadOnlyChild) != "" {
		// The read-only test's own process: its session is made read-only
		// for good, so it opens its own (readonly_integration_test.go).
		return m.Run()
	}
	if _, err := os.Stat(integ.lib); err != nil {
		integ.skip = fmt.Sprintf("libchdb not found at %s: run `make setup` (it fetches the library into .cache/chdb) or set %s to a libchdb.so", integ.lib, chdb.EnvLib)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "rebound-storage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	integ.dataDir = dir
	start := time.Now()
	st, err := Open(context.Background(), Config{DataDir: dir, LibPath: integ.lib, Database: "rebound_test_main"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open embedded ClickHouse:", err)
		return 1
	}
	integ.loadTime = time.Since(start)
	integ.keep = st
	integ.stats = st.(*store).t.(*chdbTransport).conn.Stats()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "chDB: dlopen %v, connect %v, first Open total %v (%s)\n",
			integ.stats.LoadTime, integ.stats.OpenTime, integ.loadTime, integ.stats.LibPath)
	}
	code := m.Run()
	_ = st.Close()
	return code
}

// requireIntegration skips (or, with REBOUND_REQUIRE_INTEGRATION=1, fails)
// when the embedded engine is not available.
func requireIntegration(t testing.TB) {
	t.Helper()
	if integ.skip == "" {
		return
	}
	if integ.skip == "subprocess" {
		t.Skip("integration tests do not run in the subprocess")
	}
	if os.Getenv(envRequireIntegration) == "1" {
		t.Fatalf("%s=1 but: %s", envRequireIntegration, integ.skip)
	}
	t.Skip(integ.skip)
}

var dbSeq atomic.Int64

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// openTestStore opens a migrated store in a database of its own.
func openTestStore(t testing.TB) *store {
	t.Helper()
	requireIntegration(t)
	name := strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[:40]
	}
	db := fmt.Sprintf("t%d_%s", dbSeq.Add(1), name)
	st, err := Open(context.Background(), Config{DataDir: integ.dataDir, LibPath: integ.lib, Database: db})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st.(*store)
}
