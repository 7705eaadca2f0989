package storage

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage/chdb"
)

// Integration tests run on the embedded engine. libchdb takes seconds to
// load, so TestMain opens it once for the whole test binary (one data
// directory, kept alive by a handle held here) and each test works in its
// own database.

// envSubprocess marks a re-executed test binary that must not load libchdb.
const envSubprocess = "REBOUND_STORAGE_TEST_SUBPROCESS"

var integ struct {
	lib     string // resolved library path
	dataDir string
	// unavailable says why integration tests cannot run (nil when they
	// can): -short mode, no libchdb, or the re-executed subprocess.
	unavailable error
	keep        Store // holds the session open for the test binary
	loadTime    time.Duration
	stats       chdb.Stats
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if os.Getenv(envSubprocess) != "" {
		integ.unavailable = errSubprocess
		return m.Run()
	}
	if os.Getenv(envReadOnlyChild) != "" {
		// The read-only test's own process: its session is made read-only
		// for good, so it opens its own (readonly_integration_test.go).
		integ.lib = chdb.LibPath("")
		return m.Run()
	}
	if integ.lib, integ.unavailable = devstacktest.ChDBLibForMain(); integ.unavailable != nil {
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

// errSubprocess is why integration tests do not run in a re-executed test
// binary.
var errSubprocess = errors.New("integration tests do not run in the subprocess")

// requireIntegration skips (or, with REBOUND_REQUIRE_INTEGRATION=1, fails)
// when the embedded engine is not available; see devstacktest.
func requireIntegration(t testing.TB) {
	t.Helper()
	if errors.Is(integ.unavailable, errSubprocess) {
		t.Skip(errSubprocess.Error())
	}
	devstacktest.Unavailable(t, integ.unavailable)
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
