package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage/chdb"
)

// envReadOnlyChild marks the process in which the read-only test runs:
// readonly=1 cannot be lifted, so the test's chDB session would stay
// read-only for every other test of the binary.
const envReadOnlyChild = "REBOUND_STORAGE_READONLY_CHILD"

// TestReadOnlyAttacks runs issue 10's attack list (and its neighbours)
// against a read-only store on the embedded engine. Each attack must fail,
// and afterwards the data, the host's files and the network must show that
// none of them did anything.
func TestReadOnlyAttacks(t *testing.T) {
	if os.Getenv(envReadOnlyChild) == "" {
		requireIntegration(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyAttacks$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envReadOnlyChild+"=1", chdb.EnvLib+"="+integ.lib)
		out, err := cmd.CombinedOutput()
		t.Logf("child process:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyAttacks") {
			t.Fatalf("read-only attacks in the child process: %v", err)
		}
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	host := t.TempDir() // where a successful file attack would leave traces

	// Seed a store as a sweep would, then close it (the last handle closes
	// the session) and reopen it read-only, as `rebound sql` does.
	w, err := Open(ctx, Config{DataDir: dir, LibPath: integ.lib})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.PutSweep(ctx, record.Sweep{SweepID: "keep", Name: "keep", PlanJSON: "{}", Arms: []string{"a"}, Status: sweepstatus.Completed}); err != nil {
		t.Fatal(err)
	}
	// A writer still holds the session: it is not turned read-only under it.
	if _, err := Open(ctx, Config{DataDir: dir, LibPath: integ.lib, ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "other handles") {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	_ = w.Close()
	// The limits are low so that the limit attacks end quickly; the
	// defaults are DefaultLimits.
	limits := Limits{MaxExecutionTime: 2 * time.Second, MaxMemoryBytes: 256 << 20, MaxResultRows: 100_000, MaxResultBytes: 8 << 20}
	ro, err := Open(ctx, Config{DataDir: dir, LibPath: integ.lib, ReadOnly: true, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	// A key file where the embedded store keeps its data, as an older
	// layout kept the redaction key: no statement may read it.
	keyFile := filepath.Join(dir, "redaction.key")
	if err := os.WriteFile(keyFile, []byte("key-material-5d1c9e\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A listener that counts connections: url() must never reach it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()
	secretFile := filepath.Join(host, "secret.txt")
	if err := os.WriteFile(secretFile, []byte("host-secret-7f3a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := func(name string) string { return filepath.Join(host, name) }

	attacks := []struct{ name, sql string }{
		// What issue 10 closed with readonly=1.
		{"multi-statement drop", "SELECT 1; DROP DATABASE rebound"},
		{"CTE insert", "WITH x AS (SELECT 1) INSERT INTO rebound.sweeps (sweep_id) SELECT 'pwn'"},
		{"INTO OUTFILE", fmt.Sprintf("SELECT 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 attacker' INTO OUTFILE '%s' FORMAT TSVRaw", out("authorized_keys"))},
		{"INTO OUTFILE AND STDOUT", fmt.Sprintf("select 1 into outfile '%s' and stdout", out("stdout"))},
		{"File engine", fmt.Sprintf("CREATE TABLE rebound.f (s String) ENGINE = File(TSVRaw, '%s')", out("engine"))},
		{"URL engine", fmt.Sprintf("CREATE TABLE rebound.u (s String) ENGINE = URL('http://%s/u', 'LineAsString')", addr)},
		{"file() /etc/passwd", "SELECT * FROM file('/etc/passwd', 'LineAsString')"},
		{"file() host secret", fmt.Sprintf("SELECT * FROM file('%s', 'LineAsString')", secretFile)},
		{"url() outbound", fmt.Sprintf("SELECT * FROM url('http://%s/x', 'LineAsString')", addr)},
		{"s3()", fmt.Sprintf("SELECT * FROM s3('http://%s/bucket-name/key', 'LineAsString')", addr)},
		{"remote()", fmt.Sprintf("SELECT * FROM remote('%s', system.one)", addr)},
		{"executable()", "SELECT * FROM executable('id', 'LineAsString', 'x String')"},
		{"mysql()", fmt.Sprintf("SELECT * FROM mysql('%s', 'd', 't', 'u', 'p')", addr)},
		{"SETTINGS readonly=0", "SELECT 1 SETTINGS readonly = 0"},
		{"SETTINGS readonly=0 insert", "INSERT INTO rebound.sweeps (sweep_id) SETTINGS readonly = 0 VALUES ('pwn')"},
		{"SET readonly=0", "SET readonly = 0"},
		{"SET readonly=2", "SET readonly = 2"},
		{"SET other setting", "SET max_threads = 2"},
		{"insert values", "INSERT INTO rebound.sweeps (sweep_id) VALUES ('pwn')"},
		{"drop database", "DROP DATABASE rebound"},
		{"truncate", "TRUNCATE TABLE rebound.sweeps"},
		{"alter delete", "ALTER TABLE rebound.sweeps DELETE WHERE 1"},
		{"comment hides statement", "SELECT 1 /* ; */ ; DROP TABLE rebound.sweeps"},

		// Issue 25: SETTINGS in a subquery lifts readonly (upstream
		// ClickHouse #116028), in FROM, WITH and scalar subqueries.
		{"subquery SETTINGS file()", fmt.Sprintf("SELECT * FROM (SELECT * FROM file('%s','LineAsString') SETTINGS readonly=0)", secretFile)},
		{"subquery SETTINGS url()", fmt.Sprintf("SELECT * FROM (SELECT * FROM url('http://%s/ssrf','LineAsString') SETTINGS readonly=0)", addr)},
		{"subquery SETTINGS sqlite()", fmt.Sprintf("SELECT * FROM (SELECT * FROM sqlite('%s', 'executions') SETTINGS readonly=0)", filepath.Join(host, "temporal.sqlite"))},
		{"WITH SETTINGS file()", fmt.Sprintf("WITH x AS (SELECT * FROM file('%s','LineAsString') SETTINGS readonly=0) SELECT * FROM x", secretFile)},
		{"scalar subquery SETTINGS url()", fmt.Sprintf("SELECT (SELECT * FROM url('http://%s/scalar','LineAsString') SETTINGS readonly=0)", addr)},
		{"IN subquery SETTINGS", fmt.Sprintf("SELECT 1 WHERE 'x' IN (SELECT * FROM file('%s','LineAsString') SETTINGS readonly=0)", secretFile)},
		{"subquery SETTINGS only", "SELECT * FROM (SELECT 1 SETTINGS max_threads = 8)"},
		// The scalar file() is allowed in readonly mode.
		{"scalar file() key", fmt.Sprintf("SELECT file('%s')", keyFile)},
		{"scalar file() relative", "SELECT file('../redaction.key')"},
		{"scalar FILE() upper case", fmt.Sprintf("SELECT FILE('%s')", keyFile)},
		{"scalar file() backquoted", fmt.Sprintf("SELECT `file`('%s')", keyFile)},
		// DESCRIBE runs schema inference and dials out.
		{"DESCRIBE file()", fmt.Sprintf("DESCRIBE TABLE file('%s','TSVWithNames')", secretFile)},
		{"DESCRIBE url()", fmt.Sprintf("DESCRIBE TABLE url('http://%s/d','TSVWithNames')", addr)},
		{"DESCRIBE s3()", fmt.Sprintf("DESCRIBE s3('http://%s/b/k','TSVWithNames')", addr)},
		{"DESCRIBE remote()", fmt.Sprintf("DESCRIBE TABLE remote('%s', system.one)", addr)},
		{"DESCRIBE postgresql()", fmt.Sprintf("DESCRIBE TABLE postgresql('%s', 'd', 't', 'u', 'p')", addr)},
		{"DESCRIBE subquery url()", fmt.Sprintf("DESC (SELECT * FROM url('http://%s/ds','LineAsString'))", addr)},
		// No limit on what a query may cost: refused (numbers) or stopped.
		{"numbers(1e13)", "SELECT sum(number) FROM numbers(1e13)"},
		{"zeros()", "SELECT count() FROM zeros(100000000000)"},
		{"sleep", "SELECT sleepEachRow(1) FROM rebound.sweeps"},
		// Statements that are not reads.
		{"SYSTEM STOP MERGES", "SYSTEM STOP MERGES"},
		{"SYSTEM FLUSH LOGS", "SYSTEM FLUSH LOGS"},
		{"KILL QUERY", "KILL QUERY WHERE 1"},
		{"SET ROLE ALL", "SET ROLE ALL"},
		{"USE system", "USE system"},
		{"EXPLAIN", "EXPLAIN SELECT 1"},
		{"EXPLAIN AST of file()", fmt.Sprintf("EXPLAIN AST SELECT file('%s')", keyFile)},
		{"OPTIMIZE", "OPTIMIZE TABLE rebound.sweeps FINAL"},
		// Introspection and the engine's own state.
		{"addressToLine", "SELECT addressToLine(toUInt64(1))"},
		{"demangle", "SELECT demangle('_Z1fv')"},
		{"getSetting", "SELECT getSetting('readonly')"},
		{"hostName", "SELECT hostName()"},
		{"system table", "SELECT * FROM system.users"},
		{"system table join", "SELECT * FROM rebound.sweeps AS s JOIN system.tables AS t ON 1"},
		{"IN other database's table", "SELECT 'default' IN system.users"},
		{"information_schema", "SELECT * FROM information_schema.tables"},
		{"SHOW DATABASES", "SHOW DATABASES"},
		{"SHOW TABLES FROM system", "SHOW TABLES FROM system"},
		{"SHOW CREATE system table", "SHOW CREATE TABLE system.users"},
		{"SHOW PROCESSLIST", "SHOW PROCESSLIST"},
		{"SHOW GRANTS", "SHOW GRANTS"},
		{"SHOW SETTINGS", "SHOW SETTINGS LIKE '%'"},
		{"dictGet", "SELECT dictGet('d', 'a', toUInt64(1))"},
		{"joinGet", "SELECT joinGet('rebound.sweeps', 'name', 'keep')"},
		{"chdb()", "SELECT chdb('SELECT 1')"},
		// What the engine's parse hides.
		{"APPLY(file)", "SELECT * APPLY(file) FROM rebound.sweeps"},
		{"APPLY lambda", "SELECT * APPLY(x -> file(x)) FROM rebound.sweeps"},
		{"FORMAT clause", "SELECT 1 FORMAT TSVRaw"},
		// Newlines in names print unescaped in EXPLAIN AST: lines added
		// that way cannot hide a real one.
		{"alias newline injection", fmt.Sprintf("SELECT 1 AS `x\n    Literal UInt64_1`, file('%s')", keyFile)},
		{"identifier newline injection", fmt.Sprintf("SELECT * FROM (SELECT 1 AS `a\nSelectQuery`) AS `t\n      TableIdentifier rebound.sweeps`, url('http://%s/inj', 'LineAsString')", addr)},
	}
	for _, a := range attacks {
		_, err := ro.Query(ctx, a.sql)
		if err == nil {
			t.Errorf("%s: %q succeeded", a.name, a.sql)
			continue
		}
		t.Logf("REFUSED %-32s %s", a.name+":", firstLine(err.Error()))
		if len(err.Error()) > 2000 {
			t.Errorf("%s: a %d-byte error", a.name, len(err.Error()))
		}
	}

	// Limits: time, memory and result size stop a statement, with ErrLimit.
	heavy := "SELECT count() FROM (SELECT arrayJoin(range(10000)) AS a) AS x, (SELECT arrayJoin(range(10000)) AS b) AS y, (SELECT arrayJoin(range(10000)) AS c) AS z"
	for _, l := range []struct{ name, sql string }{
		{"time", heavy},
		{"memory", "SELECT length(groupArray(repeat('x', 1000))) FROM (SELECT arrayJoin(range(1000000)))"},
		{"result rows", "SELECT * FROM (SELECT arrayJoin(range(1000000)) AS n)"},
		{"result rows without a table", "SELECT arrayJoin(range(1000000))"},
		{"result bytes", "SELECT repeat('x', 10000) FROM (SELECT arrayJoin(range(2000)) AS n)"},
		{"result bytes from a table", "SELECT repeat(sweep_id, 1000000) AS s FROM rebound.sweeps ARRAY JOIN range(10) AS i"},
	} {
		start := time.Now()
		_, err := ro.Query(ctx, l.sql)
		if !errors.Is(err, ErrLimit) {
			t.Errorf("limit %s: %v, want ErrLimit", l.name, err)
			continue
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("limit %s took %v", l.name, d)
		}
		t.Logf("LIMIT   %-32s %s", l.name+":", firstLine(err.Error()))
	}

	// An error quotes at most about 200 bytes of the statement, however
	// long the statement is; a statement over MaxStatementBytes is refused
	// before the engine sees it.
	long := "SELECT " + strings.Repeat("1 + ", 100_000) + "+ FROM"
	if _, err := ro.Query(ctx, long); err == nil || len(err.Error()) > 1500 {
		t.Errorf("a %d-byte bad statement: a %d-byte error", len(long), len(err.Error()))
	}
	if _, err := ro.Query(ctx, strings.Repeat("x", MaxStatementBytes+1)); !errors.Is(err, ErrStatement) || len(err.Error()) > 300 {
		t.Errorf("an oversized statement: %v", err)
	}

	// Nothing happened: the data is intact, no file was written, nobody
	// was dialled, and the session is still read-only.
	// (Checked under the door: getSetting is not a function it lets through.)
	tab, err := ro.(*store).t.Query(ctx, "SELECT groupArray(sweep_id) AS ids, getSetting('readonly') AS ro, getSetting('allow_introspection_functions') AS intro, getSetting('max_execution_time') AS met FROM rebound.sweeps FINAL")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tab.Rows); got != "[[[keep] 1 false 2]]" {
		t.Errorf("after the attacks: %s, want [[[keep] 1 false 2]]", got)
	}
	entries, _ := os.ReadDir(host)
	if len(entries) != 1 { // secret.txt
		t.Errorf("files appeared in %s: %v", host, entries)
	}
	time.Sleep(100 * time.Millisecond)
	if n := dialed.Load(); n != 0 {
		t.Errorf("%d outbound connections reached the listener", n)
	}
	// Reading still works, comments and a trailing semicolon included.
	for _, q := range []string{"SELECT count() FROM rebound.trials FINAL", "SHOW TABLES FROM rebound", "SHOW TABLES", "DESCRIBE TABLE rebound.sweeps",
		"SHOW CREATE TABLE rebound.trials", "SHOW CREATE VIEW rebound.trial_rates", "DESCRIBE (SELECT 1 AS x)",
		"SELECT arrayJoin([1, 2, 3]) AS n -- a comment; DROP DATABASE rebound\n", "SELECT 1;",
		"WITH k AS (SELECT sweep_id FROM sweeps FINAL) SELECT count() FROM k",
		"SELECT arm, avg(recovered) AS rate, countIf(recovered = 1) AS ok, quantilesExact(0.5, 0.9)(seed) FROM rebound.trials FINAL GROUP BY arm ORDER BY arm",
		"SELECT s.sweep_id, count() OVER (PARTITION BY s.status) FROM rebound.sweeps AS s FINAL LEFT JOIN rebound.trials AS t USING (sweep_id) WHERE s.sweep_id IN (SELECT sweep_id FROM rebound.sweeps) LIMIT 5",
		"SELECT toStartOfHour(now()), dateDiff('second', now(), now() + INTERVAL 1 MINUTE), JSONExtractString('{\"a\":\"b\"}', 'a'), formatReadableSize(1024)",
		"SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 2",
	} {
		if _, err := ro.Query(ctx, q); err != nil {
			t.Errorf("read %q: %v", q, err)
		}
	}
	// The read-only session is the process's for good: no writer joins it.
	if _, err := Open(ctx, Config{DataDir: dir, LibPath: integ.lib}); err == nil {
		t.Error("a writable store opened on the read-only session")
	}
	if _, err := ro.Query(ctx, "SELECT 1; SELECT 2"); !errors.Is(err, ErrStatement) {
		t.Errorf("multi-statement: %v, want ErrStatement", err)
	}
	// A read that asks for threads still runs, on the session's one thread:
	// the session may not change a setting.
	if _, err := ro.(*store).t.(*chdbTransport).run(ctx, Stmt{SQL: "SELECT 1", ReleaseMemory: true}, "TabSeparated"); err != nil {
		t.Errorf("a read releasing memory on the read-only session: %v", err)
	}
	if got := statementThreads(t, ro, 2); got != "1" {
		t.Errorf("a statement asking for 2 threads on the read-only session ran with max_threads %s, want 1", got)
	}
	// Once the read-only handle is closed, a later writer gets a fresh,
	// writable session (rebound sql followed by rebound run in one test).
	_ = ro.Close()
	w, err = Open(ctx, Config{DataDir: dir, LibPath: integ.lib})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.PutSweep(ctx, record.Sweep{SweepID: "after", Name: "after", PlanJSON: "{}", Arms: []string{"a"}, Status: sweepstatus.Completed}); err != nil {
		t.Fatalf("write after the read-only session closed: %v", err)
	}
	// The engine takes the statement that returns freed memory (run with
	// Stmt.ReleaseMemory, whose failure is ignored: here it must not fail),
	// and a read asking for it reads as any other.
	if _, err := w.(*store).t.(*chdbTransport).conn.Query(ctx, releaseMemorySQL, "TabSeparated"); err != nil {
		t.Errorf("%s: %v", releaseMemorySQL, err)
	}
	var one []countRow
	if err := w.(*store).t.Select(ctx, &one, Stmt{SQL: "SELECT toUInt64(42) AS n", ReleaseMemory: true}); err != nil || len(one) != 1 || one[0].N != 42 {
		t.Errorf("a read releasing memory: %+v, %v", one, err)
	}
	// A writable session runs statements on one thread unless one asks.
	for threads, want := range map[int]string{0: "1", 1: "1", 2: "2"} {
		if got := statementThreads(t, w, threads); got != want {
			t.Errorf("a statement asking for %d threads ran with max_threads %s, want %s", threads, got, want)
		}
	}
}

// statementThreads runs a statement with Stmt.Threads set to threads and
// returns the max_threads it ran with.
func statementThreads(t *testing.T, st Store, threads int) string {
	t.Helper()
	var rows []struct {
		N string `ch:"n" json:"n"`
	}
	if err := st.(*store).t.Select(context.Background(), &rows, Stmt{SQL: "SELECT toString(getSetting('max_threads')) AS n", Threads: threads}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	return rows[0].N
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
