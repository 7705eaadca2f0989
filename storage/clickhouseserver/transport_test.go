package clickhouseserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// ---- a recording clickhouse-go connection ----

type sent struct {
	kind string // exec, select, query, batch (batch-aborted: closed unsent)
	sql  string
	rows [][]any
}

// fakeConn records what the transport hands to clickhouse-go.
type fakeConn struct {
	log []sent
	// selects are canned results by SQL: rows as column → value, set into
	// the destination's fields by their ch tags (as ScanStruct does).
	selects  map[string][]map[string]any
	queryErr error // returned by Query
	pingErr  error
	closed   bool
}

// newFakeConn answers SELECT version() as chDB 26.5 does.
func newFakeConn() *fakeConn {
	return &fakeConn{selects: map[string][]map[string]any{versionSQL: {{"v": "26.5.1.1"}}}}
}

const versionSQL = "SELECT version() AS v"

func (f *fakeConn) Exec(ctx context.Context, query string, args ...any) error {
	f.log = append(f.log, sent{kind: "exec", sql: query})
	return nil
}

func (f *fakeConn) Select(ctx context.Context, dest any, query string, args ...any) error {
	f.log = append(f.log, sent{kind: "select", sql: query})
	slice := reflect.ValueOf(dest).Elem()
	for _, row := range f.selects[query] {
		elem := reflect.New(slice.Type().Elem()).Elem()
		for i := 0; i < elem.NumField(); i++ {
			if v, ok := row[elem.Type().Field(i).Tag.Get("ch")]; ok {
				elem.Field(i).Set(reflect.ValueOf(v).Convert(elem.Field(i).Type()))
			}
		}
		slice.Set(reflect.Append(slice, elem))
	}
	return nil
}

func (f *fakeConn) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	f.log = append(f.log, sent{kind: "batch", sql: query})
	return &fakeBatch{conn: f, idx: len(f.log) - 1}, nil
}

// Query records the statement; there is no server to scan rows from, so
// it answers queryErr, or errNoServer.
func (f *fakeConn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	f.log = append(f.log, sent{kind: "query", sql: query})
	if f.queryErr != nil {
		return nil, f.queryErr
	}
	return nil, errNoServer
}

var errNoServer = errors.New("no server in unit tests")

func (f *fakeConn) Ping(ctx context.Context) error { return f.pingErr }

func (f *fakeConn) Close() error {
	f.closed = true
	return nil
}

type fakeBatch struct {
	driver.Batch // unimplemented methods panic
	conn         *fakeConn
	idx          int
	sent, closed bool
}

func (b *fakeBatch) Append(v ...any) error {
	b.conn.log[b.idx].rows = append(b.conn.log[b.idx].rows, v)
	return nil
}

func (b *fakeBatch) Send() error {
	if b.sent {
		return errors.New("sent twice")
	}
	b.sent = true
	return nil
}

func (b *fakeBatch) Close() error {
	b.closed = true
	if !b.sent {
		b.conn.log[b.idx].kind = "batch-aborted"
	}
	return nil
}

// dialFake makes storage.Open reach fc through the registered transport
// (the real open path: registration, DSN parsing, options) and returns the
// options it was dialed with.
func dialFake(t *testing.T, fc *fakeConn) *clickhouse.Options {
	t.Helper()
	var got clickhouse.Options
	old := dial
	dial = func(opts *clickhouse.Options) (conn, error) {
		got = *opts
		return fc, nil
	}
	t.Cleanup(func() { dial = old })
	return &got
}

// ---- registration ----

// The package registers itself, under the name storage's error tells
// programs to import.
func TestRegistersWithStorage(t *testing.T) {
	if pkg := reflect.TypeOf(transport{}).PkgPath(); pkg != storage.ServerPackage {
		t.Fatalf("storage.ServerPackage = %q, but the server transport is %q", storage.ServerPackage, pkg)
	}
	fc := newFakeConn()
	opts := dialFake(t, fc)
	st, err := storage.Open(context.Background(), storage.Config{DSN: "clickhouse://alice:s3cret@ch1:9000/analytics"})
	if err != nil {
		t.Fatalf("Open with a server DSN in a program that links this package: %v", err)
	}
	if !reflect.DeepEqual(opts.Addr, []string{"ch1:9000"}) || opts.Auth.Username != "alice" || opts.Auth.Database != "" {
		t.Fatalf("dialed with %+v", opts)
	}
	if _, ok := opts.Settings["readonly"]; ok {
		t.Fatalf("a writable store dialed with %v", opts.Settings)
	}
	if st.(interface{ Database() string }).Database() != "analytics" {
		t.Fatalf("database %q, want the DSN's", st.(interface{ Database() string }).Database())
	}
	if err := st.Close(); err != nil || !fc.closed {
		t.Fatalf("Close: %v, connection closed %t", err, fc.closed)
	}
}

// ---- the transport sends exactly the shared SQL ----

// TestServerSQLGolden drives a store on the server transport through every
// kind of call a sweep, a report and the judge make, and holds what reaches
// clickhouse-go, statement by statement, to testdata/server_sql.golden
// (go test ./storage/clickhouseserver -run ServerSQLGolden -update rewrites
// it; review the diff). The aggregate queries (ReportTotals, CompareTotals)
// are held to the per-case route by results/report's equality test instead.
func TestServerSQLGolden(t *testing.T) {
	ctx := context.Background()
	fc := newFakeConn()
	dialFake(t, fc)
	st, err := storage.Open(ctx, storage.Config{DSN: "clickhouse://u:p@h:9000/rb"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// Learn the read of one trial, to answer it: Trial then reads the
	// trial's calls.
	if _, _, err := st.Trial(ctx, "t"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Trial with no rows: %v", err)
	}
	fc.selects[fc.log[len(fc.log)-1].sql] = []map[string]any{{"sweep_id": "s", "trial_id": "t", "written_at_ms": int64(1_700_000_000_000)}}
	// The same for a trial read by its key (SweepTrial).
	key := storage.TrialKey{Arm: "a", Scenario: "c", Variant: "v", Seed: 1, TrialID: "t"}
	if _, _, err := st.SweepTrial(ctx, "s", key); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("SweepTrial with no rows: %v", err)
	}
	fc.selects[fc.log[len(fc.log)-1].sql] = []map[string]any{{"sweep_id": "s", "trial_id": "t", "written_at_ms": int64(1_700_000_000_000)}}
	fc.log = nil

	steps := []struct {
		name string
		do   func() error
	}{
		{"Migrate", func() error { return st.Migrate(ctx) }},
		{"PutSweep", func() error {
			return st.PutSweep(ctx, record.Sweep{SweepID: "s", Name: "n", PlanJSON: "{}", Arms: []string{"a"}, Status: sweepstatus.Running})
		}},
		{"WriteTrials", func() error { trials, calls := makeTrials("s", 2, 2); return st.WriteTrials(ctx, trials, calls) }},
		{"PutModelCall", func() error {
			return st.PutModelCall(ctx, record.ModelCall{SweepID: "s", TrialID: "t", Step: 1, Kind: "turn", Response: "{}"})
		}},
		{"CountTrials", func() error { _, err := st.CountTrials(ctx, "s"); return err }},
		{"StoredTrials", func() error {
			_, err := st.StoredTrials(ctx, "s", []storage.TrialKey{{Arm: "a", Scenario: "c", Variant: "v", Seed: 1, TrialID: "t"}})
			return err
		}},
		{"Trials", func() error { _, err := st.Trials(ctx, "s"); return err }},
		{"EachTrial", func() error {
			return st.EachTrial(ctx, "s", record.TrialSelect{Arm: "a"}, func(record.Trial) error { return nil })
		}},
		{"Trial", func() error { _, _, err := st.Trial(ctx, "t"); return err }},
		{"SweepTrial", func() error { _, _, err := st.SweepTrial(ctx, "s", key); return err }},
		{"ModelCalls", func() error { _, err := st.ModelCalls(ctx, "s", "t"); return err }},
		{"Usage", func() error {
			_, err := st.Usage(ctx, record.UsageSelect{Agent: "llm:m'1:", AgentPrefix: true, Scenarios: []string{"s1", `it's`}, Limit: 50})
			return err
		}},
		{"Cells", func() error { _, err := st.Cells(ctx, "s"); return err }},
		{"CaseFaults", func() error { _, err := st.CaseFaults(ctx, "s"); return err }},
		{"Sweeps", func() error { _, err := st.Sweeps(ctx, 5); return err }},
		{"Sweep", func() error {
			if _, err := st.Sweep(ctx, "s"); !errors.Is(err, record.ErrNotFound) {
				return fmt.Errorf("want ErrNotFound (no canned row), got %v", err)
			}
			return nil
		}},
		{"PutJudgement", func() error {
			return st.PutJudgement(ctx, record.Judgement{SweepID: "s", TrialID: "t", ErrorDetection: 4, RetryDecision: 4, BackoffBehavior: 4,
				EscalationCorrectness: 4, ContextPreservation: 4, Aggregate: 4, Recommendation: record.RecommendPass})
		}},
		{"PutCachedJudgement", func() error { return st.PutCachedJudgement(ctx, judgeKey, "{}") }},
		{"EnqueueReview", func() error {
			return st.EnqueueReview(ctx, record.ReviewItem{SweepID: "s", TrialID: "t", Reason: "r"})
		}},
		{"Judgements", func() error { _, err := st.Judgements(ctx, "s"); return err }},
		{"CachedJudgement", func() error { _, _, err := st.CachedJudgement(ctx, judgeKey); return err }},
		{"ReviewQueue", func() error { _, err := st.ReviewQueue(ctx, "s"); return err }},
	}
	var got strings.Builder
	for _, s := range steps {
		from := len(fc.log)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		fmt.Fprintf(&got, "=== %s\n", s.name)
		for _, c := range fc.log[from:] {
			if c.kind == "batch" || c.kind == "batch-aborted" {
				fmt.Fprintf(&got, "--- %s, %d rows\n%s\n", c.kind, len(c.rows), c.sql)
			} else {
				fmt.Fprintf(&got, "--- %s\n%s\n", c.kind, c.sql)
			}
		}
	}
	compareGolden(t, filepath.Join("testdata", "server_sql.golden"), got.String())

	// Every batch carries one value per column, and a trial and its calls
	// share their version (the last column), in UTC.
	var versions []time.Time
	for _, c := range fc.log {
		if c.kind != "batch" {
			continue
		}
		cols := strings.Count(c.sql[strings.Index(c.sql, "("):], ",") + 1
		for _, r := range c.rows {
			if len(r) != cols {
				t.Fatalf("%d values for %d columns: %s", len(r), cols, c.sql)
			}
		}
		if strings.Contains(c.sql, ".trials (") || strings.Contains(c.sql, ".tool_calls (") {
			for _, r := range c.rows {
				versions = append(versions, r[len(r)-1].(time.Time))
			}
		}
	}
	if len(versions) != 2+4 {
		t.Fatalf("WriteTrials sent %d rows, want 2 trials and 4 calls", len(versions))
	}
	for _, v := range versions {
		if !v.Equal(versions[0]) || v.Location() != time.UTC {
			t.Fatalf("written_at %v vs %v", v, versions[0])
		}
	}
}

var judgeKey = record.JudgeCacheKey{Scenario: "sc", TraceHash: "h", JudgeModel: "m", JudgePromptHash: "p"}

func makeTrials(sweep string, n, callsPer int) ([]record.Trial, []record.ToolCall) {
	var trials []record.Trial
	var calls []record.ToolCall
	yes := true
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-t%02d", sweep, i)
		trials = append(trials, record.Trial{
			SweepID: sweep, TrialID: id, Scenario: "sc", ScenarioHash: "h", Variant: "v1", Arm: "a",
			Agent: "careful", Seed: uint64(i), FaultClasses: []string{"transient"}, Recovered: &yes,
			ToolCalls: uint32(callsPer), Weight: 1, ActivityAttempt: 1, Claim: `{"ok":true}`,
		})
		for c := 0; c < callsPer; c++ {
			calls = append(calls, record.ToolCall{
				SweepID: sweep, TrialID: id, CallIndex: uint32(c), Tool: "refund", Args: `{"id":1}`,
				Effect: "write", OK: c > 0, Result: `{"status":"ok"}`,
			})
		}
	}
	return trials, calls
}

// TestMigrateOnCluster: Migrate on a cluster sends storage's cluster schema
// (storage/testdata/cluster_ddl.golden, which storage's own test derives from
// the migrations) through the server transport, statement by statement.
func TestMigrateOnCluster(t *testing.T) {
	fc := newFakeConn()
	dialFake(t, fc)
	st, err := storage.Open(context.Background(), storage.Config{DSN: "clickhouse://h:9000/rebound", Cluster: storage.Cluster{Name: "rb_cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var execs []string
	for _, s := range fc.log {
		if s.kind == "exec" {
			execs = append(execs, s.sql)
		}
	}
	want, err := os.ReadFile(filepath.Join("..", "testdata", "cluster_ddl.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(execs, ";\n\n") + ";\n"; got != string(want) {
		t.Fatalf("Migrate on a cluster sent %d DDL statements that differ from storage/testdata/cluster_ddl.golden:\n%s", len(execs), got)
	}
}

func TestInsertSettings(t *testing.T) {
	fc := newFakeConn()
	dialFake(t, fc)
	for _, tc := range []struct {
		name string
		opts storage.ServerOptions
		n    int
		want clickhouse.Settings
	}{
		{"single node, big", storage.ServerOptions{}, asyncInsertBelow, clickhouse.Settings{}},
		{"single node, small", storage.ServerOptions{}, 1, clickhouse.Settings{"async_insert": 1, "wait_for_async_insert": 1}},
		{"cluster, big", storage.ServerOptions{DistributedSync: true}, asyncInsertBelow, clickhouse.Settings{"insert_distributed_sync": 1}},
		{"cluster, small", storage.ServerOptions{DistributedSync: true}, asyncInsertBelow - 1,
			clickhouse.Settings{"async_insert": 1, "wait_for_async_insert": 1, "insert_distributed_sync": 1}},
	} {
		tr, _, err := open(context.Background(), "clickhouse://h:9000", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.(*transport).insertSettings(tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: insert settings %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A row that does not match the column list aborts the batch: nothing is
// sent, and the pooled connection is released.
func TestInsertAbortsOnBadRow(t *testing.T) {
	fc := newFakeConn()
	tr := &transport{conn: fc}
	err := tr.Insert(context.Background(), "INSERT INTO `rb`.t (a, b)", []string{"a", "b"}, [][]any{{"x", "y"}, {"z"}})
	if err == nil || !strings.Contains(err.Error(), "1 values for 2 columns") {
		t.Fatalf("err = %v", err)
	}
	if len(fc.log) != 1 || fc.log[0].kind != "batch-aborted" {
		t.Fatalf("sent %+v", fc.log)
	}
}

func TestServerParamsAreEscaped(t *testing.T) {
	p := serverParams(map[string]string{"a": "x\ty\\z\n'q'", "b": "plain"})
	if p["a"] != `x\ty\\z\n'q'` || p["b"] != "plain" {
		t.Fatalf("%q", p)
	}
}

// A read-only store dials with readonly=1, and the server's READONLY
// refusal reaches the caller as storage.ErrReadOnly with the server's
// exception inside.
func TestReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	fc := newFakeConn()
	opts := dialFake(t, fc)
	exception := &clickhouse.Exception{Code: 164, Name: "DB::Exception", Message: "Cannot execute query in readonly mode"}
	fc.queryErr = fmt.Errorf("read: %w", exception)
	fc.selects["SELECT formatQuerySingleLine({q:String}) AS q"] = []map[string]any{{"q": "INSERT INTO t VALUES (1)"}}
	st, err := storage.Open(ctx, storage.Config{DSN: "clickhouse://h:9000/rb?readonly=0", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if opts.Settings["readonly"] != 1 {
		t.Fatalf("dialed with settings %v, want readonly=1", opts.Settings)
	}
	_, err = st.Query(ctx, "INSERT INTO t VALUES (1)")
	var ex *clickhouse.Exception
	if !errors.Is(err, storage.ErrReadOnly) || !errors.As(err, &ex) || ex.Code != 164 {
		t.Fatalf("err = %v, want storage.ErrReadOnly wrapping the server's exception", err)
	}
	// Another exception is a failure, not a refusal.
	fc.queryErr = &clickhouse.Exception{Code: 62, Message: "Syntax error"}
	if _, err = st.Query(ctx, "INSERT INTO t VALUES (1)"); err == nil || errors.Is(err, storage.ErrReadOnly) || !errors.As(err, &ex) {
		t.Fatalf("err = %v", err)
	}
}

func TestEngineErrorKeepsTheException(t *testing.T) {
	if engineError(nil) != nil {
		t.Fatal("nil error wrapped")
	}
	plain := errors.New("dial tcp: refused")
	if engineError(plain) != plain {
		t.Fatal("an error without an exception wrapped")
	}
	ex := &clickhouse.Exception{Code: 164, Message: "readonly"}
	err := engineError(fmt.Errorf("send: %w", ex))
	var ee *storage.EngineError
	var back *clickhouse.Exception
	if !errors.As(err, &ee) || ee.Code != 164 || !errors.As(err, &back) || back != ex || err.Error() != "send: "+ex.Error() {
		t.Fatalf("engineError = %#v", err)
	}
	if !storage.IsReadOnlyRefusal(err) {
		t.Fatal("IsReadOnlyRefusal does not see the server's READONLY")
	}
}

// A server that does not answer the ping: the pool is closed, the error
// names the server without the password.
func TestOpenPingFails(t *testing.T) {
	fc := newFakeConn()
	fc.pingErr = errors.New("dial tcp 10.0.0.1:9000: connection refused")
	dialFake(t, fc)
	_, err := storage.Open(context.Background(), storage.Config{DSN: "clickhouse://u:s3cret@10.0.0.1:9000/rb"})
	if err == nil || !strings.Contains(err.Error(), "connect to ClickHouse clickhouse://u:xxxxx@10.0.0.1:9000/rb") || !errors.Is(err, fc.pingErr) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") || !fc.closed {
		t.Fatalf("leaks the password or leaves the pool open: %v, closed %t", err, fc.closed)
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s differs at line %d:\n got %q\nwant %q\n(run with -update after checking the change)", path, i+1, g, w)
		}
	}
}

// A server older than MinServerVersion is refused on connect with an error
// naming both versions, not left to fail on the schema; a newer one, or
// one whose version has more parts, is taken.
func TestServerVersionChecked(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"18.16.1", false},
		{"23.9.6.20", false},
		{"23.10.1.1", true},
		{"24.3.2.23", true},
		{"26.5.1.1", true},
		{"100.0", true},
		{"v23", false},
	} {
		fc := newFakeConn()
		fc.selects[versionSQL] = []map[string]any{{"v": tc.version}}
		dialFake(t, fc)
		st, err := storage.Open(context.Background(), storage.Config{DSN: "clickhouse://u:s3cret@10.0.0.1:9000/rb"})
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.version, err)
				continue
			}
			st.Close()
			continue
		}
		if err == nil {
			st.Close()
			t.Errorf("%s: accepted", tc.version)
			continue
		}
		if !strings.Contains(err.Error(), tc.version) || strings.Contains(err.Error(), "s3cret") || !fc.closed {
			t.Errorf("%s: %v (closed %t)", tc.version, err, fc.closed)
		}
		if tc.version != "v23" && !strings.Contains(err.Error(), "23.10 or newer") {
			t.Errorf("%s: the error does not name the minimum: %v", tc.version, err)
		}
	}
}
