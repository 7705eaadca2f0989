package crashtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/runner"
	"rebound/storage"
	"rebound/workflows"
)

const (
	seeds       = 36
	turnsPerRun = 4 // lookup, lookup again, answer, claim: see policy
	modelDelay  = 60 * time.Millisecond
)

// policy is a deterministic model: its answer depends only on the
// conversation, so a trial asks the same questions however often it is
// retried, and a crash-free sweep makes exactly seeds × turnsPerRun
// requests.
func policy(req openai.ChatCompletionRequest) llmtest.Reply {
	answered := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			answered++
		}
	}
	usage := func(r llmtest.Reply) llmtest.Reply {
		return r.WithUsage(100+7*len(req.Messages), 10+answered).WithDelay(modelDelay)
	}
	if req.ResponseFormat != nil {
		return usage(llmtest.Text(`{"status":"completed","blocked_on":null,"available":7}`))
	}
	switch answered {
	case 0, 1:
		return usage(llmtest.Calls(llmtest.Call(fmt.Sprintf("c%d", answered+1), "inventory__lookup", map[string]any{"sku": "KB-104"})))
	default:
		return usage(llmtest.Text("KB-104 has 7 units available."))
	}
}

func TestCrashesCostNothing(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()

	bin := reboundBin(t)

	model := llmtest.New(t)
	model.Policy(policy)
	scenarioPath, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "prompt.md", "Recover from tool failures carefully.\n")
	write(t, dir, "plan.yaml", fmt.Sprintf(`name: crash
scenarios: [%s]
seeds: %d
shard_size: 4
concurrency: 3
arms:
  - name: model
    agent: llm
    llm: {base_url: %q, model: policy-model, prompt: prompt.md, input_usd_per_mtok: 1, output_usd_per_mtok: 4}
`, scenarioPath, seeds, model.BaseURL()))

	stk := startStack(t, ctx, dir, temporalBin, bin, chdbLib, "crash")
	sweepID := stk.sweepStart(filepath.Join(dir, "plan.yaml"))
	planned := seeds

	// Kill the worker mid-shard, twice: hold the model server, let what it
	// delivered be journaled, SIGKILL the worker while requests are held,
	// count them (the turns in flight, never answered, never billed), and
	// measure how long until a new worker's request arrives.
	var inFlight int
	var takeovers []time.Duration
	for kill := 1; kill <= 2; kill++ {
		waitFor(t, ctx, fmt.Sprintf("kill %d: requests in progress", kill), func() bool { return model.Stats().Requests >= kill*25 })
		model.Hold()
		time.Sleep(2 * time.Second) // delivered responses reach the journal
		before := model.Stats()
		stk.worker.kill()
		killedAt := time.Now()
		waitFor(t, ctx, "held requests abandoned", func() bool { return model.Stats().Held == 0 })
		lost := model.Stats().Abandoned - before.Abandoned
		inFlight += lost
		model.Release()
		if kill == 1 {
			// The killed worker is not counted: Temporal still lists it as
			// a poller, and as the last worker of its shards.
			out := cli(t, ctx, bin, "sweep", "status", "--temporal-address", stk.address, sweepID)
			if !strings.Contains(out, "0 worker(s) polling") || !strings.Contains(out, "nothing runs its shards") {
				t.Errorf("sweep status with the worker killed:\n%s", out)
			}
			out = cli(t, ctx, bin, "sweeps", "--temporal-address", stk.address, "--data-dir", stk.dataDir, "--chdb-lib", chdbLib)
			if !strings.Contains(out, "stalled: no worker polls task queue crash") {
				t.Errorf("sweeps with the worker killed:\n%s", out)
			}
		}
		stk.startWorker()
		served := model.Stats().Requests
		waitFor(t, ctx, "shards moving again", func() bool { return model.Stats().Requests > served })
		takeovers = append(takeovers, time.Since(killedAt))
		t.Logf("kill %d: worker SIGKILLed with %d requests held (in flight); shards moving again after %s", kill, lost, takeovers[len(takeovers)-1].Round(100*time.Millisecond))
	}

	// Kill the dev server mid-sweep and bring it back on the same file.
	waitFor(t, ctx, "progress before the dev server kill", func() bool { return model.Stats().Requests >= 75 })
	stk.temporal.kill()
	t.Logf("dev server SIGKILLed at %d requests", model.Stats().Requests)
	time.Sleep(time.Second)
	stk.startTemporal()
	dial(t, ctx, stk.address, []byte(redactionKey)).Close()
	// The worker reconnects within seconds: meanwhile its sweep is
	// reconnecting, not abandoned.
	if out := cli(t, ctx, bin, "sweep", "status", "--temporal-address", stk.address, sweepID); strings.Contains(out, "nothing runs its shards") || strings.Contains(out, "no worker polls its task queue") {
		t.Errorf("sweep status right after the dev server restarted:\n%s", out)
	} else {
		t.Logf("sweep status right after the dev server restarted:\n%s", out)
	}

	run := stk.client.GetWorkflow(ctx, runner.WorkflowID(sweepID), "")
	var final workflows.Progress
	if err := run.Get(ctx, &final); err != nil {
		t.Fatalf("sweep %s: %v\nworker log:\n%s", sweepID, err, tail(stk.worker.log))
	}
	if final.Status != workflows.StatusCompleted || final.TrialsDone != planned || final.Attrition != 0 {
		t.Fatalf("final progress = %+v", final)
	}
	stk.worker.stop() // graceful: the store closes after the last write

	st, err := storage.Open(ctx, storage.Config{DataDir: filepath.Join(stk.dataDir, "chdb"), LibPath: chdbLib})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := func(sql string) int64 {
		t.Helper()
		tab, err := st.Query(ctx, sql)
		if err != nil || len(tab.Rows) != 1 {
			t.Fatalf("%s: %v %+v", sql, err, tab)
		}
		n, err := strconv.ParseInt(fmt.Sprint(tab.Rows[0][0]), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	where := fmt.Sprintf("WHERE sweep_id = '%s'", sweepID)
	stored := q("SELECT count() FROM rebound.trials FINAL " + where)
	distinct := q("SELECT uniqExact(trial_id) FROM rebound.trials FINAL " + where)
	attrition := q("SELECT countIf(attrition = 1) FROM rebound.trials FINAL " + where)
	storedTokens := q("SELECT sum(tokens) FROM rebound.trials FINAL " + where)
	journalSteps := q("SELECT count() FROM rebound.model_calls FINAL " + where)
	retriedTrials := q("SELECT countIf(activity_attempt > 1) FROM rebound.trials FINAL " + where)
	stats := model.Stats()
	crashFree := planned * turnsPerRun
	t.Logf("planned %d, stored %d (distinct %d, attrition %d, %d written by a retried attempt); requests %d (crash-free %d, in flight at the kills %d, abandoned %d, 429 %d); billed tokens %d, stored %d; journal rows %d; takeovers %v",
		planned, stored, distinct, attrition, retriedTrials, stats.Requests, crashFree, inFlight, stats.Abandoned, stats.RateLimited, stats.BilledTokens(), storedTokens, journalSteps, takeovers)

	if stored != int64(planned) || distinct != int64(planned) || attrition != 0 {
		t.Errorf("stored %d trials (%d distinct, %d attrition), planned %d", stored, distinct, attrition, planned)
	}
	if stats.Requests > crashFree+inFlight {
		t.Errorf("the model got %d requests; a crash-free sweep makes %d and only %d were in flight at the kills", stats.Requests, crashFree, inFlight)
	}
	if inFlight == 0 {
		t.Errorf("no request was in flight at either kill: the kills did not land mid-shard")
	}
	if storedTokens != stats.BilledTokens() {
		t.Errorf("stored tokens %d, billed %d", storedTokens, stats.BilledTokens())
	}
	if journalSteps != int64(crashFree) {
		t.Errorf("journal holds %d responses, want one per turn: %d", journalSteps, crashFree)
	}
	for _, d := range takeovers {
		if d > workflows.HeartbeatTimeout+15*time.Second {
			t.Errorf("a takeover took %s, want about the heartbeat timeout %s", d, workflows.HeartbeatTimeout)
		}
	}
}

// cli runs the rebound binary to its end and returns its stdout; a
// failure fails the test.
func cli(t *testing.T, ctx context.Context, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "REBOUND_REDACTION_KEY="+redactionKey)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rebound %v: %v\n%s%s", args, err, out, stderr.String())
	}
	return string(out)
}

// proc is a child process the test can SIGKILL or stop.
type proc struct {
	t    *testing.T
	name string
	log  string
	cmd  *exec.Cmd
}

func (p *proc) start(ctx context.Context, bin string, args ...string) {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "REBOUND_REDACTION_KEY="+redactionKey)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	go func() { _ = cmd.Wait(); f.Close() }()
	p.cmd = cmd
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(p.cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd = nil
}

// stop sends SIGINT and waits for the process to exit.
func (p *proc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	deadline := time.Now().Add(45 * time.Second)
	for syscall.Kill(p.cmd.Process.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.kill()
}

// redactionKey is the deployment key of the test's worker and clients: it
// encrypts Temporal payloads (progress included).
const redactionKey = "crashtest-redaction-key-0123456789abcdef"

func dial(t *testing.T, ctx context.Context, address string, key []byte) client.Client {
	t.Helper()
	opts, err := runner.SecureClientOptions(client.Options{HostPort: address}, key)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for ctx.Err() == nil {
		c, err := client.Dial(opts)
		if err == nil {
			return c
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("dial Temporal at %s: %v", address, last)
	return nil
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
