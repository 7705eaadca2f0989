package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"rebound/core/outcome"
	"rebound/results/record"
)

// Unit tests: no engine needed.

func TestRedactDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"clickhouse://user:s3cret@host:9000/rebound", "clickhouse://user:xxxxx@host:9000/rebound"},
		{"clickhouse://user@host:9000", "clickhouse://user@host:9000"},
		{"clickhouse://host:9000/db?dial_timeout=5s", "clickhouse://host:9000/db?dial_timeout=5s"},
		{"clickhouse://host:9000/db?username=u&password=s3cret", "clickhouse://host:9000/db?password=xxxxx&username=u"},
		{"clickhouse://u:p%40ss%2Fw@h:9000/db", "clickhouse://u:xxxxx@h:9000/db"},
		{"clickhouse://h:9000/?http_proxy=http%3A%2F%2Fpu%3Aproxypw%40proxy%3A3128", "clickhouse://h:9000/?http_proxy=http%3A%2F%2Fpu%3Axxxxx%40proxy%3A3128"},
		// Unparseable (an unescaped '/' in the password): nothing but the scheme survives.
		{"clickhouse://user:pa/ss:w@host:9000/db", "clickhouse://xxxxx"},
		{"::not a url s3cret", "xxxxx"},
	}
	for _, c := range cases {
		got := RedactDSN(c.in)
		if got != c.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, secret := range []string{"s3cret", "p%40ss", "proxypw", "pa/ss"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactDSN(%q) leaks %q: %q", c.in, secret, got)
			}
		}
	}
}

// ddlColumns extracts the column names of a CREATE TABLE statement.
func ddlColumns(ddl string) []string {
	body := ddl[strings.Index(ddl, "(")+1 : strings.Index(ddl, "\n)")]
	var cols []string
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "INDEX" {
			continue
		}
		cols = append(cols, f[0])
	}
	return cols
}

// tagNames lists the ch and json tags of a row struct.
func tagNames(v any) (ch, js []string) {
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		ch = append(ch, rt.Field(i).Tag.Get("ch"))
		js = append(js, rt.Field(i).Tag.Get("json"))
	}
	return ch, js
}

func selectedNames(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c
		if timeCols[c] {
			out[i] = c + "_ms"
		}
	}
	return out
}

var (
	createTableRe = regexp.MustCompile(`^CREATE TABLE IF NOT EXISTS \{\{db\}\}\.(\w+)\n\(`)
	createViewRe  = regexp.MustCompile(`^CREATE (VIEW IF NOT EXISTS|OR REPLACE VIEW) \{\{db\}\}\.\w+ AS\n`)
	addColumnRe   = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) ADD COLUMN IF NOT EXISTS (\w+) [^\n]*?(?: AFTER (\w+)| (FIRST))?$`)
	// A data-skipping index: no column changes; the table and the indexed
	// column must exist.
	addIndexRe         = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) ADD INDEX IF NOT EXISTS \w+ (\w+) TYPE [^\n]+$`)
	materializeIndexRe = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) MATERIALIZE INDEX \w+$`)
	// A column the engine computes (MATERIALIZED): it takes no value from
	// an INSERT, so it is not in the insert column list; materializing it
	// rewrites parts and adds none.
	addMaterializedRe   = regexp.MustCompile(`(?s)^ALTER TABLE \{\{db\}\}\.(\w+) ADD COLUMN IF NOT EXISTS (\w+) \w+ MATERIALIZED .+$`)
	materializeColumnRe = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) MATERIALIZE COLUMN (\w+)$`)
	// A column's type changed in place: the column must exist, and stays
	// where it is.
	modifyColumnRe = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) MODIFY COLUMN (\w+) [^\n]+$`)
)

// schemaColumns replays every migration's DDL and returns each table's
// columns in their final order: a CREATE TABLE gives the initial list, an
// ALTER TABLE ... ADD COLUMN IF NOT EXISTS name Type [AFTER col | FIRST]
// inserts one (at the end without AFTER/FIRST, as ClickHouse does); an
// ALTER that adds or materializes an index changes none. Any other
// statement fails the test, so a new kind of ALTER cannot slip past
// the column-list check. MATERIALIZED columns, which no INSERT names, are
// not in the lists: materializedColumns returns them.
func schemaColumns(t *testing.T) map[string][]string {
	t.Helper()
	tables, _ := replaySchema(t)
	return tables
}

// materializedColumns returns each table's MATERIALIZED columns, as
// replaySchema finds them.
func materializedColumns(t *testing.T) map[string][]string {
	t.Helper()
	_, mat := replaySchema(t)
	return mat
}

func replaySchema(t *testing.T) (tables, materialized map[string][]string) {
	t.Helper()
	tables = map[string][]string{"schema_migrations": ddlColumns(ddlSchemaMigrations)}
	materialized = map[string][]string{}
	for _, m := range migrations {
		for i, q := range m.Statements {
			switch {
			case addMaterializedRe.MatchString(q):
				sm := addMaterializedRe.FindStringSubmatch(q)
				if _, ok := tables[sm[1]]; !ok {
					t.Errorf("migration %d statement %d alters %s before it exists", m.Version, i+1, sm[1])
					continue
				}
				if indexOf(tables[sm[1]], sm[2]) >= 0 || indexOf(materialized[sm[1]], sm[2]) >= 0 {
					t.Errorf("migration %d statement %d adds %s.%s twice", m.Version, i+1, sm[1], sm[2])
					continue
				}
				materialized[sm[1]] = append(materialized[sm[1]], sm[2])
			case materializeColumnRe.MatchString(q):
				sm := materializeColumnRe.FindStringSubmatch(q)
				if indexOf(materialized[sm[1]], sm[2]) < 0 {
					t.Errorf("migration %d statement %d materializes %s.%s, which is not a MATERIALIZED column", m.Version, i+1, sm[1], sm[2])
				}
			case createTableRe.MatchString(q):
				name := createTableRe.FindStringSubmatch(q)[1]
				if _, dup := tables[name]; dup {
					t.Errorf("migration %d statement %d creates %s again", m.Version, i+1, name)
				}
				tables[name] = ddlColumns(q)
			case createViewRe.MatchString(q):
			case addColumnRe.MatchString(q):
				sm := addColumnRe.FindStringSubmatch(q)
				table, col, after, first := sm[1], sm[2], sm[3], sm[4]
				cols, ok := tables[table]
				if !ok {
					t.Errorf("migration %d statement %d alters %s before it exists", m.Version, i+1, table)
					continue
				}
				if indexOf(cols, col) >= 0 {
					t.Errorf("migration %d statement %d adds %s.%s twice", m.Version, i+1, table, col)
					continue
				}
				at := len(cols)
				switch {
				case first != "":
					at = 0
				case after != "":
					if at = indexOf(cols, after) + 1; at == 0 {
						t.Errorf("migration %d statement %d: %s.%s AFTER unknown column %s", m.Version, i+1, table, col, after)
						continue
					}
				}
				tables[table] = append(cols[:at:at], append([]string{col}, cols[at:]...)...)
			case addIndexRe.MatchString(q):
				sm := addIndexRe.FindStringSubmatch(q)
				if indexOf(tables[sm[1]], sm[2]) < 0 {
					t.Errorf("migration %d statement %d indexes %s.%s, which does not exist", m.Version, i+1, sm[1], sm[2])
				}
			case modifyColumnRe.MatchString(q):
				sm := modifyColumnRe.FindStringSubmatch(q)
				if indexOf(tables[sm[1]], sm[2]) < 0 {
					t.Errorf("migration %d statement %d modifies %s.%s, which does not exist", m.Version, i+1, sm[1], sm[2])
				}
			case materializeIndexRe.MatchString(q):
				if _, ok := tables[materializeIndexRe.FindStringSubmatch(q)[1]]; !ok {
					t.Errorf("migration %d statement %d materializes an index of a table that does not exist", m.Version, i+1)
				}
			default:
				t.Errorf("migration %d statement %d is neither an idempotent CREATE nor an ALTER ... ADD COLUMN IF NOT EXISTS the column check understands:\n%s", m.Version, i+1, q)
			}
		}
	}
	return tables, materialized
}

func TestSchemaColumnsReplaysAlters(t *testing.T) {
	got := schemaColumns(t)["trials"]
	at := indexOf(got, "claim")
	if at < 0 || len(got) < at+4 || got[at+1] != "answer" || got[at+2] != "recording" || got[at+3] != "process" || got[len(got)-1] != "written_at" {
		t.Fatalf("trials columns after the migrations: %v", got)
	}
	if at := indexOf(got, "attrition"); at < 0 || got[at+1] != "unsealed" {
		t.Fatalf("trials columns after the migrations: %v, want unsealed after attrition", got)
	}
	// answer, recording, process; the grader's; unsealed.
	if n := len(ddlColumns(ddlTrials)); len(got) != n+3+len(ddlTrialsGrader)+1 {
		t.Fatalf("trials has %d columns after the migrations, want %d", len(got), n+3+len(ddlTrialsGrader)+1)
	}
}

// TestColumnsMatchDDL: the insert column lists follow the DDL (after every
// migration's ALTERs), the value lists match the column lists, and the row
// structs read every column.
func TestColumnsMatchDDL(t *testing.T) {
	schema := schemaColumns(t)
	okJudgement := record.Judgement{SweepID: "s", TrialID: "t", ErrorDetection: 1, RetryDecision: 2,
		BackoffBehavior: 3, EscalationCorrectness: 4, ContextPreservation: 5, Aggregate: 3, Recommendation: record.RecommendReview}
	key := record.JudgeCacheKey{Scenario: "sc", TraceHash: "h", JudgeModel: "m", JudgePromptHash: "p"}
	for _, c := range []struct {
		table string
		cols  []string
		row   any
		vals  []any
	}{
		{"sweeps", sweepCols, sweepRow{}, must(sweepValues(record.Sweep{SweepID: "s"}))},
		{"trials", trialCols, trialRow{}, must(trialValues(record.Trial{SweepID: "s", TrialID: "t"}, time.Now()))},
		{"tool_calls", toolCallCols, toolCallRow{}, must(toolCallValues(record.ToolCall{SweepID: "s", TrialID: "t"}, time.Now()))},
		{"schema_migrations", migrationCols, nil, nil},
		{"judgements", judgementCols, judgementRow{}, must(judgementValues(okJudgement, time.Now()))},
		{"judge_cache", judgeCacheCols, nil, must(judgeCacheValues(key, "{}", time.Now()))},
		{"review_queue", reviewCols, reviewRow{}, must(reviewItemValues(record.ReviewItem{SweepID: "s", TrialID: "t", Reason: "r"}, time.Now()))},
	} {
		if got := schema[c.table]; !reflect.DeepEqual(got, c.cols) {
			t.Errorf("%s: DDL columns %v\n != insert columns %v", c.table, got, c.cols)
		}
		if c.vals != nil && len(c.vals) != len(c.cols) {
			t.Errorf("%s: %d values for %d columns %v", c.table, len(c.vals), len(c.cols), c.cols)
		}
		if c.row == nil {
			continue
		}
		ch, js := tagNames(c.row)
		want := selectedNames(c.cols)
		if !reflect.DeepEqual(ch, want) || !reflect.DeepEqual(js, want) {
			t.Errorf("row tags\n ch   %v\n json %v\nwant %v", ch, js, want)
		}
	}
}

// TestJudgeRowsRefuseDefaults: a judgement with a score outside 1..5 (the
// zero value included), a bad aggregate or recommendation is never written;
// neither is a review item without a reason or a cache entry without a key.
func TestJudgeRowsRefuseDefaults(t *testing.T) {
	good := record.Judgement{SweepID: "s", TrialID: "t", ErrorDetection: 5, RetryDecision: 5,
		BackoffBehavior: 5, EscalationCorrectness: 5, ContextPreservation: 5, Aggregate: 5, Recommendation: record.RecommendPass}
	if _, err := judgementValues(good, time.Now()); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*record.Judgement){
		"zero value":     func(j *record.Judgement) { *j = record.Judgement{SweepID: "s", TrialID: "t"} },
		"score 0":        func(j *record.Judgement) { j.BackoffBehavior = 0 },
		"score 6":        func(j *record.Judgement) { j.ContextPreservation = 6 },
		"NaN aggregate":  func(j *record.Judgement) { j.Aggregate = math.NaN() },
		"aggregate 0":    func(j *record.Judgement) { j.Aggregate = 0 },
		"recommendation": func(j *record.Judgement) { j.Recommendation = "maybe" },
		"no trial":       func(j *record.Judgement) { j.TrialID = "" },
	} {
		j := good
		mut(&j)
		if _, err := judgementValues(j, time.Now()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := reviewItemValues(record.ReviewItem{SweepID: "s", TrialID: "t", Reason: "  "}, time.Now()); err == nil {
		t.Error("review item without a reason accepted")
	}
	if _, err := judgeCacheValues(record.JudgeCacheKey{Scenario: "s", TraceHash: "h", JudgeModel: "m"}, "{}", time.Now()); err == nil {
		t.Error("cache key without a prompt hash accepted")
	}
}

func must(v []any, err error) []any {
	if err != nil {
		panic(err)
	}
	return v
}

// TestMetricsMatchSchema: every Go metric is a Nullable(UInt8) column and a
// row of the trial_metrics view, and Trial.Outcome reaches its field.
func TestMetricsMatchSchema(t *testing.T) {
	var nullable []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+)\s+Nullable\(UInt8\)`).FindAllStringSubmatch(ddlTrials, -1) {
		nullable = append(nullable, m[1])
	}
	var viewed []string
	for _, m := range regexp.MustCompile(`\('(\w+)', (\w+)\)`).FindAllStringSubmatch(ddlTrialMetrics, -1) {
		if m[1] != m[2] {
			t.Errorf("trial_metrics maps %s to column %s", m[1], m[2])
		}
		viewed = append(viewed, m[1])
	}
	var names []string
	for _, m := range outcome.Stored {
		names = append(names, string(m))
		tr := record.Trial{SweepID: "s", TrialID: "t"}
		v := true
		if !tr.SetOutcome(m, &v) || tr.Outcome(m) == nil || !*tr.Outcome(m) {
			t.Errorf("SetOutcome/Outcome(%s) do not reach a field", m)
		}
		vals := must(trialValues(tr, time.Now()))
		if p, ok := vals[indexOf(trialCols, string(m))].(*uint8); !ok || p == nil || *p != 1 {
			t.Errorf("metric %s is not written to its column", m)
		}
	}
	if !reflect.DeepEqual(names, nullable) || !reflect.DeepEqual(names, viewed) {
		t.Errorf("metrics\n Go   %v\n DDL  %v\n view %v", names, nullable, viewed)
	}
	var tr record.Trial
	if tr.SetOutcome("nope", nil) || tr.Outcome("nope") != nil {
		t.Error("unknown metric accepted")
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range append(tricky, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x1f \"\\/") {
		var buf bytes.Buffer
		appendJSONString(&buf, s)
		var back string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, buf.Bytes(), err)
		}
		if back != s {
			t.Errorf("%q -> %s -> %q", s, buf.Bytes(), back)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = text(s) // the stores only ever encode valid UTF-8
		var buf bytes.Buffer
		appendJSONString(&buf, s)
		var back string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back != s {
			t.Fatalf("%q -> %s -> %q, %v", s, buf.Bytes(), back, err)
		}
	})
}

func TestAppendJSONRow(t *testing.T) {
	one := uint8(1)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.FixedZone("X", 3600))
	var buf bytes.Buffer
	err := appendJSONRow(&buf, []string{"s", "u8", "u32", "u64", "f", "n", "nn", "a", "t"},
		[]any{`a"b`, uint8(1), uint32(2), uint64(18446744073709551615), tenth + 0.2, (*uint8)(nil), &one, []string{"x", `"`}, ts})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"s":"a\"b","u8":1,"u32":2,"u64":18446744073709551615,"f":0.30000000000000004,"n":null,"nn":1,"a":["x","\""],"t":"2026-01-02 02:04:05.678"}` + "\n"
	if buf.String() != want {
		t.Fatalf("got  %s\nwant %s", buf.String(), want)
	}
	if err := appendJSONValue(&buf, struct{}{}); err == nil {
		t.Fatal("unsupported type accepted")
	}
}

func TestDecodeJSONEachRow(t *testing.T) {
	data := []byte(`{"n":1}` + "\n" + `{"n":18446744073709551615}` + "\n")
	var rows []countRow
	if err := decodeJSONEachRow(data, &rows); err != nil || len(rows) != 2 || rows[1].N != 18446744073709551615 {
		t.Fatalf("%+v, %v", rows, err)
	}
	rows = nil
	if err := decodeJSONEachRow(nil, &rows); err != nil || len(rows) != 0 {
		t.Fatalf("empty: %+v, %v", rows, err)
	}
	if err := decodeJSONEachRow([]byte(`{"n":"x"}`), &rows); err == nil {
		t.Fatal("bad row accepted")
	}
	if err := decodeJSONEachRow(data, rows); err == nil {
		t.Fatal("non-pointer accepted")
	}
	// A result large enough to be decoded in runs: every row in order,
	// after what dest held, and a bad row named by its number.
	type bigRow struct {
		N uint64   `json:"n"`
		S string   `json:"s"`
		A []uint64 `json:"a"`
	}
	var big bytes.Buffer
	var want []bigRow
	for i := 0; big.Len() < 3*parallelDecodeBytes; i++ {
		r := bigRow{N: uint64(i), S: fmt.Sprintf("row %d with a \"quote\" and a\nnewline", i), A: []uint64{uint64(i), uint64(2 * i)}}
		b, _ := json.Marshal(r)
		big.Write(b)
		big.WriteByte('\n')
		want = append(want, r)
	}
	got := []bigRow{{N: 99, S: "held"}}
	if err := decodeJSONEachRow(big.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[1:], want) || got[0].S != "held" {
		t.Fatalf("decoded %d rows, want the held one and %d; first %+v", len(got), len(want)+1, got[:2])
	}
	badAt := len(want) * 2 / 3 // in the last run of lines
	bad := bytes.Replace(big.Bytes(), []byte(fmt.Sprintf(`{"n":%d,`, badAt)), []byte(`{"n":"x",`), 1)
	held := len(got)
	if err := decodeJSONEachRow(bad, &got); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("row %d:", held+badAt+1)) {
		t.Fatalf("bad row %d after %d held: %v", badAt+1, held, err)
	}
}

// ---- the store sends exactly the shared SQL ----

type sent struct {
	kind string // exec, select, insert, query
	sql  string
	rows [][]any
}

// recorder is a Transport that records what the store hands it: what a
// registered server transport receives (and, through the same calls, what
// the embedded one does). Package clickhouseserver checks what its
// transport then hands to clickhouse-go.
type recorder struct {
	log     []sent
	selects map[string]any // canned results by SQL (a slice value)
	closed  bool
}

func (r *recorder) Exec(ctx context.Context, q Stmt) error {
	r.log = append(r.log, sent{kind: "exec", sql: q.SQL})
	return nil
}

func (r *recorder) Select(ctx context.Context, dest any, q Stmt) error {
	r.log = append(r.log, sent{kind: "select", sql: q.SQL})
	if v, ok := r.selects[q.SQL]; ok {
		reflect.ValueOf(dest).Elem().Set(reflect.ValueOf(v))
	}
	return nil
}

func (r *recorder) Insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
	for _, row := range rows {
		if len(row) != len(cols) {
			return errors.New("row length differs from the column list")
		}
	}
	r.log = append(r.log, sent{kind: "insert", sql: insertSQL, rows: rows})
	return nil
}

func (r *recorder) Query(ctx context.Context, sql string) (Table, error) {
	r.log = append(r.log, sent{kind: "query", sql: sql})
	return Table{}, nil
}

func (r *recorder) Close() error {
	r.closed = true
	return nil
}

// recordingStore is a store on a recorder, as Open builds one on a
// registered server transport.
func recordingStore(t *testing.T, db string) (*store, *recorder) {
	t.Helper()
	rec := &recorder{selects: map[string]any{}}
	st, err := newStore(rec, db)
	if err != nil {
		t.Fatal(err)
	}
	return st, rec
}

func TestStoreSendsSharedSQL(t *testing.T) {
	st, fc := recordingStore(t, "rb")
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := []sent{
		{kind: "exec", sql: "CREATE DATABASE IF NOT EXISTS `rb`"},
		{kind: "exec", sql: render(ddlSchemaMigrations, "rb")},
		{kind: "select", sql: render(qAppliedVersions, "rb")},
	}
	for _, m := range migrations {
		for _, q := range m.Statements {
			want = append(want, sent{kind: "exec", sql: render(q, "rb")})
		}
		want = append(want, sent{kind: "insert", sql: "INSERT INTO `rb`.schema_migrations (version, name, applied_at)"})
	}
	if len(fc.log) != len(want) {
		t.Fatalf("sent %d statements, want %d: %+v", len(fc.log), len(want), fc.log)
	}
	for i := range want {
		if fc.log[i].kind != want[i].kind || fc.log[i].sql != want[i].sql {
			t.Fatalf("statement %d:\n got %s %q\nwant %s %q", i, fc.log[i].kind, fc.log[i].sql, want[i].kind, want[i].sql)
		}
	}
	if !strings.Contains(render(ddlTrials, "rb"), "CREATE TABLE IF NOT EXISTS `rb`.trials") {
		t.Fatal("database not substituted")
	}

	// A second Migrate sees every version applied and sends no DDL.
	var applied []versionRow
	for _, m := range migrations {
		applied = append(applied, versionRow{Version: m.Version})
	}
	fc.selects[render(qAppliedVersions, "rb")] = applied
	fc.log = nil
	if err := st.Migrate(ctx); err != nil || len(fc.log) != 3 {
		t.Fatalf("second Migrate sent %+v, %v", fc.log, err)
	}
	// A database at version 1 gets exactly the later migrations.
	fc.selects[render(qAppliedVersions, "rb")] = applied[:1]
	fc.log = nil
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	wantExecs := 0
	for _, m := range migrations[1:] {
		wantExecs += len(m.Statements) + 1 // + the version row
	}
	if len(fc.log) != 3+wantExecs || fc.log[3].sql != render(ddlTrialsAnswer, "rb") {
		t.Fatalf("upgrade from version 1 sent %+v", fc.log)
	}

	fc.log = nil
	trials, calls := makeTrials("s", 2, 2)
	if err := st.WriteTrials(ctx, trials, calls); err != nil {
		t.Fatal(err)
	}
	if len(fc.log) != 2 || fc.log[0].sql != insertPrefix("rb", "tool_calls", toolCallCols) ||
		fc.log[1].sql != insertPrefix("rb", "trials", trialCols) || fc.log[0].kind != "insert" || fc.log[1].kind != "insert" {
		t.Fatalf("WriteTrials sent %+v", fc.log)
	}
	if len(fc.log[0].rows) != 4 || len(fc.log[1].rows) != 2 || len(fc.log[1].rows[0]) != len(trialCols) {
		t.Fatalf("batch rows: %d calls, %d trials", len(fc.log[0].rows), len(fc.log[1].rows))
	}
	// Calls and trials of one write share their version.
	wCall := fc.log[0].rows[0][len(toolCallCols)-1].(time.Time)
	wTrial := fc.log[1].rows[0][len(trialCols)-1].(time.Time)
	if !wCall.Equal(wTrial) || wTrial.Location() != time.UTC {
		t.Fatalf("written_at %v vs %v", wCall, wTrial)
	}

	fc.log = nil
	_, _ = st.CountTrials(ctx, "s")
	_, _ = st.Trials(ctx, "s")
	_, _ = st.Cells(ctx, "s")
	_, _ = st.Sweeps(ctx, 5)
	_, _ = st.Sweep(ctx, "s")
	fc.selects[render(qTrial, "rb")] = []trialRow{{SweepID: "s", TrialID: "t"}}
	_, _, _ = st.Trial(ctx, "t")
	var got []string
	for _, s := range fc.log {
		if s.kind != "select" {
			t.Fatalf("unexpected %+v", s)
		}
		got = append(got, s.sql)
	}
	wantSQL := []string{qCountTrials, qTrials, qCells, qSweeps, qSweep, qTrial, qTrialCalls}
	for i := range wantSQL {
		wantSQL[i] = render(wantSQL[i], "rb")
	}
	if !reflect.DeepEqual(got, wantSQL) {
		t.Fatalf("reads sent\n%q\nwant\n%q", got, wantSQL)
	}
}

func TestStoreJudgeSQL(t *testing.T) {
	st, fc := recordingStore(t, "rb")
	ctx := context.Background()
	key := record.JudgeCacheKey{Scenario: "sc", TraceHash: "h", JudgeModel: "m", JudgePromptHash: "p"}
	j := record.Judgement{SweepID: "s", TrialID: "t", ErrorDetection: 4, RetryDecision: 4, BackoffBehavior: 4,
		EscalationCorrectness: 4, ContextPreservation: 4, Aggregate: 4, Recommendation: record.RecommendPass}
	if err := st.PutJudgement(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCachedJudgement(ctx, key, "{}"); err != nil {
		t.Fatal(err)
	}
	if err := st.EnqueueReview(ctx, record.ReviewItem{SweepID: "s", TrialID: "t", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	_, _ = st.Judgements(ctx, "s")
	_, _, _ = st.CachedJudgement(ctx, key)
	_, _ = st.ReviewQueue(ctx, "s")
	want := []sent{
		{kind: "insert", sql: insertPrefix("rb", "judgements", judgementCols)},
		{kind: "insert", sql: insertPrefix("rb", "judge_cache", judgeCacheCols)},
		{kind: "insert", sql: insertPrefix("rb", "review_queue", reviewCols)},
		{kind: "select", sql: render(qJudgements, "rb")},
		{kind: "select", sql: render(qJudgeCache, "rb")},
		{kind: "select", sql: render(qReviewQueue, "rb")},
	}
	if len(fc.log) != len(want) {
		t.Fatalf("sent %+v", fc.log)
	}
	for i := range want {
		if fc.log[i].kind != want[i].kind || fc.log[i].sql != want[i].sql {
			t.Fatalf("statement %d:\n got %s %q\nwant %s %q", i, fc.log[i].kind, fc.log[i].sql, want[i].kind, want[i].sql)
		}
	}
	if len(fc.log[0].rows) != 1 || len(fc.log[0].rows[0]) != len(judgementCols) {
		t.Fatalf("judgement batch rows %+v", fc.log[0].rows)
	}
	if at, ok := fc.log[0].rows[0][len(judgementCols)-1].(time.Time); !ok || at.Location() != time.UTC {
		t.Fatalf("judged_at %v", fc.log[0].rows[0][len(judgementCols)-1])
	}
}

func TestMetricCellRates(t *testing.T) {
	m := outcome.Cell{N: 4, Successes: 1, SumWeight: 8, SumWeightY: 2}
	if m.Rate() != 0.25 || m.WeightedRate() != 0.25 {
		t.Fatal(m.Rate(), m.WeightedRate())
	}
	var z outcome.Cell
	if r := z.Rate(); r == r {
		t.Fatal("rate of nothing tested is not NaN")
	}
}

// A served door's client lowers a limit for its statement, never raises
// one: rebound sql's --timeout 1s applies at the served store, --timeout 10m
// leaves the door's 60 s.
func TestDoorLimitsFor(t *testing.T) {
	d := &Door{lim: DefaultLimits}
	for _, tc := range []struct {
		name   string
		client Limits
		want   Limits
	}{
		{"none", Limits{}, DefaultLimits},
		{"lower", Limits{MaxExecutionTime: time.Second, MaxMemoryBytes: 8 << 20, MaxResultRows: 10, MaxResultBytes: 1 << 10},
			Limits{MaxExecutionTime: time.Second, MaxMemoryBytes: 8 << 20, MaxResultRows: 10, MaxResultBytes: 1 << 10}},
		{"higher", Limits{MaxExecutionTime: 10 * time.Minute, MaxMemoryBytes: 64 << 30, MaxResultRows: 1 << 40, MaxResultBytes: 1 << 40}, DefaultLimits},
		{"mixed", Limits{MaxExecutionTime: 10 * time.Minute, MaxMemoryBytes: 1 << 20},
			Limits{MaxExecutionTime: DefaultLimits.MaxExecutionTime, MaxMemoryBytes: 1 << 20, MaxResultRows: DefaultLimits.MaxResultRows, MaxResultBytes: DefaultLimits.MaxResultBytes}},
	} {
		if got := d.LimitsFor(DoorRequest{Limits: tc.client}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		// The statement's SETTINGS carry them, readonly=1 last.
		set := settingsFor(d.LimitsFor(DoorRequest{Limits: tc.client}), nil)
		if !strings.Contains(set, fmt.Sprintf("max_memory_usage = %d", tc.want.MaxMemoryBytes)) || !strings.HasSuffix(set, "readonly = 1") {
			t.Errorf("%s: SETTINGS %s", tc.name, set)
		}
	}
}
