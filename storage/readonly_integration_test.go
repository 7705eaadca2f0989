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
	ro, err := Open(ctx, Config{DataDir: dir, LibPath: integ.lib, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()

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
		{"SET other setting", "SET max_threads = 2"}, // the session runs on 1 thread (transport_chdb.go)
		{"insert values", "INSERT INTO rebound.sweeps (sweep_id) VALUES ('pwn')"},
		{"drop database", "DROP DATABASE rebound"},
		{"truncate", "TRUNCATE TABLE rebound.sweeps"},
		{"alter delete", "ALTER TABLE rebound.sweeps DELETE WHERE 1"},
		{"comment hides statement", "SELECT 1 /* ; */ ; DROP TABLE rebound.sweeps"},
	}
	for _, a := range attacks {
		_, err := ro.Query(ctx, a.sql)
		if err == nil {
			t.Errorf("%s: %q succeeded", a.name, a.sql)
			continue
		}
		t.Logf("REFUSED %-28s %s", a.name+":", firstLine(err.Error()))
	}

	// Nothing happened: the data is intact, no file was written, nobody
	// was dialled, and the session is still read-only.
	tab, err := ro.Query(ctx, "SELECT groupArray(sweep_id) AS ids, getSetting('readonly') AS ro FROM rebound.sweeps FINAL")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tab.Rows); got != "[[[keep] 1]]" {
		t.Errorf("after the attacks: %s, want [[[keep] 1]]", got)
	}
	entries, _ := os.ReadDir(host)
	if len(entries) != 1 {
		t.Errorf("files appeared in %s: %v", host, entries)
	}
	time.Sleep(100 * time.Millisecond)
	if n := dialed.Load(); n != 0 {
		t.Errorf("%d outbound connections reached the listener", n)
	}
	// Reading still works, comments and a trailing semicolon included.
	for _, q := range []string{"SELECT count() FROM rebound.trials FINAL", "SHOW TABLES FROM rebound", "DESCRIBE TABLE rebound.sweeps",
		"EXPLAIN SELECT 1", "SELECT number FROM numbers(3) -- a comment; DROP DATABASE rebound\n", "SELECT 1;"} {
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
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
