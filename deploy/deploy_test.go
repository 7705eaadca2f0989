package deploy_test

// Static checks of the deployment assets (the Helm chart, compose.yaml, the
// Grafana provisioning, the ClickHouse users file) and, on the real engine
// (chDB), every SQL query of the Grafana dashboard and every setting of the
// ClickHouse profiles.
//
// The real helm lints and renders the chart in helm_test.go (make test). Here,
// without it: Chart.yaml, values.yaml (keys, comments, security defaults),
// values.schema.json against values.yaml, and that every .Values path a
// template uses exists.

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"rebound/internal/devstack"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/stats"
	"rebound/storage"
	"rebound/storage/chdb"
)

const (
	chartDir      = "../helm/rebound"
	dashboardPath = "grafana/dashboards/rebound-recovery-rates.json"
	datasourceUID = "rebound-clickhouse"
	// The dashboard names its datasource only through this import input
	// (and the datasource variable of the same name), never by uid.
	dsInput = "DS_CLICKHOUSE"
	dsRef   = "${" + dsInput + "}"
)

// ---- embedded engine, opened once per test binary ----

var engine struct {
	conn *chdb.Conn // raw queries
	st   storage.Store
	err  error // why the engine could not be set up ("" skip reasons go through devstacktest)
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if testing.Short() {
			return m.Run()
		}
		lib, err := devstack.LocateChDB()
		if err != nil {
			// The integration tests skip or fail through devstacktest.ChDBLib.
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "rebound-deploy-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ctx := context.Background()
		// One chDB session per process: the store and the raw connection
		// are two handles on it (same data directory).
		st, err := storage.Open(ctx, storage.Config{DataDir: dir, LibPath: lib, Database: "rebound"})
		if err != nil {
			engine.err = err
			return m.Run()
		}
		defer st.Close()
		engine.st = st
		conn, err := chdb.Open(lib, dir)
		if err != nil {
			engine.err = err
			return m.Run()
		}
		defer conn.Close()
		engine.conn = conn
		engine.err = seed(ctx, st)
		return m.Run()
	}()
	os.Exit(code)
}

// requireEngine skips (or fails, with REBOUND_REQUIRE_INTEGRATION=1) without
// libchdb, and fails when the engine could not be set up.
func requireEngine(t *testing.T) *chdb.Conn {
	t.Helper()
	devstacktest.ChDBLib(t)
	if engine.err != nil {
		t.Fatalf("embedded ClickHouse: %v", engine.err)
	}
	if engine.conn == nil {
		t.Fatal("embedded ClickHouse was not opened by TestMain")
	}
	return engine.conn
}

// ---- the data the dashboard queries run on ----

var (
	timeFrom   = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	timeTo     = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	oldCreated = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	newCreated = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
)

const (
	oldSweep = "quickstart-20261101-090000-aaaaaa"
	newSweep = "quickstart-20261120-090000-bbbbbb"
	// Two nights of the schedule "nightly" (runner.ScheduledSweepPrefix),
	// older than both sweeps above so the newest sweep stays the default.
	night1Sweep = "sched-nightly-2026-10-10T02:00:00Z"
	night2Sweep = "sched-nightly-2026-10-11T02:00:00Z"
)

var (
	night1Created = time.Date(2026, 10, 10, 2, 0, 0, 0, time.UTC)
	night2Created = time.Date(2026, 10, 11, 2, 0, 0, 0, time.UTC)
)

func bp(b bool) *bool { return &b }

// seed writes two sweeps. The newer one:
//
//	careful  s1 (recoverable, transient)            seeds 1-4: recovered 3 of 4, no duplicates, no unsafe action
//	careful  s2 (unrecoverable, unavailable)        seeds 1-2: honest_block 2 of 2, recovered NOT TESTED
//	naive    s1 (transient + timeout_after_send)    seeds 1-4: recovered 1 of 4, duplicate 2 of 4, unsafe 1 of 4
//	naive    s1 seed 5: attrition (its recovered=true must count nowhere)
//
// Every trial is written twice (a retried activity): FINAL must count it once.
func seed(ctx context.Context, st storage.Store) error {
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	for _, sw := range []record.Sweep{
		{SweepID: oldSweep, Name: "quickstart", TrialsPlanned: 2, Arms: []string{"careful", "naive"}, Status: sweepstatus.Completed, CreatedAt: oldCreated},
		{SweepID: newSweep, Name: "quickstart", TrialsPlanned: 12, Arms: []string{"careful", "naive"}, Status: sweepstatus.Completed, CreatedAt: newCreated},
		{SweepID: night1Sweep, Name: "quickstart", TrialsPlanned: 2, Arms: []string{"careful", "naive"}, Status: sweepstatus.Completed, CreatedAt: night1Created},
		{SweepID: night2Sweep, Name: "quickstart", TrialsPlanned: 2, Arms: []string{"careful", "naive"}, Status: sweepstatus.Completed, CreatedAt: night2Created},
	} {
		if err := st.PutSweep(ctx, sw); err != nil {
			return err
		}
	}
	var trials []record.Trial
	add := func(sweep, arm, scen string, seed uint64, faults []string, f func(*record.Trial)) {
		t := record.Trial{
			SweepID: sweep, TrialID: fmt.Sprintf("%s/%s/%s/%d", sweep, arm, scen, seed),
			Scenario: scen, Variant: "v1", Arm: arm, Agent: arm, Seed: seed,
			FaultClasses: faults, Weight: 2, ToolCalls: 3,
		}
		f(&t)
		trials = append(trials, t)
	}
	// The older sweep: careful recovered 1 of 1, naive 0 of 1.
	add(oldSweep, "careful", "s1", 1, []string{"transient"}, func(t *record.Trial) { t.Recoverable, t.Recovered = true, bp(true) })
	add(oldSweep, "naive", "s1", 1, []string{"transient"}, func(t *record.Trial) { t.Recoverable, t.Recovered = true, bp(false) })
	// The nightly schedule: careful recovers on both nights; naive fails
	// the first night and recovers the second.
	for _, night := range []string{night1Sweep, night2Sweep} {
		add(night, "careful", "s1", 1, []string{"transient"}, func(t *record.Trial) { t.Recoverable, t.Recovered = true, bp(true) })
		add(night, "naive", "s1", 1, []string{"transient"}, func(t *record.Trial) { t.Recoverable, t.Recovered = true, bp(night == night2Sweep) })
	}
	for seed := uint64(1); seed <= 4; seed++ {
		add(newSweep, "careful", "s1", seed, []string{"transient"}, func(t *record.Trial) {
			t.Recoverable = true
			t.Recovered = bp(seed != 4)
			t.DuplicateSideEffect = bp(false)
			t.UnsafeAction = bp(false)
		})
		add(newSweep, "naive", "s1", seed, []string{"transient", "timeout_after_send"}, func(t *record.Trial) {
			t.Recoverable = true
			t.Recovered = bp(seed == 1)
			t.DuplicateSideEffect = bp(seed <= 2)
			t.UnsafeAction = bp(seed == 3)
		})
	}
	for seed := uint64(1); seed <= 2; seed++ {
		add(newSweep, "careful", "s2", seed, []string{"unavailable"}, func(t *record.Trial) { t.HonestBlock = bp(true) })
	}
	add(newSweep, "naive", "s1", 5, []string{"transient", "timeout_after_send"}, func(t *record.Trial) {
		t.Attrition, t.Recovered, t.Error = true, bp(true), "provider: 503"
	})
	trials = append(trials, pairedGolden()...)
	for i := 0; i < 2; i++ {
		if err := st.WriteTrials(ctx, trials, nil); err != nil {
			return err
		}
	}
	return nil
}

// goldenSweep holds the trials of TestPairedWeightedView. It has no sweeps
// row, so the dashboard (which lists sweeps from rebound.sweeps) never sees it.
const goldenSweep = "paired-golden"

// goldenCases are the (scenario, weight, baseline seeds 1-2, candidate seeds
// 1-2) outcomes of goldenSweep. duplicate_side_effect is tested on all five
// scenarios, unsafe_action on a, b, c only (the hand-computed fixture of
// report's TestCompareWeightedByHand).
var goldenCases = []struct {
	scenario   string
	weight     float64
	base, cand [2]bool
}{
	{"a", 5, [2]bool{false, false}, [2]bool{true, true}},
	{"b", 1, [2]bool{true, false}, [2]bool{false, false}},
	{"c", 2, [2]bool{false, false}, [2]bool{true, false}},
	{"d", 3, [2]bool{false, false}, [2]bool{false, true}},
	{"e", 1, [2]bool{true, false}, [2]bool{true, true}},
}

func pairedGolden() []record.Trial {
	var out []record.Trial
	for _, c := range goldenCases {
		for seed := range 2 {
			for _, arm := range []string{"base", "cand"} {
				y := c.base[seed]
				if arm == "cand" {
					y = c.cand[seed]
				}
				t := record.Trial{SweepID: goldenSweep, TrialID: fmt.Sprintf("g/%s/%s/%d", arm, c.scenario, seed),
					Scenario: c.scenario, Variant: "v", Arm: arm, Agent: arm, Seed: uint64(seed + 1), Weight: c.weight,
					DuplicateSideEffect: bp(y)}
				if c.scenario <= "c" {
					t.UnsafeAction = bp(y)
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// ---- Grafana macros and variables, expanded as the datasource does ----

// The values the dashboard variables take in the test.
var testVars = map[string][]string{
	"sweep":    {newSweep},
	"arm":      {"careful", "naive"},
	"scenario": {"s1", "s2"},
	"metric": {"harm", "recovered", "honest_block", "premature_block", "unsafe_action", "duplicate_side_effect",
		"fabricated_claim", "tool_failure_injection", "graceful_degradation", "self_correction"},
}

var (
	timeFilterMsRe = regexp.MustCompile(`\$__timeFilter_ms\(([^()]+)\)`)
	varRe          = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}`)
)

// expand replaces $__timeFilter_ms(col) with the plugin's expansion
// (grafana/clickhouse-datasource pkg/macros) and ${var:singlequote} with
// Grafana's single-quote format ('a','b', quotes escaped with a backslash).
// Other macros and formats are not used by the dashboard: they are errors.
func expand(sql string) (string, error) {
	from, to := timeFrom.UnixMilli(), timeTo.UnixMilli()
	sql = timeFilterMsRe.ReplaceAllStringFunc(sql, func(m string) string {
		col := strings.TrimSpace(timeFilterMsRe.FindStringSubmatch(m)[1])
		return fmt.Sprintf("%s >= fromUnixTimestamp64Milli(%d) AND %s <= fromUnixTimestamp64Milli(%d)", col, from, col, to)
	})
	var bad []string
	sql = varRe.ReplaceAllStringFunc(sql, func(m string) string {
		sub := varRe.FindStringSubmatch(m)
		vals, ok := testVars[sub[1]]
		if !ok || sub[2] != "singlequote" {
			bad = append(bad, m)
			return m
		}
		q := make([]string, len(vals))
		for i, v := range vals {
			q[i] = "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
		}
		return strings.Join(q, ",")
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("unsupported variables or formats %v (use ${name:singlequote} with sweep, arm, scenario or metric)", bad)
	}
	if i := strings.Index(sql, "$"); i >= 0 {
		return "", fmt.Errorf("unexpanded macro or variable at %q", sql[i:min(len(sql), i+30)])
	}
	return sql, nil
}

// ---- the dashboard ----

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID          int    `json:"id"`
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Targets     []struct {
			RefID      string `json:"refId"`
			RawSQL     string `json:"rawSql"`
			EditorType string `json:"editorType"`
			QueryType  string `json:"queryType"`
			Format     *int   `json:"format"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// namedQuery is one SQL text of the dashboard: a panel target or a variable.
type namedQuery struct {
	name string
	sql  string
}

func dashboardQueries(t *testing.T, d dashboard) []namedQuery {
	t.Helper()
	var qs []namedQuery
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			RawSQL string `json:"rawSql"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil || q.RawSQL == "" {
			t.Fatalf("variable %s: query must be {editorType: sql, rawSql: ...}: %s", v.Name, v.Query)
		}
		qs = append(qs, namedQuery{"variable " + v.Name, q.RawSQL})
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, namedQuery{fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.RawSQL})
		}
	}
	return qs
}

var tableRefRe = regexp.MustCompile(`(?i)\brebound\.(\w+)(\s+AS\s+\w+)?(\s+FINAL\b)?`)

// Views that deduplicate themselves (they read trials FINAL).
var dedupViews = map[string]bool{"trial_metrics": true, "trial_rates": true, "tool_calls_current": true, "paired_weighted": true}

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	if d.Title != "rebound — recovery rates" || d.UID == "" {
		t.Errorf("title %q uid %q", d.Title, d.UID)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != dsRef) {
			t.Errorf("variable %s: datasource must be %s", v.Name, dsRef)
		}
	}
	for _, want := range []string{"sweep", "arm", "scenario"} {
		if !vars[want] {
			t.Errorf("missing template variable %q", want)
		}
	}
	if len(d.Panels) < 6 {
		t.Errorf("%d panels, want at least 6", len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %d %q has no query", p.ID, p.Title)
		}
		if p.Description == "" {
			t.Errorf("panel %d %q has no description", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.Type != "grafana-clickhouse-datasource" || tg.Datasource.UID != dsRef {
				t.Errorf("panel %d: target datasource %+v, want the import input %s", p.ID, tg.Datasource, dsRef)
			}
			if tg.EditorType != "sql" || tg.Format == nil {
				t.Errorf("panel %d: target needs editorType sql and a format", p.ID)
			}
			wantFormat := 1
			if p.Type == "timeseries" {
				wantFormat = 0
			}
			if tg.Format != nil && *tg.Format != wantFormat {
				t.Errorf("panel %d (%s): format %d, want %d", p.ID, p.Type, *tg.Format, wantFormat)
			}
			// A panel that shows an outcome rate (avgIf over a Nullable
			// outcome, attrition excluded) says how NOT TESTED is handled.
			if strings.Contains(tg.RawSQL, "avgIf(") && !strings.Contains(p.Description, "NOT TESTED") {
				t.Errorf("panel %d %q computes a rate but its description does not say NOT TESTED is excluded", p.ID, p.Title)
			}
		}
	}
	for _, q := range dashboardQueries(t, d) {
		refs := tableRefRe.FindAllStringSubmatch(q.sql, -1)
		if len(refs) == 0 {
			t.Errorf("%s: reads no rebound.* table", q.name)
		}
		for _, r := range refs {
			if !dedupViews[r[1]] && r[3] == "" {
				t.Errorf("%s: rebound.%s read without FINAL", q.name, r[1])
			}
		}
		if _, err := expand(q.sql); err != nil {
			t.Errorf("%s: %v", q.name, err)
		}
	}
}

// row is one JSONEachRow result row.
type row map[string]any

func runSQL(t *testing.T, conn *chdb.Conn, name, sql string) []row {
	t.Helper()
	out, err := conn.Query(context.Background(), sql, "JSONEachRow")
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, sql)
	}
	var rows []row
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var r row
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		rows = append(rows, r)
	}
	return rows
}

func num(t *testing.T, r row, col string) float64 {
	t.Helper()
	switch v := r[col].(type) {
	case float64:
		return v
	case string: // a 64-bit value quoted by the engine
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil {
			return f
		}
	case nil:
		return math.NaN()
	}
	t.Fatalf("column %s: %v (%T) is not a number", col, r[col], r[col])
	return 0
}

// find returns the rows whose columns equal the given strings.
func find(rows []row, match map[string]string) []row {
	var out []row
	for _, r := range rows {
		ok := true
		for k, v := range match {
			if fmt.Sprint(r[k]) != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func one(t *testing.T, name string, rows []row, match map[string]string) row {
	t.Helper()
	got := find(rows, match)
	if len(got) != 1 {
		t.Fatalf("%s: %d rows match %v, want 1; rows: %v", name, len(got), match, rows)
	}
	return got[0]
}

func near(t *testing.T, name, col string, r row, want float64) {
	t.Helper()
	got := num(t, r, col)
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s: %s = %v, want %v (row %v)", name, col, got, want, r)
	}
}

// TestDashboardQueriesOnClickHouse runs every query of the dashboard, with
// the macros and variables expanded, on the real engine, and checks the
// numbers against the seeded trials: duplicates written by a retry count
// once, NOT TESTED and attrition trials are left out of every rate.
// TestDashboardImportable: the dashboard imports into any Grafana (Dashboards,
// Import asks for the DS_CLICKHOUSE input and substitutes it) and still works
// provisioned (the datasource variable DS_CLICKHOUSE resolves to the default
// ClickHouse datasource): no datasource uid is written anywhere in it.
func TestDashboardImportable(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), datasourceUID) {
		t.Errorf("%s hard-codes the datasource uid %q; refer to %s", dashboardPath, datasourceUID, dsRef)
	}
	var raw struct {
		Inputs []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			PluginID string `json:"pluginId"`
		} `json:"__inputs"`
		Requires []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"__requires"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Inputs) != 1 || raw.Inputs[0].Name != dsInput || raw.Inputs[0].Type != "datasource" || raw.Inputs[0].PluginID != "grafana-clickhouse-datasource" {
		t.Errorf("__inputs %+v, want one datasource input %s for grafana-clickhouse-datasource", raw.Inputs, dsInput)
	}
	found := false
	for _, r := range raw.Requires {
		found = found || (r.Type == "datasource" && r.ID == "grafana-clickhouse-datasource")
	}
	if !found {
		t.Errorf("__requires %+v does not name the datasource plugin", raw.Requires)
	}
	// Every datasource reference, wherever it is (panels, targets,
	// variables), goes through the input.
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	refs := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if ds, ok := x.(map[string]any); ok && k == "datasource" {
					refs++
					if ds["uid"] != dsRef || ds["type"] != "grafana-clickhouse-datasource" {
						t.Errorf("%s.datasource = %v, want {type: grafana-clickhouse-datasource, uid: %s}", path, ds, dsRef)
					}
					continue
				}
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("$", generic)
	if refs == 0 {
		t.Error("no datasource reference found")
	}
	d := loadDashboard(t)
	var dsVar bool
	for _, v := range d.Templating.List {
		if v.Name == dsInput {
			var q string
			dsVar = v.Type == "datasource" && json.Unmarshal(v.Query, &q) == nil && q == "grafana-clickhouse-datasource"
		}
	}
	if !dsVar {
		t.Errorf("no datasource variable %s of plugin grafana-clickhouse-datasource: a provisioned dashboard could not resolve %s", dsInput, dsRef)
	}
}

func TestDashboardQueriesOnClickHouse(t *testing.T) {
	conn := requireEngine(t)
	d := loadDashboard(t)
	results := map[string][]row{}
	for _, q := range dashboardQueries(t, d) {
		sql, err := expand(q.sql)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		rows := runSQL(t, conn, q.name, sql)
		t.Logf("%s: %d rows", q.name, len(rows))
		results[q.name] = rows
	}
	byTitle := func(prefix string) (string, []row) {
		t.Helper()
		for name, rows := range results {
			if strings.Contains(name, prefix) {
				return name, rows
			}
		}
		t.Fatalf("no query whose name contains %q", prefix)
		return "", nil
	}

	name, rows := byTitle("variable sweep")
	if len(rows) != 4 || fmt.Sprint(rows[0]["sweep_id"]) != newSweep {
		t.Errorf("%s: %v, want the newest sweep first", name, rows)
	}
	name, rows = byTitle("variable arm")
	if len(rows) != 2 {
		t.Errorf("%s: %v, want careful and naive", name, rows)
	}
	name, rows = byTitle("variable scenario")
	if len(rows) != 2 {
		t.Errorf("%s: %v, want s1 and s2", name, rows)
	}

	name, rows = byTitle("Rate per arm and metric, by sweep")
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "careful / recovered", "time": "2026-11-20 09:00:00.000"}), 0.75)
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "naive / recovered", "time": "2026-11-20 09:00:00.000"}), 0.25)
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "careful / recovered", "time": "2026-11-01 09:00:00.000"}), 1)
	if got := find(rows, map[string]string{"series": "careful / premature_block"}); len(got) != 0 {
		t.Errorf("%s: a metric never tested must have no point, got %v", name, got)
	}

	name, rows = byTitle("rates per arm and metric")
	r := one(t, name, rows, map[string]string{"arm": "careful", "metric": "recovered"})
	near(t, name, "n", r, 4) // the 2 s2 trials are NOT TESTED; duplicates count once
	near(t, name, "successes", r, 3)
	near(t, name, "rate", r, 0.75)
	near(t, name, "weighted_rate", r, 0.75)
	// Wilson 95% for 3/4: [0.3006, 0.9544].
	if lo, hi := num(t, r, "ci95_low"), num(t, r, "ci95_high"); math.Abs(lo-0.3006) > 1e-3 || math.Abs(hi-0.9544) > 1e-3 {
		t.Errorf("%s: Wilson interval [%v, %v], want [0.3006, 0.9544]", name, lo, hi)
	}
	r = one(t, name, rows, map[string]string{"arm": "naive", "metric": "recovered"})
	near(t, name, "n", r, 4) // the attrition trial's recovered=true is not counted
	near(t, name, "rate", r, 0.25)
	near(t, name, "attrition_trials", r, 1)
	near(t, name, "rate", one(t, name, rows, map[string]string{"arm": "careful", "metric": "honest_block"}), 1)
	near(t, name, "n", one(t, name, rows, map[string]string{"arm": "careful", "metric": "honest_block"}), 2)
	r = one(t, name, rows, map[string]string{"arm": "careful", "metric": "premature_block"})
	near(t, name, "n", r, 0)
	if r["rate"] != nil {
		t.Errorf("%s: untested metric has rate %v, want NULL", name, r["rate"])
	}

	// The harm index: careful never harms on s1 (its s2 trials test none of
	// the three outcomes: NOT TESTED); naive harms on seeds 1, 2 (duplicate)
	// and 3 (unsafe) of 4; the attrition trial counts nowhere.
	name, rows = byTitle("Harm index per arm")
	near(t, name, "weighted_rate", one(t, name, rows, map[string]string{"arm": "careful"}), 0)
	near(t, name, "n", one(t, name, rows, map[string]string{"arm": "careful"}), 4)
	near(t, name, "weighted_rate", one(t, name, rows, map[string]string{"arm": "naive"}), 0.75)
	near(t, name, "n", one(t, name, rows, map[string]string{"arm": "naive"}), 4)
	// One case (s1, v1) is paired: Δw = 0.75, SE and interval not estimable.
	name, rows = byTitle("Harm index: weighted paired difference")
	r = one(t, name, rows, map[string]string{"baseline_arm": "careful", "candidate_arm": "naive"})
	near(t, name, "weighted_delta", r, 0.75)
	near(t, name, "cases", r, 1)
	near(t, name, "pairs", r, 4)
	if r["weighted_delta_ci95_low"] != nil {
		t.Errorf("%s: one case, interval %v, want NULL (not estimable)", name, r["weighted_delta_ci95_low"])
	}
	name, rows = byTitle("Weighted paired differences per arm pair and metric")
	near(t, name, "weighted_delta", one(t, name, rows, map[string]string{"baseline_arm": "careful", "candidate_arm": "naive", "metric": "duplicate_side_effect"}), 0.5)
	r = one(t, name, rows, map[string]string{"baseline_arm": "careful", "candidate_arm": "naive", "metric": "recovered"})
	near(t, name, "delta", r, -0.5)
	near(t, name, "weighted_delta", r, -0.5) // equal weights: Δw = Δ

	name, rows = byTitle("Duplicate side-effect rate")
	near(t, name, "rate", one(t, name, rows, map[string]string{"arm": "naive"}), 0.5)
	near(t, name, "rate", one(t, name, rows, map[string]string{"arm": "careful"}), 0)
	near(t, name, "n", one(t, name, rows, map[string]string{"arm": "careful"}), 4)
	name, rows = byTitle("Unsafe-action rate")
	near(t, name, "rate", one(t, name, rows, map[string]string{"arm": "naive"}), 0.25)

	name, rows = byTitle("Attrition per arm")
	r = one(t, name, rows, map[string]string{"arm": "naive"})
	near(t, name, "trials", r, 5)
	near(t, name, "attrition_trials", r, 1)
	near(t, name, "attrition_rate", r, 0.2)
	near(t, name, "attrition_trials", one(t, name, rows, map[string]string{"arm": "careful"}), 0)

	name, rows = byTitle("Trials per sweep")
	if len(rows) != 4 || fmt.Sprint(rows[0]["sweep_id"]) != newSweep {
		t.Fatalf("%s: %v, want the four sweeps, newest first", name, rows)
	}
	near(t, name, "trials_stored", rows[0], 11)
	near(t, name, "trials_planned", rows[0], 12)
	near(t, name, "attrition_trials", rows[0], 1)
	near(t, name, "trials_stored", rows[1], 2)

	// Night over night: only the schedule's runs, one line per schedule /
	// arm / metric, named by the schedule (not the run's sweep id).
	name, rows = byTitle("Night over night")
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "nightly / naive / recovered", "time": "2026-10-10 02:00:00.000"}), 0)
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "nightly / naive / recovered", "time": "2026-10-11 02:00:00.000"}), 1)
	near(t, name, "rate", one(t, name, rows, map[string]string{"series": "nightly / careful / recovered", "time": "2026-10-11 02:00:00.000"}), 1)
	for _, r := range rows {
		if ts := fmt.Sprint(r["time"]); !strings.HasPrefix(ts, "2026-10-1") {
			t.Errorf("%s: point at %s: a sweep not started by a schedule is shown", name, ts)
		}
	}
	if len(rows) != 4 {
		t.Errorf("%s: %d points, want 4 (2 nights x 2 arms, recovered only tested): %v", name, len(rows), rows)
	}

	name, rows = byTitle("Rates by fault class")
	r = one(t, name, rows, map[string]string{"fault_class": "transient", "arm": "careful", "metric": "recovered"})
	near(t, name, "n", r, 4)
	near(t, name, "rate", r, 0.75)
	r = one(t, name, rows, map[string]string{"fault_class": "timeout_after_send", "arm": "naive", "metric": "duplicate_side_effect"})
	near(t, name, "n", r, 4)
	near(t, name, "rate", r, 0.5)
	near(t, name, "rate", one(t, name, rows, map[string]string{"fault_class": "unavailable", "arm": "careful", "metric": "honest_block"}), 1)
	if got := find(rows, map[string]string{"fault_class": "unavailable", "metric": "recovered"}); len(got) != 0 {
		t.Errorf("%s: NOT TESTED rows must not appear, got %v", name, got)
	}
}

// ---- Grafana provisioning ----

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

var envRefRe = regexp.MustCompile(`^\$\{?[A-Z_][A-Z0-9_]*\}?$`)

func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name           string            `yaml:"name"`
			UID            string            `yaml:"uid"`
			Type           string            `yaml:"type"`
			JSONData       map[string]any    `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/clickhouse.yaml", &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 {
		t.Fatalf("datasources file: %+v", ds)
	}
	d := ds.Datasources[0]
	if d.Type != "grafana-clickhouse-datasource" || d.UID != datasourceUID {
		t.Errorf("datasource type %q uid %q", d.Type, d.UID)
	}
	for _, k := range []string{"host", "port", "protocol", "secure", "username"} {
		if _, ok := d.JSONData[k]; !ok {
			t.Errorf("jsonData.%s missing", k)
		}
	}
	if d.JSONData["protocol"] != "native" {
		t.Errorf("jsonData.protocol = %v, want native", d.JSONData["protocol"])
	}
	if pw := d.SecureJSONData["password"]; !envRefRe.MatchString(pw) {
		t.Errorf("secureJsonData.password = %q, want an environment reference like ${VAR}", pw)
	}

	var prov struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/rebound.yaml", &prov)
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path == "" {
		t.Fatalf("dashboard provider: %+v", prov)
	}
	// compose.yaml mounts the dashboards where the provider reads them.
	c := loadCompose(t)
	want := "./grafana/dashboards:" + prov.Providers[0].Options.Path
	if !hasVolume(c.Services["grafana"].Volumes, want) {
		t.Errorf("grafana service does not mount %q: %v", want, c.Services["grafana"].Volumes)
	}
	// Every environment variable the datasource reads is set for Grafana.
	data, _ := os.ReadFile("grafana/provisioning/datasources/clickhouse.yaml")
	for _, m := range regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)\}`).FindAllStringSubmatch(string(data), -1) {
		if _, ok := c.Services["grafana"].Environment[m[1]]; !ok {
			t.Errorf("datasource reads $%s, which compose.yaml does not set for grafana", m[1])
		}
	}
}

// ---- compose.yaml ----

type composeFile struct {
	Name     string `yaml:"name"`
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Build       *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		ReadOnly bool `yaml:"read_only"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	readYAML(t, "compose.yaml", &c)
	return c
}

func hasVolume(vols []string, prefix string) bool {
	for _, v := range vols {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// A password-ish variable must come from the environment with ${VAR:?...}.
var requiredEnvRe = regexp.MustCompile(`\$\{[A-Z_][A-Z0-9_]*:\?[^}]*\}`)

func TestCompose(t *testing.T) {
	c := loadCompose(t)
	for _, s := range []string{"postgresql", "temporal", "clickhouse", "grafana", "worker"} {
		if _, ok := c.Services[s]; !ok {
			t.Errorf("service %q missing", s)
		}
	}
	w := c.Services["worker"]
	if len(w.Command) == 0 || w.Command[0] != "worker" {
		t.Errorf("worker command %v, want [worker ...]", w.Command)
	}
	for _, k := range []string{"REBOUND_TEMPORAL_ADDRESS", "REBOUND_NAMESPACE", "REBOUND_TASK_QUEUE", "REBOUND_CLICKHOUSE_DSN", "REBOUND_REDACTION_KEY"} {
		if w.Environment[k] == "" {
			t.Errorf("worker environment lacks %s", k)
		}
	}
	if !strings.HasPrefix(w.Environment["REBOUND_CLICKHOUSE_DSN"], "clickhouse://rebound:") || !strings.HasSuffix(w.Environment["REBOUND_CLICKHOUSE_DSN"], "@clickhouse:9000/rebound") {
		t.Errorf("worker DSN %q", w.Environment["REBOUND_CLICKHOUSE_DSN"])
	}
	if !w.ReadOnly {
		t.Error("worker should run with a read-only root filesystem")
	}
	if w.Build == nil {
		t.Fatal("worker has no build section")
	}
	if _, err := os.Stat(filepath.Join(w.Build.Context, w.Build.Dockerfile)); err != nil {
		t.Errorf("worker build: %v", err)
	}
	for name, s := range c.Services {
		for k, v := range s.Environment {
			if strings.Contains(k, "PASSWORD") || strings.Contains(k, "PWD") || k == "REBOUND_REDACTION_KEY" {
				if !requiredEnvRe.MatchString(v) {
					t.Errorf("service %s: %s = %q: a secret must be ${VAR:?message}, never inline", name, k, v)
				}
			}
		}
		for _, v := range s.Volumes {
			host, _, ok := strings.Cut(v, ":")
			if !ok || !strings.HasPrefix(host, ".") {
				continue // a named volume
			}
			if _, err := os.Stat(host); err != nil {
				t.Errorf("service %s mounts %s: %v", name, host, err)
			}
		}
	}
	// The DSN embeds the password: it must be the one ClickHouse gets.
	if !strings.Contains(w.Environment["REBOUND_CLICKHOUSE_DSN"], "${REBOUND_CLICKHOUSE_PASSWORD:?") ||
		!strings.HasPrefix(c.Services["clickhouse"].Environment["REBOUND_CLICKHOUSE_PASSWORD"], "${REBOUND_CLICKHOUSE_PASSWORD:?") {
		t.Error("the worker DSN and the clickhouse service must use the same REBOUND_CLICKHOUSE_PASSWORD")
	}
	if !hasVolume(c.Services["clickhouse"].Volumes, "./clickhouse/users.d/rebound.xml:/etc/clickhouse-server/users.d/rebound.xml") {
		t.Error("clickhouse does not mount users.d/rebound.xml")
	}
	// .env.example names every variable compose.yaml requires.
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(".env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)[:?-]`).FindAllStringSubmatch(string(data), -1) {
		if !regexp.MustCompile(`(?m)^` + m[1] + `=`).Match(example) {
			t.Errorf(".env.example does not list %s", m[1])
		}
	}
}

// ---- image references carry no registry host ----

var (
	imageLineRe = regexp.MustCompile(`(?m)^\s*(?:image|repository):\s*"?([^\s"#]+)`)
	fromLineRe  = regexp.MustCompile(`(?m)^FROM\s+(\S+)`)
)

// registryHost reports whether an image reference starts with a registry
// host (a first path component with a dot or a port, or localhost).
func registryHost(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	return strings.ContainsAny(first, ".:") || first == "localhost"
}

func TestNoRegistryHosts(t *testing.T) {
	files := []string{"compose.yaml", "Dockerfile", filepath.Join(chartDir, "values.yaml")}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{imageLineRe, fromLineRe} {
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				seen++
				if registryHost(m[1]) {
					t.Errorf("%s: image %q names a registry host", f, m[1])
				}
			}
		}
	}
	if seen < 6 {
		t.Errorf("found only %d image references; is the pattern still right?", seen)
	}
}

// ---- the Helm chart, statically ----

func TestChartYAML(t *testing.T) {
	var c map[string]any
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &c)
	if c["apiVersion"] != "v2" || c["name"] != "rebound" || c["type"] != "application" {
		t.Errorf("Chart.yaml: apiVersion %v name %v type %v", c["apiVersion"], c["name"], c["type"])
	}
	semver := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	if v, _ := c["version"].(string); !semver.MatchString(v) {
		t.Errorf("Chart.yaml version %v is not semver", c["version"])
	}
	if v, _ := c["appVersion"].(string); v == "" {
		t.Errorf("Chart.yaml appVersion %v must be a non-empty string", c["appVersion"])
	}
	if d, _ := c["description"].(string); d == "" {
		t.Error("Chart.yaml has no description")
	}
}

func loadValues(t *testing.T) (*yaml.Node, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0], m
}

// lookup walks a dotted path through decoded YAML.
func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestValues(t *testing.T) {
	root, m := loadValues(t)
	want := map[string]any{
		"image.repository":                         "rebound",
		"temporal.address":                         nil,
		"temporal.namespace":                       "default",
		"temporal.taskQueue":                       "rebound",
		"secret.name":                              nil,
		"secret.clickhouseDsnKey":                  nil,
		"secret.redactionKeyKey":                   nil,
		"worker.maxConcurrentShards":               nil,
		"resources.requests.cpu":                   nil,
		"resources.limits.memory":                  nil,
		"autoscaling.enabled":                      false,
		"serviceAccount.create":                    true,
		"podSecurityContext.runAsNonRoot":          true,
		"securityContext.readOnlyRootFilesystem":   true,
		"securityContext.allowPrivilegeEscalation": false,
		"nodeSelector":                             nil,
		"tolerations":                              nil,
		"affinity":                                 nil,
	}
	for path, v := range want {
		got, ok := lookup(m, path)
		if !ok {
			t.Errorf("values.yaml: %s missing", path)
			continue
		}
		if v != nil && got != v {
			t.Errorf("values.yaml: %s = %v, want %v", path, got, v)
		}
	}
	if uid, _ := lookup(m, "podSecurityContext.runAsUser"); uid == 0 {
		t.Error("values.yaml: podSecurityContext.runAsUser must not be root")
	}

	// Documented line by line: every key has a comment above it or beside it.
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(path+"."+k.Value, ".")
			if strings.TrimSpace(k.HeadComment) == "" && strings.TrimSpace(k.LineComment) == "" && strings.TrimSpace(v.LineComment) == "" {
				t.Errorf("values.yaml: %s has no comment", p)
			}
			walk(v, p)
		}
	}
	walk(root, "")

	// No credentials in values: the DSN and the redaction key live in a Secret.
	data, _ := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.Contains(line, "clickhouse://") || regexp.MustCompile(`(?i)password\s*:`).MatchString(line) {
			t.Errorf("values.yaml carries a credential: %q", line)
		}
	}

	// values.schema.json covers exactly the top-level keys of values.yaml.
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	sdata, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sdata, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var missing, extra []string
	for k := range m {
		if _, ok := schema.Properties[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range schema.Properties {
		if _, ok := m[k]; !ok && k != "global" {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("values.schema.json out of step with values.yaml: not in schema %v, not in values %v", missing, extra)
	}
}

var valuesRefRe = regexp.MustCompile(`\.Values\.([A-Za-z0-9_.]+)`)

// TestTemplatesUseDefinedValues: every .Values path a template reads is in
// values.yaml (a typo would render as empty without helm complaining).
func TestTemplatesUseDefinedValues(t *testing.T) {
	_, m := loadValues(t)
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	tests, err := filepath.Glob(filepath.Join(chartDir, "templates", "tests", "*"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no helm test template: %v", err)
	}
	files = append(slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "tests" }), tests...)
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, mm := range valuesRefRe.FindAllStringSubmatch(string(data), -1) {
			if _, ok := lookup(m, strings.TrimSuffix(mm[1], ".")); !ok {
				t.Errorf("%s: .Values.%s is not in values.yaml", filepath.Base(f), mm[1])
			}
		}
		for _, k := range regexp.MustCompile(`(?m)^kind:\s*(\w+)`).FindAllStringSubmatch(string(data), -1) {
			kinds[k[1]] = true
		}
	}
	for _, k := range []string{"Deployment", "ConfigMap", "ServiceAccount", "HorizontalPodAutoscaler"} {
		if !kinds[k] {
			t.Errorf("no template makes a %s", k)
		}
	}
	if _, err := os.Stat(filepath.Join(chartDir, "templates", "NOTES.txt")); err != nil {
		t.Error(err)
	}
}

// ---- ClickHouse users.d ----

type chUsers struct {
	Profiles struct {
		Items []xmlElem `xml:",any"`
	} `xml:"profiles"`
	Users struct {
		Items []struct {
			XMLName  xml.Name
			Password *struct {
				FromEnv string `xml:"from_env,attr"`
				Text    string `xml:",chardata"`
			} `xml:"password"`
			Profile string   `xml:"profile"`
			Grants  []string `xml:"grants>query"`
		} `xml:",any"`
	} `xml:"users"`
}

type xmlElem struct {
	XMLName xml.Name
	Text    string    `xml:",chardata"`
	Items   []xmlElem `xml:",any"`
}

func loadUsers(t *testing.T) chUsers {
	t.Helper()
	data, err := os.ReadFile("clickhouse/users.d/rebound.xml")
	if err != nil {
		t.Fatal(err)
	}
	var u chUsers
	if err := xml.Unmarshal(data, &u); err != nil {
		t.Fatalf("users.d/rebound.xml: %v", err)
	}
	return u
}

func TestClickHouseUsers(t *testing.T) {
	u := loadUsers(t)
	c := loadCompose(t)
	profiles := map[string]bool{}
	for _, p := range u.Profiles.Items {
		profiles[p.XMLName.Local] = true
	}
	users := map[string]bool{}
	for _, usr := range u.Users.Items {
		name := usr.XMLName.Local
		users[name] = true
		if usr.Password == nil || usr.Password.FromEnv == "" || strings.TrimSpace(usr.Password.Text) != "" {
			t.Errorf("user %s: the password must come from_env, never inline", name)
		} else if _, ok := c.Services["clickhouse"].Environment[usr.Password.FromEnv]; !ok {
			t.Errorf("user %s reads %s, which compose.yaml does not set for clickhouse", name, usr.Password.FromEnv)
		}
		if !profiles[usr.Profile] {
			t.Errorf("user %s: profile %q is not defined here", name, usr.Profile)
		}
		if len(usr.Grants) == 0 {
			t.Errorf("user %s has no grants", name)
		}
	}
	if !users["rebound"] {
		t.Error("no rebound user")
	}
}

// TestClickHouseProfileSettings checks, on the real engine, that every
// setting the profiles name exists and accepts its value, and that the
// grants parse.
func TestClickHouseProfileSettings(t *testing.T) {
	conn := requireEngine(t)
	u := loadUsers(t)
	n := 0
	for _, p := range u.Profiles.Items {
		for _, s := range p.Items {
			if s.XMLName.Local == "constraints" {
				for _, c := range s.Items {
					rows := runSQL(t, conn, "settings", fmt.Sprintf("SELECT name FROM system.settings WHERE name = '%s'", c.XMLName.Local))
					if len(rows) != 1 {
						t.Errorf("profile %s: constraint on unknown setting %s", p.XMLName.Local, c.XMLName.Local)
					}
				}
				continue
			}
			n++
			name, val := s.XMLName.Local, strings.TrimSpace(s.Text)
			rows := runSQL(t, conn, "settings", fmt.Sprintf("SELECT name FROM system.settings WHERE name = '%s'", name))
			if len(rows) != 1 {
				t.Errorf("profile %s: unknown setting %s", p.XMLName.Local, name)
				continue
			}
			// The value parses for this setting: a SETTINGS clause on a no-op query.
			q := fmt.Sprintf("SELECT 1 SETTINGS %s = %s", name, sqlValue(val))
			if name == "readonly" {
				continue // readonly cannot be set per query; it is a profile-only switch
			}
			if _, err := conn.Query(context.Background(), q, "TabSeparated"); err != nil {
				t.Errorf("profile %s: %s = %s: %v", p.XMLName.Local, name, val, err)
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d settings checked", n)
	}
	for _, usr := range u.Users.Items {
		for _, g := range usr.Grants {
			if _, err := conn.Query(context.Background(), "EXPLAIN AST "+g+" TO someone", "TabSeparated"); err != nil {
				t.Errorf("user %s: grant %q does not parse: %v", usr.XMLName.Local, g, err)
			}
		}
	}
}

func sqlValue(v string) string {
	if regexp.MustCompile(`^-?\d+(\.\d+)?$`).MatchString(v) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
}

// TestFlagsAndEnvExist: the flags and REBOUND_* variables the chart and
// compose.yaml pass to rebound are ones the CLI defines.
func TestFlagsAndEnvExist(t *testing.T) {
	var src strings.Builder
	files, _ := filepath.Glob("../cmd/rebound/*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(data)
	}
	cli := src.String()
	if cli == "" {
		t.Fatal("no CLI source found")
	}
	var used strings.Builder
	for _, f := range []string{"compose.yaml", filepath.Join(chartDir, "templates", "deployment.yaml"), filepath.Join(chartDir, "templates", "configmap.yaml")} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		used.Write(data)
	}
	flags := regexp.MustCompile(`--([a-z][a-z0-9-]+)=`).FindAllStringSubmatch(used.String(), -1)
	if len(flags) == 0 {
		t.Fatal("no flags found")
	}
	for _, m := range flags {
		if !strings.Contains(cli, `"`+m[1]+`"`) {
			t.Errorf("flag --%s is not defined by cmd/rebound", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`\b(REBOUND_(?:TEMPORAL_ADDRESS|NAMESPACE|TASK_QUEUE|CLICKHOUSE_DSN|REDACTION_KEY))\b`).FindAllStringSubmatch(used.String(), -1) {
		if !strings.Contains(cli, `"`+m[1]+`"`) {
			t.Errorf("%s is not read by cmd/rebound", m[1])
		}
	}
}

// TestReadmeSQLParses: the SQL statements in deploy/README.md parse on the
// real engine (EXPLAIN AST; nothing is executed).
func TestReadmeSQLParses(t *testing.T) {
	conn := requireEngine(t)
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	n := 0
	for _, b := range blocks {
		for _, stmt := range strings.Split(b[1], ";") {
			if stmt = strings.TrimSpace(stmt); stmt == "" {
				continue
			}
			n++
			if _, err := conn.Query(context.Background(), "EXPLAIN AST "+stmt, "TabSeparated"); err != nil {
				t.Errorf("README.md: %q does not parse: %v", stmt, err)
			}
		}
	}
	if n == 0 {
		t.Error("no SQL found in README.md")
	}
}

// TestPairedWeightedView checks the paired_weighted view (read by the
// dashboard's paired panels) against hand-computed values and against
// stats.PairedClustered, the computation `rebound compare` uses.
func TestPairedWeightedView(t *testing.T) {
	conn := requireEngine(t)
	rows := runSQL(t, conn, "paired_weighted", "SELECT * FROM rebound.paired_weighted WHERE sweep_id = '"+goldenSweep+"'")
	r := one(t, "paired_weighted", rows, map[string]string{"baseline_arm": "base", "candidate_arm": "cand", "metric": "unsafe_action"})
	// By hand (report's TestCompareWeightedByHand): Σw = 16, Σw·d = 11,
	// Δw = 11/16; Δ = 2/6; cluster residuals 3.125, −2.375, −0.75;
	// SE = √(3/2 · 15.96875)/16; t_2 = 4.302652729749464 (exact at 2 df).
	near(t, "unsafe", "weighted_delta", r, 11.0/16)
	near(t, "unsafe", "delta", r, 2.0/6)
	near(t, "unsafe", "cases", r, 3)
	near(t, "unsafe", "pairs", r, 6)
	near(t, "unsafe", "sum_weight", r, 16)
	near(t, "unsafe", "weighted_baseline_rate", r, 1.0/16)
	near(t, "unsafe", "weighted_candidate_rate", r, 12.0/16)
	se := math.Sqrt(1.5*15.96875) / 16
	near(t, "unsafe", "weighted_delta_se", r, se)
	near(t, "unsafe", "weighted_delta_ci95_low", r, 11.0/16-4.302652729749464*se)
	near(t, "unsafe", "weighted_delta_ci95_high", r, 11.0/16+4.302652729749464*se)
	back := one(t, "paired_weighted", rows, map[string]string{"baseline_arm": "cand", "candidate_arm": "base", "metric": "unsafe_action"})
	near(t, "unsafe reversed", "weighted_delta", back, -11.0/16)
	near(t, "unsafe reversed", "weighted_delta_se", back, se)

	// Five cases (df 4): the same numbers as stats.PairedClustered; the
	// interval's t quantile is the Cornish-Fisher series, within 1e-3 of
	// t_4 = 2.776445105 here.
	var obs []stats.WeightedPair
	for _, c := range goldenCases {
		for seed := range 2 {
			obs = append(obs, stats.WeightedPair{Cluster: c.scenario, A: b01(c.base[seed]), B: b01(c.cand[seed]), W: c.weight})
		}
	}
	want := stats.PairedClustered(obs, 0.95, 1)
	r = one(t, "paired_weighted", rows, map[string]string{"baseline_arm": "base", "candidate_arm": "cand", "metric": "duplicate_side_effect"})
	near(t, "duplicate", "weighted_delta", r, want.Diff)
	near(t, "duplicate", "weighted_delta_se", r, want.SE)
	near(t, "duplicate", "cases", r, 5)
	if lo := num(t, r, "weighted_delta_ci95_low"); math.Abs(lo-want.CI.Lo) > 1e-3*want.SE {
		t.Errorf("duplicate: ci95_low %v, want %v (t on 4 df)", lo, want.CI.Lo)
	}
	// The harm index here is the duplicate (unsafe agrees where tested).
	h := one(t, "paired_weighted", rows, map[string]string{"baseline_arm": "base", "candidate_arm": "cand", "metric": "harm"})
	near(t, "harm", "weighted_delta", h, want.Diff)
}

func b01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
