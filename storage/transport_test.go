package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// withServer makes open the registered server opener for the test (nil:
// none, as in a program that does not import ServerPackage).
func withServer(t *testing.T, open ServerOpener) {
	t.Helper()
	server.mu.Lock()
	old := server.open
	server.open = open
	server.mu.Unlock()
	t.Cleanup(func() {
		server.mu.Lock()
		server.open = old
		server.mu.Unlock()
	})
}

// This test binary does not link the server transport: a server DSN is
// refused with an error that names the package to import, and the DSN's
// password stays out of it.
func TestOpenServerDSNWithoutTransport(t *testing.T) {
	withServer(t, nil)
	for _, dsn := range []string{
		"clickhouse://u:s3cret@host:9000/rebound",
		"tcp://u:s3cret@host:9000",
	} {
		_, err := Open(context.Background(), Config{DSN: dsn})
		if !errors.Is(err, ErrNoServerTransport) {
			t.Fatalf("Open(%s): err = %v, want ErrNoServerTransport", dsn, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, `import _ "rebound/storage/clickhouseserver"`) || !strings.Contains(msg, "host:9000") {
			t.Errorf("Open(%s): error does not say what to import for which server: %v", dsn, err)
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("Open(%s): error leaks the password: %v", dsn, err)
		}
	}
}

// fakeServer is a registered opener that hands out recorders.
type fakeServer struct {
	db   string // the database "named in the DSN"
	err  error
	nilT bool // return no transport and no error (a broken opener)

	dsn  string
	opts ServerOptions
	rec  *recorder
}

func (f *fakeServer) open(ctx context.Context, dsn string, opts ServerOptions) (Transport, string, error) {
	f.dsn, f.opts = dsn, opts
	if f.err != nil {
		return nil, "", f.err
	}
	if f.nilT {
		return nil, f.db, nil
	}
	f.rec = &recorder{selects: map[string]any{}}
	return f.rec, f.db, nil
}

func TestOpenServerDSNWithTransport(t *testing.T) {
	ctx := context.Background()
	const dsn = "clickhouse://u:s3cret@h:9000/fromdsn"

	t.Run("the DSN's database, options passed on", func(t *testing.T) {
		f := &fakeServer{db: "fromdsn"}
		withServer(t, f.open)
		st, err := Open(ctx, Config{DSN: dsn, ReadOnly: true, Cluster: testCluster})
		if err != nil {
			t.Fatal(err)
		}
		if f.dsn != dsn || !f.opts.ReadOnly || !f.opts.DistributedSync {
			t.Fatalf("opener got %q, %+v", f.dsn, f.opts)
		}
		// A read-only connection carries the door's limits and turns
		// introspection off, whatever the DSN says.
		for k, want := range map[string]any{"max_execution_time": int64(60), "allow_introspection_functions": int64(0), "result_overflow_mode": "throw", "max_result_rows": uint64(1_000_000)} {
			if got := f.opts.Settings[k]; got != want {
				t.Errorf("read-only setting %s = %#v, want %#v", k, got, want)
			}
		}
		s := st.(*store)
		if s.db != "fromdsn" || !s.readOnly || s.cluster != testCluster {
			t.Fatalf("store db %q, readOnly %t, cluster %+v", s.db, s.readOnly, s.cluster)
		}
		// The store's statements reach the registered transport.
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if len(f.rec.log) == 0 || f.rec.log[0].sql != createDatabase("fromdsn", testCluster) {
			t.Fatalf("Migrate sent %+v", f.rec.log)
		}
		if err := st.Close(); err != nil || !f.rec.closed {
			t.Fatalf("Close: %v, transport closed %t", err, f.rec.closed)
		}
	})

	t.Run("Config.Database wins, single node", func(t *testing.T) {
		f := &fakeServer{db: "fromdsn"}
		withServer(t, f.open)
		st, err := Open(ctx, Config{DSN: dsn, Database: "mine"})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if st.(*store).db != "mine" || f.opts.ReadOnly || f.opts.DistributedSync || f.opts.Settings != nil {
			t.Fatalf("db %q, options %+v", st.(*store).db, f.opts)
		}
	})

	t.Run("no database anywhere: the default", func(t *testing.T) {
		f := &fakeServer{}
		withServer(t, f.open)
		st, err := Open(ctx, Config{DSN: "clickhouse://h:9000"})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if st.(*store).db != DefaultDatabase {
			t.Fatalf("db %q", st.(*store).db)
		}
	})

	t.Run("an invalid database from the DSN closes the connection", func(t *testing.T) {
		f := &fakeServer{db: "bad-db"}
		withServer(t, f.open)
		_, err := Open(ctx, Config{DSN: dsn, Database: "mine"})
		if err == nil || !strings.Contains(err.Error(), `invalid database name "bad-db"`) || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("err = %v", err)
		}
		if !f.rec.closed {
			t.Fatal("transport left open")
		}
	})

	t.Run("an invalid Config.Database closes the connection", func(t *testing.T) {
		f := &fakeServer{}
		withServer(t, f.open)
		if _, err := Open(ctx, Config{DSN: dsn, Database: "a;b"}); err == nil || !strings.Contains(err.Error(), `invalid database name "a;b"`) {
			t.Fatalf("err = %v", err)
		}
		if !f.rec.closed {
			t.Fatal("transport left open")
		}
	})

	t.Run("the opener's error is returned as is", func(t *testing.T) {
		boom := errors.New("connection refused")
		withServer(t, (&fakeServer{err: boom}).open)
		if _, err := Open(ctx, Config{DSN: dsn}); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("an opener that returns no transport", func(t *testing.T) {
		withServer(t, (&fakeServer{nilT: true}).open)
		if _, err := Open(ctx, Config{DSN: dsn}); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRegisterServer(t *testing.T) {
	withServer(t, nil)
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	mustPanic("RegisterServer(nil)", func() { RegisterServer(nil) })
	f := &fakeServer{}
	RegisterServer(f.open)
	if registeredServer() == nil {
		t.Fatal("not registered")
	}
	mustPanic("a second RegisterServer", func() { RegisterServer(f.open) })
}

// A server's errors carry the engine's code through the registered
// transport, and a read-only store turns a READONLY refusal into
// ErrReadOnly, as it does for chDB.
func TestServerReadOnlyRefusal(t *testing.T) {
	refusal := &EngineError{Code: ReadOnlyCode, Err: errors.New("code: 164, message: Cannot execute query in readonly mode")}
	rt := &refusingTransport{recorder: recorder{selects: map[string]any{
		"SELECT formatQuerySingleLine({q:String}) AS q": []struct {
			Q string `ch:"q" json:"q"`
		}{{Q: "INSERT INTO t VALUES (1)"}},
	}}, err: refusal}
	withServer(t, func(context.Context, string, ServerOptions) (Transport, string, error) { return rt, "", nil })
	st, err := Open(context.Background(), Config{DSN: "clickhouse://h:9000", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Query(context.Background(), "INSERT INTO t VALUES (1)")
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, refusal) {
		t.Fatalf("err = %v, want ErrReadOnly wrapping the engine's refusal", err)
	}
}

// refusingTransport answers every Query with err.
type refusingTransport struct {
	recorder
	err error
}

func (r *refusingTransport) Query(ctx context.Context, sql string) (Table, error) {
	r.log = append(r.log, sent{kind: "query", sql: sql})
	return Table{}, r.err
}
