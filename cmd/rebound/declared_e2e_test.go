package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A sweep over declared worlds, end to end on the embedded stack: `rebound
// run` loads scenarios that name world files (the example support desk,
// shipping and calendar worlds, and twins of payments scenarios on the
// declared payments world), the worker builds every world from the
// content the stored plan carries (no file is read after loading), and
// every trial is stored with the declared world's catalog version. The
// twins' stored outcomes equal their built-in originals', trial by trial.
func TestRunOnDeclaredWorlds(t *testing.T) {
	embeddedStack(t)
	dir := t.TempDir()
	examples, err := filepath.Abs("../../examples/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	// The twins live beside a copy of the payments world, so world:
	// ./worlds/payments.yaml resolves against their own directory.
	if err := os.MkdirAll(filepath.Join(dir, "worlds"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(examples, "worlds", "payments.yaml"), filepath.Join(dir, "worlds", "payments.yaml"))
	twins := []string{"refund-timeout-after-send", "charge-timeout-before-send", "refund-every-position"}
	worldLine := regexp.MustCompile(`(?m)^world:[ \t]*payments[ \t]*$`)
	nameLine := regexp.MustCompile(`(?m)^name:[ \t]*(\S+)[ \t]*$`)
	scenarios := []string{}
	for _, name := range twins {
		data, err := os.ReadFile(filepath.Join(examples, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		twin := worldLine.ReplaceAll(data, []byte("world: ./worlds/payments.yaml"))
		twin = nameLine.ReplaceAll(twin, []byte("name: $1-declared"))
		path := filepath.Join(dir, name+"-declared.yaml")
		if err := os.WriteFile(path, twin, 0o644); err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, filepath.Join(examples, name+".yaml"), path)
	}
	for _, name := range []string{"desk-sla-escalation", "ship-label-once", "cal-book-room", "cal-free-or-busy"} {
		scenarios = append(scenarios, filepath.Join(examples, name+".yaml"))
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: declared-e2e\nseeds: 1\nshard_size: 40\nscenarios:\n"
	for _, s := range scenarios {
		body += "  - " + s + "\n"
	}
	body += "arms:\n  - {name: careful, agent: careful}\n  - {name: blind, agent: blind_resubmitter}\n  - {name: fabricator, agent: fabricator}\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	var out, errOut strings.Builder
	if code := dispatch(ctx, []string{"run", "--data-dir", data, "--output", "json", plan}, &out, &errOut); code != exitOK {
		t.Fatalf("run exit %d\n%s", code, errOut.String())
	}
	var rep struct {
		SweepID       string `json:"sweep_id"`
		TrialsStored  int    `json:"trials_stored"`
		TrialsPlanned int    `json:"trials_planned"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.TrialsStored != rep.TrialsPlanned || rep.TrialsPlanned < 200 {
		t.Fatalf("run report: %v %+v\n%s", err, rep, out.String())
	}
	rows := func(query string) [][]any {
		t.Helper()
		var q, qe strings.Builder
		if code := dispatch(ctx, []string{"sql", "--data-dir", data, "--output", "json", query}, &q, &qe); code != exitOK {
			t.Fatalf("sql %s: exit %d\n%s%s", query, code, q.String(), qe.String())
		}
		var res struct {
			Rows [][]any `json:"rows"`
		}
		if err := json.Unmarshal([]byte(q.String()), &res); err != nil {
			t.Fatalf("sql output: %v\n%s", err, q.String())
		}
		return res.Rows
	}
	sweep := "sweep_id = '" + rep.SweepID + "'"
	// Declared worlds record the version that covers their file: "d" and
	// twelve hex digits; built-in ones their catalog hash.
	versions := rows("SELECT scenario, any(catalog_version) AS v, uniqExact(catalog_version) AS n FROM rebound.trials FINAL WHERE " + sweep + " GROUP BY scenario ORDER BY scenario")
	if len(versions) != len(scenarios) {
		t.Fatalf("stored scenarios %v, want %d", versions, len(scenarios))
	}
	for _, r := range versions {
		name, v, n := fmt.Sprint(r[0]), fmt.Sprint(r[1]), fmt.Sprint(r[2])
		declared := !strings.HasPrefix(name, "refund-") && !strings.HasPrefix(name, "charge-") || strings.HasSuffix(name, "-declared")
		if n != "1" || strings.HasPrefix(v, "d") != declared {
			t.Errorf("scenario %s: catalog version %s (%s distinct), declared %v", name, v, n, declared)
		}
	}
	// The twins' outcomes, claims and stored verdicts are their originals',
	// trial by trial.
	outcomes := rows("SELECT replaceOne(scenario, '-declared', '') AS base, variant, arm, seed, " +
		"groupArray(tuple(scenario, recoverable, recovered, honest_block, premature_block, unsafe_action, duplicate_side_effect, fabricated_claim, tool_failure_injection, graceful_degradation, self_correction, tool_calls, sim_elapsed_ms, claim, verdicts)) AS both " +
		"FROM rebound.trials FINAL WHERE " + sweep + " AND (scenario LIKE 'refund-%' OR scenario LIKE 'charge-%') GROUP BY base, variant, arm, seed ORDER BY base, variant, arm, seed")
	if len(outcomes) < 60 {
		t.Fatalf("only %d twin pairs stored", len(outcomes))
	}
	for _, r := range outcomes {
		pair, ok := r[4].([]any)
		if !ok || len(pair) != 2 {
			t.Fatalf("%v: not a pair", r)
		}
		a, _ := json.Marshal(pair[0].([]any)[1:])
		b, _ := json.Marshal(pair[1].([]any)[1:])
		if string(a) != string(b) {
			t.Errorf("%v/%v %v seed %v: built-in %s, declared %s", r[0], r[1], r[2], r[3], a, b)
		}
	}
	t.Logf("%d trials stored; %d twin trials identical to their built-in originals", rep.TrialsStored, len(outcomes))
	// The declared worlds' own scenarios grade as calibrated: the careful
	// agent never acts unsafely and the blind resubmitter buys two labels.
	harm := rows("SELECT arm, countIf(unsafe_action = 1) AS unsafe, countIf(duplicate_side_effect = 1) AS dup FROM rebound.trials FINAL WHERE " + sweep + " AND scenario = 'ship-label-once' GROUP BY arm ORDER BY arm")
	got := fmt.Sprint(harm)
	if !strings.Contains(got, "[careful 0 0]") || strings.Contains(got, "[blind 0 0]") {
		t.Errorf("ship-label-once harm by arm: %s", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
