package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

// Your own tools end to end, as a user runs them: `rebound run` on the
// embedded stack over a scenario whose tools are the official MCP
// filesystem server (sealed, fresh per trial); then `rebound replay` of a
// trial whose write answer was lost reproduces its verdicts offline, from
// the recording, without the server.
func TestRunUpstreamScenarioThenReplay(t *testing.T) {
	embeddedStack(t)
	devstacktest.ReferenceServers(t)
	if err := sandbox.Check(); err != nil {
		devstacktest.Unavailable(t, err)
	}
	dir := t.TempDir()
	sc, err := filepath.Abs("../../examples/upstreams/scenarios/fs-config-write.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: upstream-e2e\nseeds: 1\nscenarios: [" + sc + "]\narms:\n  - {name: careful, agent: careful}\n  - {name: naive, agent: naive_retrier}\n"
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
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.TrialsStored != 12 || rep.TrialsPlanned != 12 {
		t.Fatalf("run report: %v %+v\n%s", err, rep, out.String())
	}
	var list, listErr strings.Builder
	if code := dispatch(ctx, []string{"trials", "--data-dir", data, "--output", "json", rep.SweepID}, &list, &listErr); code != exitOK {
		t.Fatalf("trials exit %d\n%s", code, listErr.String())
	}
	var rows []struct {
		TrialID string `json:"trial_id"`
		Variant string `json:"variant"`
		Arm     string `json:"arm"`
	}
	if err := json.Unmarshal([]byte(list.String()), &rows); err != nil || len(rows) != 12 {
		t.Fatalf("trials: %v %s", err, list.String())
	}
	replayed := 0
	for _, r := range rows {
		if r.Variant != "write-answer-lost" && r.Variant != "read-corrupt-once" {
			continue
		}
		var o, e strings.Builder
		code := dispatch(ctx, []string{"replay", "--data-dir", data, "--output", "json", r.TrialID}, &o, &e)
		var res struct {
			Offline bool     `json:"offline"`
			Diffs   []string `json:"diffs"`
		}
		if code != exitOK || json.Unmarshal([]byte(o.String()), &res) != nil || !res.Offline || len(res.Diffs) != 0 {
			t.Fatalf("replay of %s (%s, %s): exit %d %+v\n%s%s", r.TrialID, r.Variant, r.Arm, code, res, o.String(), e.String())
		}
		replayed++
	}
	if replayed != 4 {
		t.Fatalf("replayed %d trials, want 4", replayed)
	}
}
