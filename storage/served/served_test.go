package served_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	_ "rebound/storage/clickhouseserver"
	"rebound/storage/served"
)

// One chDB session per process: TestMain opens the store as the worker
// does, seeds it, and serves it; the tests read it over HTTP.
var fx struct {
	st      storage.Store // the holding process's store (writable)
	srv     *served.Server
	dataDir string
	chdbDir string // the engine's data dir
	lib     string // libchdb.so
	secret  string
	err     error // why the fixture is missing
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		lib, unavailable := devstacktest.ChDBLibForMain()
		if unavailable != nil {
			fx.err = unavailable
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "rebound-served-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Setenv("REBOUND_KEY_DIR", filepath.Join(dir, "keys"))
		fx.dataDir = filepath.Join(dir, "data")
		fx.chdbDir, fx.lib = filepath.Join(fx.dataDir, "chdb"), lib
		ctx := context.Background()
		st, err := storage.Open(ctx, storage.Config{DataDir: fx.chdbDir, LibPath: lib})
		if err != nil {
			fx.err = err
			return m.Run()
		}
		defer st.Close()
		fx.st = st
		if fx.err = seed(ctx, st); fx.err != nil {
			return m.Run()
		}
		door, err := storage.NewDoor(ctx, st, storage.Limits{})
		if err != nil {
			fx.err = err
			return m.Run()
		}
		srv, err := served.Serve(door, served.Options{DataDir: fx.dataDir})
		if err != nil {
			fx.err = err
			return m.Run()
		}
		fx.srv = srv
		defer srv.Close(context.Background())
		fx.secret, fx.err = served.Credential(fx.dataDir)
		return m.Run()
	}()
	os.Exit(code)
}

func need(t testing.TB) {
	t.Helper()
	devstacktest.Unavailable(t, fx.err)
	if fx.err != nil {
		t.Fatal(fx.err)
	}
}

const (
	sweepA = "quickstart-20261101-090000-aaaaaa"
	sweepB = "quickstart-20261120-090000-bbbbbb"
)

func bp(b bool) *bool { return &b }

// seed writes two sweeps of a few cases each, with tool calls, a model
// call, a judgement and a review item: something for every read.
func seed(ctx context.Context, st storage.Store) error {
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	created := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i, id := range []string{sweepA, sweepB} {
		sw := record.Sweep{SweepID: id, Name: "quickstart", TrialsPlanned: 16, Arms: []string{"careful", "naive"}, Status: sweepstatus.Completed, CreatedAt: created.Add(time.Duration(i) * time.Hour)}
		if err := st.PutSweep(ctx, sw); err != nil {
			return err
		}
	}
	var trials []record.Trial
	var calls []record.ToolCall
	for _, sweep := range []string{sweepA, sweepB} {
		for _, arm := range []string{"careful", "naive"} {
			for _, scen := range []string{"s1", "s2"} {
				for seed := uint64(1); seed <= 4; seed++ {
					id := fmt.Sprintf("%s/%s/%s/%d", sweep, arm, scen, seed)
					tr := record.Trial{
						SweepID: sweep, TrialID: id, Scenario: scen, Variant: "v1", Arm: arm, Agent: arm, Seed: seed,
						FaultClasses: []string{"transient"}, Weight: 2, ToolCalls: 1, Recoverable: true,
						Recovered:           bp((seed+uint64(len(arm))+uint64(len(sweep)))%3 != 0),
						DuplicateSideEffect: bp(arm == "naive" && seed == 2),
						UnsafeAction:        bp(false),
					}
					trials = append(trials, tr)
					calls = append(calls, record.ToolCall{SweepID: sweep, TrialID: id, CallIndex: 0, Tool: "get_order", Args: `{"id":"o-1"}`, Effect: "read", FaultClass: "transient", OK: seed%2 == 0, Result: `{"ok":true}`})
				}
			}
		}
	}
	if err := st.WriteTrials(ctx, trials, calls); err != nil {
		return err
	}
	t0 := trials[0]
	if err := st.PutModelCall(ctx, record.ModelCall{SweepID: t0.SweepID, TrialID: t0.TrialID, Step: 1, Kind: "turn", RequestHash: "h", Response: `{"choices":[]}`, PromptTokens: 10, CompletionTokens: 5}); err != nil {
		return err
	}
	// Step 1 answered, step 2 sent and lost; an answer of a trial not
	// stored: Spend reads all three kinds.
	for _, r := range []record.ModelRequest{
		{SweepID: t0.SweepID, TrialID: t0.TrialID, Step: 1, Kind: "turn", RequestHash: "h", PromptTokensBound: 900, MaxTokens: 64, CompletionTokensBound: 64, InputUSDPerMTok: 1, OutputUSDPerMTok: 4},
		{SweepID: t0.SweepID, TrialID: t0.TrialID, Step: 2, Kind: "turn", RequestHash: "h2", PromptTokensBound: 1200, CompletionTokensBound: 4096, InputUSDPerMTok: 1, OutputUSDPerMTok: 4},
		{SweepID: t0.SweepID, TrialID: "unstored", Step: 1, Kind: "turn", RequestHash: "h", PromptTokensBound: 900, MaxTokens: 64, CompletionTokensBound: 64, InputUSDPerMTok: 1, OutputUSDPerMTok: 4},
	} {
		if err := st.PutModelRequest(ctx, r); err != nil {
			return err
		}
	}
	if err := st.PutModelCall(ctx, record.ModelCall{SweepID: t0.SweepID, TrialID: "unstored", Step: 1, Kind: "turn", RequestHash: "h", Response: `{"choices":[]}`, PromptTokens: 20, CompletionTokens: 7}); err != nil {
		return err
	}
	if err := st.PutJudgement(ctx, record.Judgement{SweepID: t0.SweepID, TrialID: t0.TrialID, Scenario: t0.Scenario, ErrorDetection: 4, RetryDecision: 3, BackoffBehavior: 5, EscalationCorrectness: 4, ContextPreservation: 4, Aggregate: 4, Recommendation: record.RecommendPass}); err != nil {
		return err
	}
	return st.EnqueueReview(ctx, record.ReviewItem{SweepID: t0.SweepID, TrialID: trials[1].TrialID, Reason: "judge output unparseable"})
}

// client opens the served store the way read commands do: clickhouse-go
// over HTTP, read-only, the door at the server.
func client(t *testing.T) storage.Store {
	t.Helper()
	ep, found, err := served.Find(fx.dataDir)
	if err != nil || !found {
		t.Fatalf("Find: %+v %t %v", ep, found, err)
	}
	st, err := storage.Open(context.Background(), storage.Config{DSN: ep.DSN(fx.secret), ReadOnly: true, DoorAtServer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Every read the store makes returns over HTTP, through clickhouse-go and
// the door, exactly what it returns in process.
func TestEveryReadThroughTheServerTransport(t *testing.T) {
	need(t)
	ctx := context.Background()
	remote := client(t)
	local := fx.st
	first := sweepA + "/careful/s1/1"
	reads := []read{
		{"Sweep", func(st storage.Store) (any, error) { return st.Sweep(ctx, sweepA) }},
		{"Sweeps", func(st storage.Store) (any, error) { return st.Sweeps(ctx, 0) }},
		{"CountTrials", func(st storage.Store) (any, error) { return st.CountTrials(ctx, sweepB) }},
		{"Trials", func(st storage.Store) (any, error) { return st.Trials(ctx, sweepA) }},
		{"EachTrial", func(st storage.Store) (any, error) {
			var ids []string
			err := st.EachTrial(ctx, sweepB, record.TrialSelect{Arm: "naive"}, func(tr record.Trial) error { ids = append(ids, tr.TrialID); return nil })
			return ids, err
		}},
		{"Trial", func(st storage.Store) (any, error) {
			tr, calls, err := st.Trial(ctx, first)
			return []any{tr, calls}, err
		}},
		{"StoredTrials", func(st storage.Store) (any, error) {
			return st.StoredTrials(ctx, sweepA, []storage.TrialKey{{Arm: "careful", Scenario: "s1", Variant: "v1", Seed: 1, TrialID: first}, {Arm: "careful", Scenario: "s1", Variant: "v1", Seed: 2, TrialID: "nope"}})
		}},
		{"ModelCalls", func(st storage.Store) (any, error) { return st.ModelCalls(ctx, sweepA, first) }},
		{"Cells", func(st storage.Store) (any, error) { return st.Cells(ctx, sweepA) }},
		{"CaseFaults", func(st storage.Store) (any, error) { return st.CaseFaults(ctx, sweepA) }},
		{"ReportTotals", func(st storage.Store) (any, error) { return st.ReportTotals(ctx, sweepB, "none") }},
		{"CompareTotals", func(st storage.Store) (any, error) {
			return st.CompareTotals(ctx, record.CompareSide{SweepID: sweepA, Arm: "careful"}, record.CompareSide{SweepID: sweepB, Arm: "naive"}, true, "none")
		}},
		{"Judgements", func(st storage.Store) (any, error) { return st.Judgements(ctx, sweepA) }},
		{"ReviewQueue", func(st storage.Store) (any, error) { return st.ReviewQueue(ctx, sweepA) }},
		{"Spend", func(st storage.Store) (any, error) {
			sp, err := st.Spend(ctx, sweepA)
			if err == nil && (sp.RequestsSent != 3 || sp.RequestsLost != 1 || sp.RequestsLostWithoutMaxTokens != 1) {
				err = fmt.Errorf("spend %+v: want 3 sends, 1 lost without max_tokens", sp)
			}
			return sp, err
		}},
		{"Usage", func(st storage.Store) (any, error) {
			return st.Usage(ctx, record.UsageSelect{Agent: "careful", Limit: 10})
		}},
		{"CachedJudgement", func(st storage.Store) (any, error) {
			out, found, err := st.CachedJudgement(ctx, record.JudgeCacheKey{Scenario: "s1", JudgeModel: "m", JudgePromptHash: "p", TraceHash: "t"})
			return []any{out, found}, err
		}},
	}
	sameReads(t, reads, local, remote)
	// A write through the served store is refused: writes stay in the
	// holding process.
	err := remote.PutSweep(ctx, record.Sweep{SweepID: "x", Status: sweepstatus.Running})
	if err == nil {
		t.Fatal("a write through the served store succeeded")
	}
}

// normalize compares times as instants (the two transports give them
// different locations).
// sameReads runs every read in process (local) and through the served
// store (remote) and requires the same results.
func sameReads(t *testing.T, reads []read, local, remote storage.Store) {
	t.Helper()
	for _, r := range reads {
		want, err := r.do(local)
		if err != nil {
			t.Fatalf("%s in process: %v", r.name, err)
		}
		got, err := r.do(remote)
		if err != nil {
			t.Errorf("%s served: %v", r.name, err)
			continue
		}
		if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
			t.Errorf("%s: served\n%v\nin process\n%v", r.name, got, want)
		}
	}
}

func normalize(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rebound sql's door, at the server: what it runs and what it refuses,
// with the same errors as in process.
func TestSQLDoorAtTheServer(t *testing.T) {
	need(t)
	ctx := context.Background()
	remote := client(t)
	tab, err := remote.Query(ctx, "SELECT arm, count() AS n FROM rebound.trials FINAL WHERE sweep_id = '"+sweepA+"' GROUP BY arm ORDER BY arm")
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 2 || fmt.Sprint(tab.Rows[0]) != "[careful 8]" {
		t.Fatalf("rows %v", tab.Rows)
	}
	// Unqualified names are rebound's tables, as in rebound sql.
	if _, err := remote.Query(ctx, "SELECT count() FROM trials"); err != nil {
		t.Fatalf("unqualified: %v", err)
	}
	for _, tc := range []struct {
		sql  string
		want error
	}{
		{"SELECT * FROM file('/etc/passwd')", storage.ErrRefused},
		{"SELECT * FROM system.users", storage.ErrRefused},
		{"SELECT name FROM system.tables", storage.ErrRefused},
		{"INSERT INTO rebound.sweeps (sweep_id) VALUES ('x')", storage.ErrRefused},
		{"SELECT 1 SETTINGS readonly = 0", storage.ErrRefused},
		{"SET readonly = 0", storage.ErrRefused},
		{"DROP TABLE rebound.trials", storage.ErrRefused},
		{"SELECT 1; SELECT 2", storage.ErrStatement},
		{"SELECT 1 INTO OUTFILE '/tmp/x'", storage.ErrStatement},
		{"SELECT hostName()", storage.ErrRefused},
		{"SELECT count() FROM rebound.trials FORMAT Template", storage.ErrRefused},
	} {
		_, err := remote.Query(ctx, tc.sql)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.sql, err, tc.want)
		}
	}
	// The limits hold: a result bigger than max_result_rows.
	if _, err := remote.Query(ctx, "SELECT arrayJoin(range(1500000)) AS x"); !errors.Is(err, storage.ErrLimit) {
		t.Errorf("a result over the limits: %v", err)
	}
}

// slowSQL runs for seconds (a billion-row cross join) in little memory;
// bigSQL holds one 24 MB array.
const (
	slowSQL = "SELECT count() FROM (SELECT arrayJoin(range(20000)) AS a) AS x CROSS JOIN (SELECT arrayJoin(range(100000)) AS b) AS y WHERE a + b > 7"
	bigSQL  = "SELECT length(groupArray(x)) AS n FROM (SELECT arrayJoin(range(3000000)) AS x)"
)

// rebound sql's --timeout and --max-memory apply at the served store as
// in process: the client store sends its limits with every query, and the
// door runs the statement under them when they are lower than its own.
func TestSQLLimitsAtTheServer(t *testing.T) {
	need(t)
	ctx := context.Background()
	open := func(l storage.Limits) storage.Store {
		ep, _, err := served.Find(fx.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := storage.Open(ctx, storage.Config{DSN: ep.DSN(fx.secret), ReadOnly: true, DoorAtServer: true, Limits: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	code := func(err error) int {
		var ee *storage.EngineError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 0
	}
	// --timeout 1s: the statement stops at the engine's TIMEOUT_EXCEEDED,
	// long before the door's own 60 s.
	start := time.Now()
	_, err := open(storage.Limits{MaxExecutionTime: time.Second}).Query(ctx, slowSQL)
	took := time.Since(start)
	if !errors.Is(err, storage.ErrLimit) || code(err) != 159 || took > 20*time.Second {
		t.Errorf("--timeout 1s through the served store: after %v: %v (code %d), want TIMEOUT_EXCEEDED (159)", took, err, code(err))
	}
	// --max-memory 8MiB: MEMORY_LIMIT_EXCEEDED on a statement the door's
	// own 4 GiB runs.
	low := open(storage.Limits{MaxMemoryBytes: 8 << 20})
	if _, err := low.Query(ctx, bigSQL); !errors.Is(err, storage.ErrLimit) || code(err) != 241 {
		t.Errorf("--max-memory 8MiB through the served store: %v (code %d), want MEMORY_LIMIT_EXCEEDED (241)", err, code(err))
	}
	tab, err := open(storage.Limits{}).Query(ctx, bigSQL)
	if err != nil || len(tab.Rows) != 1 || fmt.Sprint(tab.Rows[0][0]) != "3000000" {
		t.Errorf("the same statement within the default limits: %v %v", tab.Rows, err)
	}
	// --max-rows 10: the client's row limit, counted at the server.
	if _, err := open(storage.Limits{MaxResultRows: 10}).Query(ctx, "SELECT arrayJoin(range(11)) AS x"); !errors.Is(err, storage.ErrLimit) {
		t.Errorf("--max-rows 10 through the served store: %v", err)
	}
	// A limit that is not a number is the client's mistake. (That a client
	// cannot raise the door's limits: storage's TestDoorLimitsFor, and
	// TestHTTPInterface for max_result_rows.)
	u := url.Values{"default_format": {"TSV"}}
	u.Set("max_execution_time", "soon")
	if resp, body := post(t, "/", u, "SELECT 1", map[string]string{"Authorization": "Basic " + basicAuth(served.User, fx.secret)}); resp.StatusCode != 400 {
		t.Errorf("max_execution_time=soon: %d %q", resp.StatusCode, body)
	}
}

// post sends one request to the served store.
func post(t *testing.T, path string, params url.Values, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	u := "http://" + fx.srv.Endpoint().Address + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	method := http.MethodPost
	var rd io.Reader = strings.NewReader(body)
	if body == "" {
		method, rd = http.MethodGet, nil
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// ClickHouse's HTTP interface, as clients use it: the three ways to send
// the credential, query parameters, default_format and FORMAT, the
// X-ClickHouse-* headers, exceptions, /ping, gzip.
func TestHTTPInterface(t *testing.T) {
	need(t)
	q := "SELECT count() AS n FROM rebound.trials FINAL WHERE sweep_id = {s:String}"
	basic := map[string]string{"Authorization": "Basic " + basicAuth(served.User, fx.secret)}
	for name, tc := range map[string]struct {
		params url.Values
		hdr    map[string]string
	}{
		"basic auth": {url.Values{"param_s": {sweepA}, "default_format": {"JSONEachRow"}}, basic},
		"headers":    {url.Values{"param_s": {sweepA}, "default_format": {"JSONEachRow"}}, map[string]string{"X-ClickHouse-User": served.User, "X-ClickHouse-Key": fx.secret}},
		"params":     {url.Values{"param_s": {sweepA}, "default_format": {"JSONEachRow"}, "user": {served.User}, "password": {fx.secret}}, nil},
	} {
		resp, body := post(t, "/", tc.params, q, tc.hdr)
		if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"n":"16"}` {
			t.Errorf("%s: %d %q", name, resp.StatusCode, body)
			continue
		}
		for _, h := range []string{"X-ClickHouse-Query-Id", "X-ClickHouse-Format", "X-ClickHouse-Summary", "X-ClickHouse-Timezone"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s: no %s", name, h)
			}
		}
		var sum map[string]string
		if err := json.Unmarshal([]byte(resp.Header.Get("X-ClickHouse-Summary")), &sum); err != nil || sum["read_rows"] == "" || sum["read_rows"] == "0" {
			t.Errorf("%s: summary %q (%v)", name, resp.Header.Get("X-ClickHouse-Summary"), err)
		}
	}
	// GET with the statement in the URL, FORMAT in the statement, the
	// query id given by the client echoed.
	resp, body := post(t, "/", url.Values{"query": {"SELECT arm FROM rebound.trials FINAL WHERE sweep_id = '" + sweepA + "' GROUP BY arm ORDER BY arm FORMAT TSV"}, "query_id": {"my-query"}}, "", basic)
	if resp.StatusCode != 200 || body != "careful\nnaive\n" || resp.Header.Get("X-ClickHouse-Query-Id") != "my-query" || resp.Header.Get("X-ClickHouse-Format") != "TSV" {
		t.Errorf("GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// Without the credential, or with another: AUTHENTICATION_FAILED.
	for name, hdr := range map[string]map[string]string{
		"none":       nil,
		"wrong key":  {"X-ClickHouse-User": served.User, "X-ClickHouse-Key": strings.Repeat("0", 64)},
		"wrong user": {"Authorization": "Basic " + basicAuth("default", fx.secret)},
	} {
		resp, body := post(t, "/", nil, "SELECT 1", hdr)
		if resp.StatusCode != 403 || resp.Header.Get("X-ClickHouse-Exception-Code") != "516" || !strings.HasPrefix(body, "Code: 516.") {
			t.Errorf("%s: %d %s %q", name, resp.StatusCode, resp.Header.Get("X-ClickHouse-Exception-Code"), body)
		}
	}
	// A refusal: the code in the header and the body.
	resp, body = post(t, "/", nil, "SELECT * FROM system.users", basic)
	if resp.StatusCode != 403 || resp.Header.Get("X-ClickHouse-Exception-Code") != "497" || !strings.HasPrefix(body, "Code: 497. DB::Exception: ") {
		t.Errorf("refusal: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	// An Identifier parameter is checked as the name it holds.
	resp, body = post(t, "/", url.Values{"param_t": {"system.users"}}, "SELECT * FROM {t:Identifier}", basic)
	if resp.StatusCode != 403 {
		t.Errorf("identifier parameter naming system.users: %d %q", resp.StatusCode, body)
	}
	resp, body = post(t, "/", url.Values{"param_t": {"sweeps"}}, "SELECT count() FROM {t:Identifier} FINAL", basic)
	if resp.StatusCode != 200 || body != "2\n" {
		t.Errorf("identifier parameter naming sweeps: %d %q", resp.StatusCode, body)
	}
	// Rows are counted in every format that shows them, whatever computed
	// them.
	for _, f := range []string{"TSV", "CSVWithNames", "JSONEachRow", "JSON", "JSONCompact", "Native"} {
		resp, _ := post(t, "/", url.Values{"default_format": {f}}, "SELECT arrayJoin(range(1000001)) AS x", basic)
		if resp.StatusCode == 200 || resp.Header.Get("X-ClickHouse-Exception-Code") != "396" {
			t.Errorf("%s: 1,000,001 rows answered: %d %s", f, resp.StatusCode, resp.Header.Get("X-ClickHouse-Exception-Code"))
		}
		resp, _ = post(t, "/", url.Values{"default_format": {f}}, "SELECT arrayJoin(range(1000000)) AS x", basic)
		if resp.StatusCode != 200 {
			t.Errorf("%s: 1,000,000 rows refused: %d", f, resp.StatusCode)
		}
	}
	// Settings a client sends do not lift the door's.
	resp, body = post(t, "/", url.Values{"readonly": {"0"}, "max_result_rows": {"100000000"}}, "SELECT arrayJoin(range(1500000))", basic)
	if resp.StatusCode == 200 {
		t.Errorf("a client's max_result_rows lifted the door's: %q", body[:min(len(body), 80)])
	}
	// /ping, and GET / without a statement, answer Ok. without credentials.
	for _, p := range []string{"/ping", "/"} {
		resp, body := post(t, p, nil, "", nil)
		if p == "/" {
			resp, body = post(t, p, nil, "", basic)
		}
		if resp.StatusCode != 200 || body != "Ok.\n" {
			t.Errorf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
	// gzip when asked.
	req, _ := http.NewRequest(http.MethodPost, "http://"+fx.srv.Endpoint().Address+"/?enable_http_compression=1", strings.NewReader("SELECT 42"))
	req.SetBasicAuth(served.User, fx.secret)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	gresp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer gresp.Body.Close()
	zr, err := gzip.NewReader(gresp.Body)
	if err != nil || gresp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip: %v %v", err, gresp.Header)
	}
	if b, _ := io.ReadAll(zr); string(b) != "42\n" {
		t.Errorf("gzip body %q", b)
	}
}

func basicAuth(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// curl reads it as a ClickHouse server: FORMAT JSONEachRow.
func TestCurl(t *testing.T) {
	need(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		if devstacktest.Required() {
			t.Fatal("curl is not installed")
		}
		t.Skip("curl is not installed")
	}
	out, err := exec.Command(curl, "-sS", "--fail-with-body", "-u", served.User+":"+fx.secret,
		"http://"+fx.srv.Endpoint().Address+"/",
		"--data-binary", "SELECT arm, count() AS trials FROM rebound.trials FINAL WHERE sweep_id = '"+sweepB+"' GROUP BY arm ORDER BY arm FORMAT JSONEachRow").CombinedOutput()
	if err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	want := "{\"arm\":\"careful\",\"trials\":\"8\"}\n{\"arm\":\"naive\",\"trials\":\"8\"}\n"
	if string(out) != want {
		t.Fatalf("curl printed %q, want %q", out, want)
	}
}

// Where it listens is in served.json while it serves; a file naming a
// process that is gone is stale; only loopback addresses are taken.
func TestEndpointFile(t *testing.T) {
	need(t)
	ep, found, err := served.Find(fx.dataDir)
	if err != nil || !found || ep.PID != os.Getpid() || !strings.HasPrefix(ep.Address, "127.0.0.1:") || ep.Database != "rebound" {
		t.Fatalf("Find: %+v %t %v", ep, found, err)
	}
	b, err := os.ReadFile(filepath.Join(fx.dataDir, served.File))
	if err != nil || bytes.Contains(b, []byte(fx.secret)) {
		t.Fatalf("served.json holds the credential, or is missing: %v", err)
	}
	// The credential is outside the data dir, mode 0600.
	keyFiles, _ := filepath.Glob(filepath.Join(os.Getenv("REBOUND_KEY_DIR"), "*"+".served"))
	if len(keyFiles) != 1 {
		t.Fatalf("credential files %v", keyFiles)
	}
	if st, err := os.Stat(keyFiles[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credential file mode: %v %v", st, err)
	}
	// A stale file: a pid that is gone.
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf(`{"address":"127.0.0.1:1","pid":%d,"database":"rebound","user":"rebound"}`, cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(dir, served.File), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, found, err := served.Find(dir); found || !errors.Is(err, served.ErrStale) {
		t.Fatalf("stale file: found %t, %v", found, err)
	}
	if _, found, err := served.Find(t.TempDir()); found || err != nil {
		t.Fatalf("no file: found %t, %v", found, err)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "[::]:0"} {
		if _, err := served.Serve(nil, served.Options{DataDir: t.TempDir(), Addr: addr}); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Serve on %s: %v", addr, err)
		}
	}
}
