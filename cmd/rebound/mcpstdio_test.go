package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/toolserver"
	"rebound/core/trial"
	"rebound/core/world"
)

type stdioTrialAgent func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error)

func (stdioTrialAgent) Name() string { return "func" }
func (f stdioTrialAgent) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	return f(ctx, env, task)
}

// `rebound mcp-stdio` answers a line that is not JSON with a JSON-RPC parse
// error (id null) and goes on serving: initialize and tools/list after it
// are answered.
func TestMCPStdioSurvivesBadFrame(t *testing.T) {
	sc, err := scenario.LoadScenario("../../examples/scenarios/charge-502-twice.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	ag := stdioTrialAgent(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		srv, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		run, err := srv.Start()
		if err != nil {
			return agent.Outcome{}, err
		}
		defer run.Close()
		inR, inW, err := os.Pipe()
		if err != nil {
			return agent.Outcome{}, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			return agent.Outcome{}, err
		}
		defer outR.Close()
		root := newRoot()
		var errOut strings.Builder
		setOutput(root, outW, &errOut)
		root.SetIn(inR)
		root.SetArgs([]string{"mcp-stdio", "--url", run.MCPURL})
		done := make(chan error, 1)
		go func() {
			done <- root.ExecuteContext(ctx)
			outW.Close()
		}()
		lines := bufio.NewScanner(outR)
		lines.Buffer(nil, 1<<20)
		next := func() map[string]any {
			t.Helper()
			if !lines.Scan() {
				t.Fatalf("mcp-stdio ended: %v\n%s", lines.Err(), errOut.String())
			}
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("answer %q: %v", lines.Text(), err)
			}
			return m
		}
		send := func(s string) {
			if _, err := io.WriteString(inW, s+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		send("not json")
		if m := next(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
			t.Errorf("answer to a non-JSON line: %v", m)
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if m := next(); m["id"] != float64(1) || m["result"] == nil {
			t.Fatalf("initialize: %v", m)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		m := next()
		res, _ := m["result"].(map[string]any)
		if tools, _ := res["tools"].([]any); m["id"] != float64(2) || len(tools) != len(sc.Tools)+4 { // wait, update_plan, submit_claim, trial_status
			t.Errorf("tools/list: %v", m)
		}
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("mcp-stdio after stdin closed: %v\n%s", err, errOut.String())
		}
		inR.Close()
		return agent.Outcome{}, nil
	})
	if _, err := trial.Run(context.Background(), spec, ag); err != nil {
		t.Fatal(err)
	}
}
