package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plan's command arms as a user writes them: `[node, agent.mjs]` runs the
// agent.mjs beside the plan (sealed, so its directory is mounted too); an
// arm whose every trial is attrition fails the run (exit 1) and the first
// line of output says so; a command that cannot start stops the sweep with
// exit 2 and a message naming the arm.
func TestRunCommandArmPathsAttritionAndLaunchFailure(t *testing.T) {
	embeddedStack(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the sealed agent reads agent.mjs under its own uid
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	agentJS := `const call = (name, args) => fetch(process.env.REBOUND_TOOLS_URL + '/' + name, {method: 'POST', body: JSON.stringify(args)}).then((r) => r.json());
const st = await call('trial_status', {});
console.log('calls_left ' + st.data.calls_left);
await call('submit_claim', {status: 'blocked', blocked_on: 'payments.charge'});
`
	if err := os.WriteFile(filepath.Join(dir, "agent.mjs"), []byte(agentJS), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	body := "name: command-arms\nseeds: 2\nscenarios: [" + sc + "]\narms:\n" +
		"  - {name: careful, agent: careful}\n" +
		"  - {name: node-beside, agent: command, timeout: 30s, command: [node, agent.mjs]}\n" +
		"  - {name: always-down, agent: command, timeout: 30s, attrition_exit_codes: [75], command: [sh, -c, 'exit 75']}\n"
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	var out, errOut strings.Builder
	code := dispatch(ctx, []string{"run", "--data-dir", data, plan}, &out, &errOut)
	first, _, _ := strings.Cut(out.String(), "\n")
	if code != exitFailed || !strings.Contains(first, "always-down") || !strings.Contains(first, "attrition") || strings.Contains(first, "node-beside") {
		t.Fatalf("run: exit %d, want 1 with the lost arm on the first line:\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "harm") {
		t.Errorf("the report still follows:\n%s", out.String())
	}

	var tj, tjErr strings.Builder
	if code := dispatch(ctx, []string{"sql", "--data-dir", data, "--output", "json",
		"SELECT arm, attrition, JSONExtractInt(process, 'exit_code') AS exit_code, position(JSONExtractString(process, 'stdout'), 'calls_left 6') > 0 AS saw FROM trials WHERE arm = 'node-beside'"}, &tj, &tjErr); code != exitOK {
		t.Fatalf("sql: exit %d\n%s", code, tjErr.String())
	}
	// columns: arm, attrition, exit_code, saw
	if got := tj.String(); strings.Count(got, `["node-beside",0,0,1]`) != 2 {
		t.Errorf("node-beside trials (the agent.mjs beside the plan ran, read its budget): %s", got)
	}

	bad := strings.Replace(body, "[sh, -c, 'exit 75']", "[sh, -c, 'no-such-agent-rebound']", 1)
	if err := os.WriteFile(plan, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code = dispatch(ctx, []string{"run", "--data-dir", data, plan}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "arm always-down") || !strings.Contains(errOut.String(), "127") {
		t.Fatalf("a command that cannot start: exit %d, want 2 naming the arm\n%s\n%s", code, out.String(), errOut.String())
	}
}
