package chdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"rebound/internal/devstack/devstacktest"
)

// libOrSkip returns the library to test with, skipping (or failing, with
// REBOUND_REQUIRE_INTEGRATION=1) when there is none; see devstacktest.
func libOrSkip(t testing.TB) string {
	t.Helper()
	return devstacktest.ChDBLib(t)
}

func openOrSkip(t testing.TB) *Conn {
	t.Helper()
	lib := libOrSkip(t)
	c, err := Open(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestMissingLibraryIsAnError(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "libchdb.so")
	_, err := Open(missing, dir)
	if err == nil {
		t.Fatal("Open succeeded without a library")
	}
	want := "libchdb not found at " + missing + ": run `make setup` or set REBOUND_CHDB_LIB"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	var le *LibraryError
	if !errors.Is(err, ErrLibraryNotFound) || !errors.As(err, &le) || le.Path != missing {
		t.Fatalf("error %#v does not match ErrLibraryNotFound / LibraryError", err)
	}

	// A directory, and a file that is not a shared library: errors, not panics.
	if _, err := Open(dir, dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	junk := filepath.Join(dir, "junk.so")
	if err := os.WriteFile(junk, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(junk, dir)
	if err == nil || !strings.Contains(err.Error(), "cannot load libchdb from "+junk) || errors.Is(err, ErrLibraryNotFound) {
		t.Fatalf("junk library: %v", err)
	}
}

func TestLibPath(t *testing.T) {
	if got := LibPath("/x/libchdb.so"); got != "/x/libchdb.so" {
		t.Fatal(got)
	}
	t.Setenv(EnvLib, "/from/env.so")
	if got := LibPath(""); got != "/from/env.so" {
		t.Fatal(got)
	}
	t.Setenv(EnvLib, "")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if got, want := LibPath(""), filepath.Join(root, ".cache", "chdb", "libchdb.so"); got != want {
		t.Fatalf("LibPath = %q, want %q", got, want)
	}
}

func TestEscapeParam(t *testing.T) {
	got := EscapeParam("a\\b\tc\nd\re\x00f'g\"h")
	if want := `a\\b\tc\nd\re\0f'g"h`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestGoKeepsItsSignalHandlers: after the engine is up, the Go runtime still
// owns SIGSEGV & co: a nil dereference is a recoverable panic, and the
// dispositions of the signals Go relies on are what they were before.
func TestGoKeepsItsSignalHandlers(t *testing.T) {
	lib := libOrSkip(t)
	before := snapshotSignals()
	c, err := Open(lib, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Query(context.Background(), "SELECT sum(number) FROM numbers(100000)", "CSV"); err != nil {
		t.Fatal(err)
	}
	after := snapshotSignals()
	for sig := range goSignals {
		if before[sig] != after[sig] {
			t.Errorf("signal %d (%v): disposition changed by the engine and not restored", sig, syscall.Signal(sig))
		}
	}
	if handlerOf(after[int(syscall.SIGSEGV)]) == 0 {
		t.Fatal("SIGSEGV is at SIG_DFL")
	}
	recovered := func() (r any) {
		defer func() { r = recover() }()
		var p *int
		return *p
	}()
	if recovered == nil {
		t.Fatal("nil dereference did not panic")
	}
	t.Logf("restored after libchdb calls (signal: times): %v", RestoredSignals())
}

func TestQueries(t *testing.T) {
	c := openOrSkip(t)
	ctx := context.Background()
	out, err := c.Query(ctx, "SELECT 40 + 2 AS x", "JSONEachRow")
	if err != nil || string(out) != "{\"x\":42}\n" {
		t.Fatalf("%q, %v", out, err)
	}
	_, err = c.Query(ctx, "SELECT * FROM no_such_table", "CSV")
	var qe *QueryError
	if !errors.As(err, &qe) || qe.Code != 60 || !strings.Contains(qe.Message, "no_such_table") {
		t.Fatalf("error %#v", err)
	}
	if _, err := c.Query(ctx, "SELECT '\x00'", "CSV"); err == nil {
		t.Fatal("NUL in query accepted")
	}
	// Parameters: values arrive byte for byte.
	for _, s := range []string{"plain", `it's "q"`, `back\slash \n`, "new\nline\ttab\r", "nul\x00byte", "é 日本 😀", `\N`, ""} {
		out, err := c.QueryWithParams(ctx, "SELECT {s:String} AS s, length({s:String}) AS n", "JSONEachRow", map[string]string{"s": s})
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var row struct {
			S string `json:"s"`
			N int    `json:"n"`
		}
		if err := json.Unmarshal(out, &row); err != nil || row.S != s || row.N != len(s) {
			t.Errorf("param %q came back as %q (len %d), %v", s, row.S, row.N, err)
		}
	}
	// Concurrent queries are serialized, not interleaved.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := c.Query(ctx, fmt.Sprintf("SELECT %d AS i", i), "CSV")
			if err != nil || string(out) != fmt.Sprintf("%d\n", i) {
				t.Errorf("goroutine %d: %q, %v", i, out, err)
			}
		}(i)
	}
	wg.Wait()
	// A cancelled context does not start a query.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	c.s.sem <- struct{}{} // hold the session
	_, err = c.Query(cctx, "SELECT 1", "CSV")
	<-c.s.sem
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestSessionLifecycle(t *testing.T) {
	lib := libOrSkip(t)
	dir := t.TempDir()
	ctx := context.Background()
	a, err := Open(lib, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(lib, dir) // shares the session
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(lib, t.TempDir()); err == nil || !strings.Contains(err.Error(), "only one chDB session per process") {
		t.Fatalf("second data dir: %v", err)
	}
	if _, err := a.Query(ctx, "CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x", "CSV"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Query(ctx, "INSERT INTO t VALUES (7)", "CSV"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	a.Close() // idempotent
	if _, err := a.Query(ctx, "SELECT 1", "CSV"); !errors.Is(err, ErrClosed) {
		t.Fatalf("query on a closed handle: %v", err)
	}
	if out, err := b.Query(ctx, "SELECT x FROM t", "CSV"); err != nil || string(out) != "7\n" {
		t.Fatalf("after closing one handle: %q, %v", out, err)
	}
	b.Close()
	if _, err := b.Query(ctx, "SELECT 1", "CSV"); !errors.Is(err, ErrClosed) {
		t.Fatalf("query on a closed session: %v", err)
	}
	// Reconnecting in the same process finds the data again.
	c, err := Open(lib, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, err := c.Query(ctx, "SELECT x FROM t", "CSV"); err != nil || string(out) != "7\n" {
		t.Fatalf("after reopening: %q, %v", out, err)
	}
	t.Logf("stats: %+v", c.Stats())
}

// A failed statement leaves nothing behind for the next one: libchdb 26.5
// prepends the output a failed query's format had written (a JSONCompact
// header) to the next result, and the session drains it.
func TestFailedQueryLeavesNoOutput(t *testing.T) {
	c := openOrSkip(t)
	ctx := context.Background()
	for _, q := range []string{"SET max_execution_time = 1", "SET timeout_overflow_mode = 'throw'"} {
		if _, err := c.Query(ctx, q, "TabSeparated"); err != nil {
			t.Fatal(err)
		}
	}
	heavy := "SELECT count() FROM (SELECT arrayJoin(range(10000)) AS a) AS x, (SELECT arrayJoin(range(10000)) AS b) AS y, (SELECT arrayJoin(range(10000)) AS c) AS z"
	if _, err := c.Query(ctx, heavy, "JSONCompact"); err == nil {
		t.Fatal("the heavy query ran within max_execution_time = 1")
	}
	out, err := c.Query(ctx, "SELECT 42", "TabSeparated")
	if err != nil || string(out) != "42\n" {
		t.Fatalf("the query after a failed one: %q, %v", out, err)
	}
	for _, q := range []string{"SET max_execution_time = 0"} {
		if _, err := c.Query(ctx, q, "TabSeparated"); err != nil {
			t.Fatal(err)
		}
	}
}
