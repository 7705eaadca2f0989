package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/core/agent"
	"rebound/core/agent/command"
	"rebound/core/toolserver"
	"rebound/core/trial"
	"rebound/internal/devstack/devstacktest"
)

// bridge is what `rebound mcp-stdio --url URL` runs (toolserver.Bridge on
// stdin and stdout): the test binary offered as REBOUND_BIN plays it, and
// says on stderr whether the trial's variables reached it.
func bridge(args []string) int {
	fs := flag.NewFlagSet("mcp-stdio", flag.ContinueOnError)
	url := fs.String("url", "", "")
	if err := fs.Parse(args); err != nil || *url == "" {
		fmt.Fprintln(os.Stderr, "mcp-stdio: --url is required")
		return 2
	}
	_, inherited := os.LookupEnv(command.EnvMCPURL)
	fmt.Fprintf(os.Stderr, "bridge: %s inherited=%v\n", command.EnvMCPURL, inherited)
	if err := toolserver.Bridge(context.Background(), *url, &toolserver.LineTransport{Reader: os.Stdin, Writer: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// The process learns its budgets from its environment, and gets a
// ready-made MCP server config: the stdio bridge (REBOUND_BIN) with the
// trial's URL in its arguments.
func TestBudgetsAndServerConfigInEnvironment(t *testing.T) {
	command.SetBinary(agentBinary)
	defer command.SetBinary("")
	spec := chargeSpec(t) // budget: 6 calls, 4 replans, 60000 ms
	res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "env"), Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(res.Outcome.Process.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	for k, want := range map[string]string{command.EnvCallBudget: "6", command.EnvDeadlineMs: "60000", command.EnvReplanBudget: "4",
		command.EnvCostLimit: "0", command.EnvRetryLimit: fmt.Sprint(spec.Scenario.EffectiveRetryLimit()), command.EnvBin: agentBinary} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(env[command.EnvMCPConfig]), &cfg); err != nil {
		t.Fatalf("%s=%q: %v", command.EnvMCPConfig, env[command.EnvMCPConfig], err)
	}
	s := cfg.MCPServers["rebound"]
	if s.Type != "stdio" || s.Command != agentBinary || strings.Join(s.Args, " ") != "mcp-stdio --url "+env[command.EnvMCPURL] {
		t.Errorf("server config %+v (url %s)", s, env[command.EnvMCPURL])
	}
	// Without a binary to offer, the config is the HTTP endpoint itself.
	if got := command.MCPConfig("", "http://127.0.0.1:1/x/mcp"); got != `{"mcpServers":{"rebound":{"type":"http","url":"http://127.0.0.1:1/x/mcp"}}}` {
		t.Errorf("config without a binary: %s", got)
	}
}

// The documented stdio setup works unchanged with a client that strips the
// environment: the official TypeScript SDK's StdioClientTransport, from a
// sealed command arm, starts REBOUND_BIN with the arguments of
// REBOUND_MCP_CONFIG, and the trial is graded on what crossed the bridge.
func TestTypeScriptStdioClientThroughTheBridge(t *testing.T) {
	launcher := devstacktest.ExampleAgent(t)
	command.SetBinary(agentBinary)
	defer command.SetBinary("")
	sdk := filepath.Clean(filepath.Join(filepath.Dir(launcher), "..", "..", "..", ".cache", "agents", "openai-agents-ts", "node_modules", "@modelcontextprotocol", "sdk"))
	script, err := filepath.Abs("testdata/stdio-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	charge := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
	calls, _ := json.Marshal([]map[string]any{
		call("payments__charge", charge), call("wait", map[string]any{"ms": 1000}),
		call("payments__charge", charge), call("wait", map[string]any{"ms": 2000}),
		call("payments__charge", charge), call("trial_status", map[string]any{}),
		call("submit_claim", map[string]any{"status": "completed", "charged": true}),
	})
	a := newAgent(t, command.Config{Arm: "ts-stdio", Command: []string{"node", script}, Timeout: time.Minute,
		Env:      map[string]string{"MCP_SDK_DIR": sdk, "MCP_CALLS": string(calls)},
		ReadOnly: []string{filepath.Dir(script), filepath.Dir(filepath.Dir(sdk))}})
	res, err := trial.Run(context.Background(), chargeSpec(t), a)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Outcome.Process
	if p.ExitCode != 0 {
		t.Fatalf("the stdio client exited %d:\n%s\n%s", p.ExitCode, p.Stdout, p.Stderr)
	}
	if !strings.Contains(p.Stderr, "bridge: REBOUND_MCP_URL inherited=false") {
		t.Errorf("the bridge did not run with a stripped environment: stderr %s", p.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(p.Stdout), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines:\n%s", len(lines), p.Stdout)
	}
	var listing struct {
		Type         string   `json:"type"`
		Instructions string   `json:"instructions"`
		Tools        []string `json:"tools"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &listing); err != nil {
		t.Fatal(err)
	}
	if listing.Type != "stdio" || !strings.Contains(listing.Instructions, "at most 6 tool calls") || !strings.Contains(strings.Join(listing.Tools, " "), "trial_status") {
		t.Errorf("listing through the bridge: %+v", listing)
	}
	var status struct {
		Content struct {
			Data map[string]any `json:"data"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(lines[6]), &status); err != nil || status.Content.Data["calls_used"] != 3.0 || status.Content.Data["calls_left"] != 3.0 {
		t.Errorf("trial_status through the bridge: %s (%v)", lines[6], err)
	}
	if res.Outcome.Claim != `{"charged":true,"status":"completed"}` || len(res.Ledger.Attempts) != 3 {
		t.Errorf("claim %s, %d attempts", res.Outcome.Claim, len(res.Ledger.Attempts))
	}
	if r := res.Verdict.Recovered; r == nil || !*r {
		t.Errorf("verdict %+v", res.Verdict)
	}
}

// A command that cannot start is the arm's configuration error, named by
// the arm, sealed or not: not found, not executable, or a shell's 126/127
// before any tool call. The same exit after a tool call is the agent's.
func TestLaunchFailuresAreConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := chargeSpec(t)
	for _, unsealed := range []bool{false, true} {
		for name, argv := range map[string][]string{
			"missing":        {filepath.Join(dir, "no-such-agent")},
			"not executable": {plain},
			"shell 127":      {"sh", "-c", "no-such-command-rebound"},
			"shell 126":      {"sh", "-c", plain},
		} {
			_, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Arm: "mine", Command: argv, Unsealed: unsealed, Timeout: time.Minute}))
			if !errors.Is(err, agent.ErrConfig) || !strings.Contains(err.Error(), "arm mine") {
				t.Errorf("unsealed=%v %s: %v, want a configuration error naming arm mine", unsealed, name, err)
			}
		}
		res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Arm: "mine", Command: self(t, "exit127-after-call"), Unsealed: unsealed, Timeout: time.Minute}))
		if err != nil || res.Outcome.Process.ExitCode != 127 {
			t.Errorf("unsealed=%v: exit 127 after a tool call: %v, want a graded trial", unsealed, err)
		}
	}
}

// A refused claim leaves a trace: the process record counts the refusals
// and keeps the last one's reason (trial show prints it).
func TestRefusedClaimIsRecorded(t *testing.T) {
	res, err := trial.Run(context.Background(), chargeSpec(t), newAgent(t, command.Config{Command: self(t, "wrapped-claim"), Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Outcome.Process
	if res.Outcome.Claim != "" || p.ClaimsRefused != 1 || !strings.Contains(p.LastClaimRefusal, "submit_claim's schema") {
		t.Errorf("claim %q, refused %d, last refusal %q (stdout %s)", res.Outcome.Claim, p.ClaimsRefused, p.LastClaimRefusal, p.Stdout)
	}
}
