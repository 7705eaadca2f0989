package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/core/agent"
	"rebound/core/agent/command"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
)

// The test binary doubles as the external agent: run with the argument
// "rebound-helper MODE" it behaves as the agent MODE names, talking to the
// trial's tools over plain HTTP.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "rebound-helper" {
		os.Exit(helper(os.Args[2]))
	}
	if len(os.Args) >= 2 && os.Args[1] == "mcp-stdio" {
		os.Exit(bridge(os.Args[2:]))
	}
	os.Exit(withAgentBinary(m))
}

// agentBinary is a copy of the test binary that a sealed agent, running
// under a uid of its own, can read and run: go test builds into a
// directory only its owner can enter.
var agentBinary string

func withAgentBinary(m *testing.M) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "rebound-agent-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	b, err := os.ReadFile(exe)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	agentBinary = filepath.Join(dir, "agent")
	if err == nil {
		err = os.WriteFile(agentBinary, b, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func helper(mode string) int {
	tools := os.Getenv(command.EnvToolsURL)
	call := func(name string, args any) (int, map[string]any) {
		b, _ := json.Marshal(args)
		resp, err := http.Post(tools+"/"+name, "application/json", strings.NewReader(string(b)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "post:", err)
			os.Exit(70)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	switch mode {
	case "charge": // retry the charge with backoff until it goes through
		args := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
		for i := 0; i < 4; i++ {
			code, body := call("payments.charge", args)
			fmt.Printf("charge attempt %d: %d %v\n", i+1, code, body["code"])
			if code == 200 {
				call("submit_claim", map[string]any{"status": "completed", "charged": true})
				return 0
			}
			call("wait", map[string]any{"ms": 500 << i})
		}
		return 1
	case "env": // print what the process can see, then fail
		wd, _ := os.Getwd()
		fmt.Println("cwd=" + wd)
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		fmt.Fprintln(os.Stderr, "the key is", os.Getenv("OPENAI_API_KEY"))
		return 3
	case "sleep": // claim, then hang past the timeout
		call("submit_claim", map[string]any{"status": "blocked", "blocked_on": "payments__charge"})
		time.Sleep(time.Minute)
		return 0
	case "flood": // claim, then ignore every refusal and keep calling
		call("submit_claim", map[string]any{"status": "completed", "charged": true})
		for {
			call("payments.charge", map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"})
		}
	case "provider-down":
		fmt.Fprintln(os.Stderr, "model provider unreachable")
		return 75
	case "silent":
		return 0
	case "wrapped-claim": // wraps its claim: refused, nothing recorded
		code, body := call("submit_claim", map[string]any{"claim": map[string]any{"status": "completed", "charged": true}})
		fmt.Println("submit_claim:", code, body["code"])
		return 0
	case "exit127-after-call": // reaches its tools, then exits as "not found" would
		call("trial_status", map[string]any{})
		return 127
	}
	if code, ok := hostile(mode, call); ok {
		return code
	}
	return 2
}

func self(t *testing.T, mode string) []string {
	t.Helper()
	return []string{agentBinary, "rebound-helper", mode}
}

func chargeSpec(t testing.TB) trial.Spec {
	t.Helper()
	sc, err := scenario.LoadScenario("../../../examples/scenarios/charge-502-twice.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sc.Variants {
		if v.Name == "502-twice" {
			return trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "ext", Agent: scenario.AgentCommand}, Seed: 1}
		}
	}
	t.Fatal("no variant 502-twice")
	return trial.Spec{}
}

func newAgent(t *testing.T, cfg command.Config) *command.Agent {
	t.Helper()
	a, err := command.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCommandAgentRecovers(t *testing.T) {
	spec := chargeSpec(t)
	res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "charge"), Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Claim != `{"charged":true,"status":"completed"}` {
		t.Errorf("claim %q", res.Outcome.Claim)
	}
	if r := res.Verdict.Recovered; r == nil || !*r {
		t.Errorf("recovered = %v, verdict %+v", r, res.Verdict)
	}
	if n := len(res.Ledger.Attempts); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	p := res.Outcome.Process
	if p == nil || p.ExitCode != 0 || p.TimedOut || !strings.Contains(p.Stdout, "charge attempt 3: 200") {
		t.Errorf("process %+v", p)
	}
	if res.Agent != "command" {
		t.Errorf("agent name %q", res.Agent)
	}
}

func TestCommandEnvironment(t *testing.T) {
	t.Setenv("WORKER_OPENAI_KEY", "key-value-1234567890")
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "clickhouse://u:worker-password@h/db")
	spec := chargeSpec(t)
	a := newAgent(t, command.Config{Command: self(t, "env"), Timeout: time.Minute,
		Env: map[string]string{"MODEL": "m-1"}, EnvFrom: map[string]string{"OPENAI_API_KEY": "WORKER_OPENAI_KEY"}})
	res, err := trial.Run(context.Background(), spec, a)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Outcome.Process
	if p.ExitCode != 3 {
		t.Fatalf("exit %d; stdout %s stderr %s", p.ExitCode, p.Stdout, p.Stderr)
	}
	env := map[string]string{}
	var cwd string
	for _, line := range strings.Split(p.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			if k == "cwd" {
				cwd = v
			}
			env[k] = v
		}
	}
	if !strings.HasPrefix(env[command.EnvMCPURL], "http://127.0.0.1:") || !strings.HasSuffix(env[command.EnvMCPURL], "/mcp") ||
		!strings.HasSuffix(env[command.EnvToolsURL], "/tools") {
		t.Errorf("urls %q %q", env[command.EnvMCPURL], env[command.EnvToolsURL])
	}
	if env[command.EnvGoal] != spec.Scenario.Goal || env[command.EnvTrialID] != spec.ID() || env[command.EnvAttempt] != "1" {
		t.Errorf("goal %q trial %q attempt %q", env[command.EnvGoal], env[command.EnvTrialID], env[command.EnvAttempt])
	}
	if env["MODEL"] != "m-1" || env["OPENAI_API_KEY"] != "[REDACTED]" {
		t.Errorf("arm env: MODEL=%q OPENAI_API_KEY=%q", env["MODEL"], env["OPENAI_API_KEY"])
	}
	if strings.Contains(p.Stdout+p.Stderr, "key-value-1234567890") || !strings.Contains(p.Stderr, "the key is [REDACTED]") {
		t.Errorf("secret not redacted: %s / %s", p.Stdout, p.Stderr)
	}
	if _, leaked := env["REBOUND_CLICKHOUSE_DSN"]; leaked || strings.Contains(p.Stdout, "worker-password") {
		t.Error("the worker's environment leaked into the process")
	}
	if env["PATH"] == "" || env["HOME"] != cwd || !strings.Contains(filepath.Base(cwd), "rebound-trial-") {
		t.Errorf("PATH %q HOME %q cwd %q", env["PATH"], env["HOME"], cwd)
	}
	if _, err := os.Stat(cwd); !os.IsNotExist(err) {
		t.Errorf("working directory %s survives the trial: %v", cwd, err)
	}
	// A non-zero exit is recorded and the trial graded: no claim fails
	// claim_parseable, it is not attrition.
	if res.Outcome.Claim != "" || res.Verdict.SelfCorrection != "fail" {
		t.Errorf("claim %q self_correction %v", res.Outcome.Claim, res.Verdict.SelfCorrection)
	}
}

func TestCommandTimeoutKeepsClaimAndOutput(t *testing.T) {
	spec := chargeSpec(t)
	start := time.Now()
	res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "sleep"), Timeout: 700 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("timeout took %s", el)
	}
	p := res.Outcome.Process
	if !p.TimedOut || p.Signal != "terminated" {
		t.Errorf("process %+v", p)
	}
	if res.Outcome.Claim != `{"blocked_on":"payments.charge","status":"blocked"}` {
		t.Errorf("claim %q (blocked_on keeps the dotted tool name)", res.Outcome.Claim)
	}
}

func TestCommandAttritionAndConfigErrors(t *testing.T) {
	spec := chargeSpec(t)
	_, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "provider-down"), AttritionExitCodes: []int{75}}))
	p, ok := command.IsAttrition(err)
	if !ok || !errors.Is(err, agent.ErrAttrition) || p == nil || p.ExitCode != 75 || !strings.Contains(p.Stderr, "provider unreachable") {
		t.Fatalf("declared infrastructure exit: err %v process %+v", err, p)
	}
	// Without the declaration the same exit is the agent's: graded.
	res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "provider-down")}))
	if err != nil || res.Outcome.Process.ExitCode != 75 {
		t.Fatalf("undeclared exit 75: %v", err)
	}
	_, err = trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: []string{"/nonexistent/agent"}}))
	if !errors.Is(err, agent.ErrConfig) {
		t.Errorf("missing command: %v", err)
	}
	if _, err := command.New(command.Config{Command: []string{"x"}, EnvFrom: map[string]string{"K": "REBOUND_TEST_UNSET_VAR"}}); !errors.Is(err, agent.ErrConfig) {
		t.Errorf("missing env_from variable: %v", err)
	}
}

func TestCommandCancelled(t *testing.T) {
	spec := chargeSpec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := trial.Run(ctx, spec, newAgent(t, command.Config{Command: self(t, "sleep"), Timeout: time.Minute}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled trial: %v", err)
	}
}

// An agent that keeps calling after its budget is stopped by the harness:
// its process is killed, the trial ends without a claim (like any agent's)
// and is graded on its bounded ledger, and the process record is kept.
func TestCommandHaltedByTheHarness(t *testing.T) {
	spec := chargeSpec(t)
	start := time.Now()
	res, err := trial.Run(context.Background(), spec, newAgent(t, command.Config{Command: self(t, "flood"), Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("halting took %s", el)
	}
	if res.Outcome.Claim != "" || !strings.Contains(res.Outcome.Answer, "halted") {
		t.Errorf("claim %q answer %q", res.Outcome.Claim, res.Outcome.Answer)
	}
	if p := res.Outcome.Process; p == nil || p.TimedOut || p.ExitCode == 0 {
		t.Errorf("process %+v", p)
	}
	if sent := res.Ledger.Sent(); sent != spec.Scenario.Budget.ToolCalls {
		t.Errorf("%d calls sent, budget %d", sent, spec.Scenario.Budget.ToolCalls)
	}
}
