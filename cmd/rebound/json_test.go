package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"rebound/internal/buildinfo"
	"rebound/internal/devstack/devstacktest"
)

// jsonCommands lists every command that has --output json: a new one must
// get a case in TestJSONOutputOfEveryCommand, which this list is checked
// against.
func jsonCommands(t *testing.T) []string {
	t.Helper()
	root := newRoot()
	setOutput(root, nil, nil)
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if f := c.Flags().Lookup("output"); f != nil && strings.Contains(f.Usage, "json") {
			out = append(out, strings.TrimPrefix(c.CommandPath(), "rebound "))
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

var snakeCase = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// dataKeys are the JSON paths whose objects are keyed by data (arm names,
// metric names as stored, SQL column values), not by field names: their
// keys are not held to snake_case. "[]" stands for any array index.
var dataKeys = map[string]bool{
	"regrade.arms":       true, // arm -> its stored copy's name
	"regrade.changed":    true, // arm -> counts
	"trend.runs[].rates": true, // arm -> metric -> rate
}

// tuples are the paths whose value is a fixed-size tuple of numbers, null
// when there is none (a value not there, like a rate NOT TESTED): not a
// list that may be empty.
var tuples = map[string]bool{
	"compare.by_scenario[].metrics[].table_n11_n12_n21_n22":    true,
	"compare.by_fault_class[].metrics[].table_n11_n12_n21_n22": true,
	"compare.metrics[].table_n11_n12_n21_n22":                  true,
	"gate.by_scenario[].metrics[].table_n11_n12_n21_n22":       true,
	"gate.by_fault_class[].metrics[].table_n11_n12_n21_n22":    true,
	"gate.metrics[].table_n11_n12_n21_n22":                     true,
}

// jsonShape walks a decoded JSON value: it reports keys that are not
// snake_case (outside dataKeys) and records the JSON types seen at each
// path (array indices collapsed to "[]").
func jsonShape(v any, path string, bad *[]string, types map[string]map[string]bool) {
	kind := "null"
	switch x := v.(type) {
	case map[string]any:
		kind = "object"
		for k, e := range x {
			if !dataKeys[path] && !snakeCase.MatchString(k) {
				*bad = append(*bad, path+"."+k)
			}
			child := path + "." + k
			if dataKeys[path] {
				child = path + ".*"
			}
			jsonShape(e, child, bad, types)
		}
	case []any:
		kind = "array"
		for _, e := range x {
			jsonShape(e, path+"[]", bad, types)
		}
	case string:
		kind = "string"
	case float64:
		kind = "number"
	case bool:
		kind = "bool"
	}
	if types[path] == nil {
		types[path] = map[string]bool{}
	}
	types[path][kind] = true
}

// Every command's --output json on a real stack: one JSON document on
// stdout, every key snake_case, and an empty list is [] (never null: no
// path is null in one output and a list in another, and the lists that are
// empty here are []). Covers every command with --output json, the cluster
// ones (sweep, schedule) against a dev server with a worker.
func TestJSONOutputOfEveryCommand(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_TEMPORAL_BIN", devstacktest.TemporalBin(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	dir := t.TempDir()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: json-e2e\nseeds: 2\nscenarios:\n  - " + abs("../../examples/scenarios/charge-502-twice.yaml") +
		"\n  - " + abs("../../examples/scenarios/charge-never-recovers.yaml") +
		"\narms:\n  - {name: careful, agent: careful}\n  - {name: fabricator-v2, agent: fabricator}\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	types := map[string]map[string]bool{}
	outputs := map[string]any{}
	covered := map[string]bool{}
	// run runs one command with --output json, checks its exit and its
	// JSON, and returns the decoded value.
	run := func(name string, want int, args ...string) any {
		t.Helper()
		code, out, errOut := runCLI(t, append(args, "--output", "json")...)
		if code != want {
			t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, code, want, out, errOut)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: stdout is not JSON: %v\n%s", name, err, out)
		}
		if dec.More() {
			t.Fatalf("%s: more than one JSON document on stdout:\n%s", name, out)
		}
		var bad []string
		jsonShape(v, strings.Fields(name)[0], &bad, types)
		if len(bad) > 0 {
			t.Errorf("%s: keys not in snake_case: %v", name, bad)
		}
		outputs[name] = v
		return v
	}
	cover := func(cmd string) { covered[cmd] = true }

	rep := run("run", exitOK, "run", "--data-dir", data, plan).(map[string]any)
	cover("run")
	sweep := rep["sweep_id"].(string)
	local := []string{"--data-dir", data}
	run("report", exitOK, append([]string{"report", sweep}, local...)...)
	cover("report")
	run("compare", exitOK, append([]string{"compare", "--baseline", "careful", "--candidate", "fabricator-v2", sweep}, local...)...)
	cover("compare")
	run("sweeps", exitOK, append([]string{"sweeps"}, local...)...)
	if v := run("sweeps --running", exitOK, append([]string{"sweeps", "--running"}, local...)...); !isEmptyList(v) {
		t.Errorf("sweeps --running with none running: %v, want []", v)
	}
	cover("sweeps")
	trials := run("trials", exitOK, append([]string{"trials", sweep}, local...)...).([]any)
	run("trials --failing", exitOK, append([]string{"trials", "--failing", sweep}, local...)...)
	cover("trials")
	var passing, failing string
	for _, tr := range trials {
		m := tr.(map[string]any)
		if isEmptyList(m["bad_outcomes"]) {
			passing = m["trial_id"].(string)
		} else {
			failing = m["trial_id"].(string)
		}
	}
	if passing == "" || failing == "" {
		t.Fatalf("want a trial with and one without bad outcomes (bad_outcomes [] when none): %v", trials)
	}
	if v := run("trial show (passing)", exitOK, append([]string{"trial", "show", passing}, local...)...).(map[string]any); !isEmptyList(v["failed_checks"]) {
		t.Errorf("trial show of a passing trial: failed_checks %v, want []", v["failed_checks"])
	} else if v["rebound_version"] != buildinfo.Get().Short() || v["sweep_id"] != sweep || v["grader_version"].(float64) < 1 {
		t.Errorf("trial show: the builds are not shown: rebound_version %v, sweep_id %v, grader_version %v", v["rebound_version"], v["sweep_id"], v["grader_version"])
	}
	if code, out, _ := runCLI(t, append([]string{"trial", "show", passing}, local...)...); code != exitOK || !strings.Contains(out, "build: sweep "+sweep+" registered by rebound "+buildinfo.Get().Short()+"; graded by grader v") {
		t.Errorf("trial show (text) does not show the builds:\n%s", out)
	}
	run("trial show (failing)", exitOK, append([]string{"trial", "show", failing}, local...)...)
	cover("trial show")
	run("replay", exitOK, append([]string{"replay", failing}, local...)...)
	cover("replay")
	run("judge agreement", exitOK, append([]string{"judge", "agreement", sweep}, local...)...)
	cover("judge agreement")
	if v := run("judge queue", exitOK, append([]string{"judge", "queue", sweep}, local...)...); !isEmptyList(v) {
		t.Errorf("judge queue of a sweep without a judge: %v, want []", v)
	}
	cover("judge queue")
	if v := run("review export", exitOK, append([]string{"review", "export", sweep}, local...)...); !isEmptyList(v) {
		t.Errorf("review export of a sweep nobody reviewed: %v, want []", v)
	}
	cover("review export")
	regraded := run("regrade", exitOK, append([]string{"regrade", sweep}, local...)...).(map[string]any)
	cover("regrade")
	// The regraded sweep holds each arm twice, graded alike: the gate passes.
	gates := abs("../../examples/gates/release.yaml")
	run("gate", exitOK, append([]string{"gate", "--baseline", "careful@stored", "--candidate", "careful", "--thresholds", gates, regraded["into"].(string)}, local...)...)
	cover("gate")
	run("sql", exitOK, append([]string{"sql", "SELECT count() AS n FROM rebound.trials"}, local...)...)
	run("sql (no rows)", exitOK, append([]string{"sql", "SELECT 1 AS n WHERE 0"}, local...)...)
	cover("sql")
	run("plan estimate", exitOK, append([]string{"plan", "estimate", plan}, local...)...)
	cover("plan estimate")
	run("scenario lint", exitOK, "scenario", "lint", abs("../../examples/scenarios/charge-502-twice.yaml"))
	cover("scenario lint")
	run("scenario variants", exitOK, "scenario", "variants", abs("../../examples/scenarios/charge-502-twice.yaml"))
	cover("scenario variants")
	if v := run("scenario check", exitOK, "scenario", "check", abs("../../examples/scenarios/charge-timeout-before-send.yaml"), "--seeds", "1").(map[string]any); v["failed"] != 0.0 || len(v["results"].([]any)) == 0 {
		t.Errorf("scenario check: %v", v)
	}
	cover("scenario check")
	run("scenario import", exitOK, "scenario", "import", seed004)
	run("scenario import -o", exitOK, "scenario", "import", seed004, "-o", filepath.Join(dir, "imported.yaml"))
	cover("scenario import")
	run("version", exitOK, "version")
	cover("version")
	// sweep cancel on the embedded stack: the sweep has ended.
	if v := run("sweep cancel", exitOK, append([]string{"sweep", "cancel", sweep}, local...)...).(map[string]any); v["result"] != "already_ended" || v["status"] != "completed" {
		t.Errorf("sweep cancel of a completed sweep: %v", v)
	}

	// The cluster commands: a worker on the dev server, its own store.
	ctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	queue := "json-e2e"
	workerData := filepath.Join(dir, "worker")
	cluster := []string{"--temporal-address", srv.Address(), "--task-queue", queue}
	var workerErr devstacktest.Output
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, append([]string{"worker", "--data-dir", workerData}, cluster...), &devstacktest.Output{}, &workerErr)
	}()
	started := run("sweep start --wait", exitOK, append([]string{"sweep", "start", "--wait", plan}, cluster...)...).(map[string]any)
	run("sweep status", exitOK, append([]string{"sweep", "status", started["sweep_id"].(string)}, cluster...)...)
	cover("sweep start")
	cover("sweep status")
	cover("sweep cancel")
	name := "json-e2e"
	run("schedule create", exitOK, append([]string{"schedule", "create", "--every", "24h", "--paused", name, plan}, cluster...)...)
	run("schedule list", exitOK, append([]string{"schedule", "list"}, cluster...)...)
	run("schedule describe", exitOK, append([]string{"schedule", "describe", name}, cluster...)...)
	run("schedule update", exitOK, append([]string{"schedule", "update", "--cron", "0 3 * * *", name, plan}, cluster...)...)
	run("schedule pause", exitOK, append([]string{"schedule", "pause", name}, cluster...)...)
	run("schedule resume", exitOK, append([]string{"schedule", "resume", name}, cluster...)...)
	if v := run("schedule trigger", exitOK, append([]string{"schedule", "trigger", name}, cluster...)...).(map[string]any); v["started"] != true || v["sweep_id"] == nil {
		t.Errorf("schedule trigger: %v, want the run it started", v)
	}
	// The triggered run completes on the worker before trend reads it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v := run("schedule describe", exitOK, append([]string{"schedule", "describe", name}, cluster...)...).(map[string]any)
		if isEmptyList(v["running"]) && !isEmptyList(v["recent_runs"]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the triggered run did not end: %v\nworker: %s", v, workerErr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	run("schedule delete", exitOK, append([]string{"schedule", "delete", name}, cluster...)...)
	if v := run("schedule list (none)", exitOK, append([]string{"schedule", "list"}, cluster...)...); !isEmptyList(v) {
		t.Errorf("schedule list with no schedule: %v, want []", v)
	}
	for _, s := range []string{"create", "list", "describe", "update", "pause", "resume", "trigger", "delete"} {
		cover("schedule " + s)
	}
	stopWorker()
	if c := <-done; c != exitOK {
		t.Fatalf("worker exit %d\n%s", c, workerErr.String())
	}
	run("trend", exitOK, "trend", "--data-dir", workerData, name)
	cover("trend")

	for _, cmd := range jsonCommands(t) {
		if !covered[cmd] {
			t.Errorf("rebound %s has --output json but no case in this test", cmd)
		}
	}
	// One shape per path: a list is never null elsewhere.
	var paths []string
	for p := range types {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if types[p]["null"] && (types[p]["array"] || types[p]["object"]) && !tuples[p] {
			t.Errorf("%s is null in one output and a list or object in another (an empty list is [])", p)
		}
	}
	if t.Failed() {
		names := make([]string, 0, len(outputs))
		for n := range outputs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			b, _ := json.Marshal(outputs[n])
			t.Logf("%s: %.600s", n, b)
		}
	}
}

func isEmptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

// Every command's JSON goes through writeJSON (or a results package's
// WriteJSON): no command file builds its own encoder.
func TestCommandsWriteJSONThroughOneFunction(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "jsonout.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "json.NewEncoder") {
			t.Errorf("%s encodes JSON itself: use writeJSON (jsonout.go), which writes empty lists as []", f)
		}
	}
}

// writeJSON writes nil slices and maps as [] and {}, however deep, and
// leaves nil pointers (a value that is not there) null.
func TestWriteJSONEmptyLists(t *testing.T) {
	type inner struct {
		List []string       `json:"list"`
		Map  map[string]int `json:"map"`
	}
	type outer struct {
		Inner   inner          `json:"inner"`
		Ptr     *inner         `json:"ptr"`
		NilPtr  *float64       `json:"nil_ptr"`
		Items   []inner        `json:"items"`
		Any     any            `json:"any"`
		When    time.Time      `json:"when"`
		Raw     []byte         `json:"raw"`
		ByName  map[string]any `json:"by_name"`
		private []string
	}
	v := outer{Ptr: &inner{}, Items: []inner{{}}, Any: inner{}, ByName: map[string]any{"a": []int(nil)}, private: []string{"x"}}
	var b strings.Builder
	if err := writeJSON(&b, v, false); err != nil {
		t.Fatal(err)
	}
	want := `{"inner":{"list":[],"map":{}},"ptr":{"list":[],"map":{}},"nil_ptr":null,"items":[{"list":[],"map":{}}],"any":{"list":[],"map":{}},"when":"0001-01-01T00:00:00Z","raw":null,"by_name":{"a":[]}}` + "\n"
	if b.String() != want {
		t.Fatalf("got  %s\nwant %s", b.String(), want)
	}
	if v.Inner.List != nil || v.Ptr.List != nil {
		t.Fatal("writeJSON modified its argument")
	}
	b.Reset()
	if err := writeJSON(&b, []string(nil), false); err != nil || b.String() != "[]\n" {
		t.Fatalf("nil list: %q %v", b.String(), err)
	}
}
