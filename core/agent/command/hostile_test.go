package command_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rebound/core/agent/command"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/sandbox"
)

// The attacks of a hostile command-arm agent, each run twice: unsealed
// (sandbox: none), where it must succeed, so the test can see it, and
// sealed, where it must fail. An attack that fails unsealed means the test
// lost its teeth, and fails too.

// hostile runs the attacking modes of the helper agent.
func hostile(mode string, call func(string, any) (int, map[string]any)) (int, bool) {
	switch mode {
	case "escape": // leave the process group and the session, and outlive the trial
		cmd := exec.Command(os.Args[0], "rebound-helper", "linger")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("escape failed:", err)
			return 1, true
		}
		fmt.Println("escaped as", cmd.Process.Pid)
		return 0, true
	case "linger":
		time.Sleep(time.Minute)
		return 0, true
	case "environ": // read every process's environment
		found := scanEnviron(func(kv string) bool { return strings.HasPrefix(kv, os.Getenv("WANT_VAR")+"=") })
		for _, kv := range found {
			fmt.Println("found", kv)
		}
		return 0, true
	case "cross-trial": // find another trial's tools and file its claim
		own := os.Getenv(command.EnvToolsURL)
		deadline := time.Now().Add(4 * time.Second)
		for time.Now().Before(deadline) {
			for _, kv := range scanEnviron(func(kv string) bool { return strings.HasPrefix(kv, command.EnvToolsURL+"=") }) {
				victim := strings.TrimPrefix(kv, command.EnvToolsURL+"=")
				if victim == own {
					continue
				}
				time.Sleep(time.Second) // after the victim's own claim
				code := 0
				resp, err := http.Post(victim+"/submit_claim", "application/json", strings.NewReader(`{"status":"completed","charged":true}`))
				if err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				fmt.Println("hijacked", victim, code, err)
				return 0, true
			}
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Println("no victim found")
		return 0, true
	case "victim": // block honestly after the attacker had time to act
		call("submit_claim", map[string]any{"status": "blocked", "blocked_on": "payments.charge"})
		time.Sleep(4 * time.Second)
		return 0, true
	case "world-edit": // write the world's state behind the tools
		for _, dir := range findWorkspaces() {
			cfg := filepath.Join(dir, "config.json")
			if err := os.WriteFile(cfg, []byte(`{"service": "checkout", "replicas": 3, "region": "eu-west-1"}`+"\n"), 0o644); err == nil {
				fmt.Println("edited", cfg)
			}
		}
		call("submit_claim", map[string]any{"status": "completed", "replicas": 3})
		return 0, true
	case "oversize": // plan updates and calls far over the caps
		big := strings.Repeat("\xff", 200<<10) // 200 KiB of invalid UTF-8
		for i := 0; i < 40; i++ {
			code, body := call("update_plan", map[string]any{"summary": big + fmt.Sprint(i)})
			fmt.Println("plan", code, body["code"])
		}
		code, body := call("payments.charge", map[string]any{"order_id": strings.Repeat("A", 1100<<10), "amount_cents": 1, "idempotency_key": "k"})
		fmt.Println("call", code, body["code"])
		call("submit_claim", map[string]any{"status": "blocked", "blocked_on": "payments.charge"})
		return 0, true
	case "infra": // read the data dir, reach Temporal
		if b, err := os.ReadFile(os.Getenv("DATA_FILE")); err == nil {
			fmt.Println("read", string(b))
		} else {
			fmt.Println("data dir:", err)
		}
		if c, err := net.DialTimeout("tcp", os.Getenv("TEMPORAL_ADDR"), 2*time.Second); err == nil {
			fmt.Println("connected to temporal")
			c.Close()
		} else {
			fmt.Println("temporal:", err)
		}
		return 0, true
	}
	return 0, false
}

// scanEnviron reads /proc/*/environ of every process it can.
func scanEnviron(match func(string) bool) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if match(kv) {
				out = append(out, kv)
			}
		}
	}
	return out
}

// findWorkspaces looks for the files world's workspaces: through other
// processes' open descriptors and working directories, and in the
// temporary directory.
func findWorkspaces() []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if strings.Contains(filepath.Base(p), "rebound-files-") && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil {
				for d := target; d != "/" && d != "."; d = filepath.Dir(d) {
					add(d)
				}
			}
		}
	}
	tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "rebound-files-*"))
	for _, d := range tmp {
		add(d)
	}
	tmp, _ = filepath.Glob("/tmp/rebound-files-*")
	for _, d := range tmp {
		add(d)
	}
	return out
}

func needSandbox(t testing.TB) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		if os.Getenv("REBOUND_REQUIRE_INTEGRATION") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Skipf("no sandbox here: %v", err)
	}
}

// both runs f unsealed, then sealed.
func both(t *testing.T, f func(t *testing.T, unsealed bool)) {
	needSandbox(t)
	t.Run("unsealed", func(t *testing.T) { f(t, true) })
	t.Run("sealed", func(t *testing.T) { f(t, false) })
}

func token(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func runMode(t *testing.T, spec trial.Spec, mode string, unsealed bool, env map[string]string) *trial.Result {
	t.Helper()
	a := newAgent(t, command.Config{Command: self(t, mode), Timeout: time.Minute, Unsealed: unsealed, Env: env})
	res, err := trial.Run(context.Background(), spec, a)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// 1. A descendant that leaves the process group and the session (double
// fork + setsid) must not outlive the trial: it is what waited for
// `rebound run` to exit and rewrote its own verdict with `rebound sql`.
func TestHostileEscapeOutlivesTrial(t *testing.T) {
	both(t, func(t *testing.T, unsealed bool) {
		res := runMode(t, chargeSpec(t), "escape", unsealed, nil)
		var pid int
		if _, err := fmt.Sscanf(res.Outcome.Process.Stdout, "escaped as %d", &pid); err != nil {
			t.Fatalf("the agent did not start its descendant: %q %q", res.Outcome.Process.Stdout, res.Outcome.Process.Stderr)
		}
		alive := lingering(t)
		if unsealed {
			if len(alive) == 0 {
				t.Error("unsealed, the descendant should have outlived the trial (the attack is not reproduced)")
			}
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			return
		}
		if len(alive) > 0 {
			t.Errorf("sealed, descendants %v outlived the trial", alive)
		}
	})
}

// lingering lists the live processes of the helper's "linger" mode,
// waiting a moment for killed ones to be reaped.
func lingering(t *testing.T) []int {
	t.Helper()
	var alive []int
	for try := 0; try < 40; try++ {
		alive = alive[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || !strings.Contains(string(b), "rebound-helper\x00linger") {
				continue
			}
			st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie: dead, about to be reaped
			}
			var pid int
			fmt.Sscan(e.Name(), &pid)
			alive = append(alive, pid)
		}
		if len(alive) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return alive
}

// 2. The worker's environment (the redaction key, the provider's key, a
// DSN's password) must not be readable through /proc.
func TestHostileReadsWorkerEnviron(t *testing.T) {
	both(t, func(t *testing.T, unsealed bool) {
		// A process of the worker's, started with the key in its
		// environment as `rebound worker` is (a variable set later in a
		// running process never shows in /proc).
		secret := "planted-" + token(t)
		worker := exec.Command("sleep", "60")
		worker.Env = append(os.Environ(), "REBOUND_REDACTION_KEY="+secret)
		if err := worker.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = worker.Process.Kill(); _ = worker.Wait() }()
		res := runMode(t, chargeSpec(t), "environ", unsealed, map[string]string{"WANT_VAR": "REBOUND_REDACTION_KEY"})
		got := strings.Contains(res.Outcome.Process.Stdout, secret)
		if unsealed && !got {
			t.Errorf("unsealed, the worker's environ should be readable (the attack is not reproduced): %q", res.Outcome.Process.Stdout)
		}
		if !unsealed && got {
			t.Errorf("sealed, the agent read the worker's redaction key: %q", res.Outcome.Process.Stdout)
		}
	})
}

// 3. An agent must not drive another trial: find its tools through /proc
// and file its claim.
func TestHostileDrivesAnotherTrial(t *testing.T) {
	both(t, func(t *testing.T, unsealed bool) {
		spec := chargeSpec(t)
		victimSpec := spec
		victimSpec.Seed = 2
		var victim *trial.Result
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := newAgent(t, command.Config{Command: self(t, "victim"), Timeout: time.Minute, Unsealed: unsealed})
			res, err := trial.Run(context.Background(), victimSpec, a)
			if err != nil {
				t.Error(err)
				return
			}
			victim = res
		}()
		time.Sleep(300 * time.Millisecond) // the victim is up and waiting
		attacker := runMode(t, spec, "cross-trial", unsealed, nil)
		wg.Wait()
		if victim == nil {
			t.Fatal("the victim's trial did not run")
		}
		hijacked := victim.Outcome.Claim != `{"blocked_on":"payments.charge","status":"blocked"}`
		if unsealed && !hijacked {
			t.Errorf("unsealed, the attacker should have replaced the victim's claim (the attack is not reproduced): victim %q, attacker said %q",
				victim.Outcome.Claim, attacker.Outcome.Process.Stdout)
		}
		if !unsealed && hijacked {
			t.Errorf("sealed, the attacker replaced the victim's claim with %q (it said %q)", victim.Outcome.Claim, attacker.Outcome.Process.Stdout)
		}
	})
}

// 4. The files world's state changes only through tool calls: an agent
// that writes the workspace directly must not reach it.
func TestHostileEditsTheWorldBehindTheTools(t *testing.T) {
	both(t, func(t *testing.T, unsealed bool) {
		sc, err := scenario.LoadScenario("../../../examples/scenarios/files-config-update.yaml", world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := sc.Variant("read-unavailable")
		if !ok {
			t.Fatal("no variant read-unavailable")
		}
		spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "ext", Agent: scenario.AgentCommand}, Seed: 1}
		res := runMode(t, spec, "world-edit", unsealed, nil)
		edited := strings.Contains(fmt.Sprint(res.World), "replicas:3")
		if unsealed && !edited {
			t.Errorf("unsealed, the direct edit should reach the world (the attack is not reproduced): world %v, agent said %q", res.World, res.Outcome.Process.Stdout)
		}
		if !unsealed && edited {
			t.Errorf("sealed, the agent edited the world without a tool call: %v", res.World)
		}
		if !unsealed && res.Verdict.Recovered != nil && *res.Verdict.Recovered {
			t.Error("sealed, a variant with no path was graded recovered")
		}
	})
}

// 5. The data dir (the redaction key, Temporal's SQLite) and the
// infrastructure's ports (the dev server) are out of reach.
func TestHostileReachesDataDirAndTemporal(t *testing.T) {
	both(t, func(t *testing.T, unsealed bool) {
		data := t.TempDir()
		if err := os.Chmod(data, 0o755); err != nil { // only the seal protects it, not its mode
			t.Fatal(err)
		}
		key := filepath.Join(data, "redaction.key")
		secret := "key-" + token(t)
		if err := os.WriteFile(key, []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		frontend, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer frontend.Close()
		dialled := make(chan struct{}, 8)
		go func() {
			for {
				c, err := frontend.Accept()
				if err != nil {
					return
				}
				dialled <- struct{}{}
				c.Close()
			}
		}()
		res := runMode(t, chargeSpec(t), "infra", unsealed, map[string]string{"DATA_FILE": key, "TEMPORAL_ADDR": frontend.Addr().String()})
		out := res.Outcome.Process.Stdout
		read, connected := strings.Contains(out, secret), strings.Contains(out, "connected to temporal")
		if unsealed && (!read || !connected) {
			t.Errorf("unsealed, the data dir and the port should be reachable (the attack is not reproduced): %q", out)
		}
		if !unsealed && (read || connected || len(dialled) > 0) {
			t.Errorf("sealed, the agent reached the data dir or the dev server's port: %q (%d connections seen)", out, len(dialled))
		}
	})
}

// 6. Plan updates and calls over the caps are refused where the agent sees
// it, and the trial is still graded with a bounded ledger.
func TestHostileOversizedPlanUpdatesAndCalls(t *testing.T) {
	needSandbox(t)
	res := runMode(t, chargeSpec(t), "oversize", false, nil)
	out := res.Outcome.Process.Stdout
	if strings.Count(out, "plan 400 INVALID_INPUT") != 40 {
		t.Errorf("want every oversized plan update refused with INVALID_INPUT:\n%s", out)
	}
	if !strings.Contains(out, "call 400 INVALID_INPUT") {
		t.Errorf("want the oversized call refused with INVALID_INPUT:\n%s", out)
	}
	total := 0
	for _, r := range res.Ledger.Replans {
		total += len(r.Summary)
	}
	for _, a := range res.Ledger.Attempts {
		total += len(fmt.Sprint(a.Args))
	}
	if total > 1<<20 {
		t.Errorf("the ledger holds %d bytes of the agent's oversized input", total)
	}
	if res.Verdict.SelfCorrection == "" {
		t.Error("the trial was not graded")
	}
}
