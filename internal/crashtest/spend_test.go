package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/runner"
	"rebound/workflows"
)

// A worker killed with model requests in flight leaves answers the
// provider bills and the store never receives. The model server here is
// such a provider: it answers a request whose client is gone and counts it
// as served (billed). The requests were journaled before they were sent,
// so the sweep's spend, read back with `rebound report`, brackets the bill:
// exact ≤ served ≤ exact + estimated. Without the journal the estimate is
// zero and exact falls short of served, which fails the test.
func TestLostInFlightSpendIsEstimated(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := reboundBin(t)

	const seeds = 16
	model := llmtest.New(t)
	model.Policy(policy)
	model.FinishAbandoned()
	scenarioPath, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "prompt.md", "Recover from tool failures carefully.\n")
	write(t, dir, "plan.yaml", fmt.Sprintf(`name: lost
scenarios: [%s]
seeds: %d
shard_size: 2
concurrency: 4
arms:
  - name: model
    agent: llm
    llm: {base_url: %q, model: policy-model, prompt: prompt.md, max_tokens: 64, input_usd_per_mtok: 1, output_usd_per_mtok: 4}
`, scenarioPath, seeds, model.BaseURL()))

	stk := startStack(t, ctx, dir, temporalBin, bin, chdbLib, "lost")
	sweepID := stk.sweepStart(filepath.Join(dir, "plan.yaml"))

	// Hold the model once the sweep is under way, let what it delivered be
	// journaled, and SIGKILL the worker with requests held: their clients
	// are gone, and released they are answered and billed all the same.
	waitFor(t, ctx, "requests in progress", func() bool { return model.Stats().Requests >= 20 })
	model.Hold()
	waitFor(t, ctx, "requests held", func() bool { return model.Stats().Held >= 2 })
	time.Sleep(2 * time.Second) // delivered responses reach the journal
	held := model.Stats().Held
	before := model.Stats()
	stk.worker.kill()
	waitFor(t, ctx, "held requests abandoned", func() bool { return model.Stats().Abandoned-before.Abandoned >= held })
	model.Release()
	waitFor(t, ctx, "abandoned requests released", func() bool { return model.Stats().Held == 0 })
	time.Sleep(10 * modelDelay) // released, they take the model's delay to be answered
	afterKill := model.Stats()
	if lostTokens := afterKill.ServedTokens() - afterKill.BilledTokens(); lostTokens <= 0 {
		t.Fatalf("the kill left no billed answer undelivered (served %d, delivered %d tokens): the test proves nothing", afterKill.ServedTokens(), afterKill.BilledTokens())
	}
	t.Logf("worker SIGKILLed with %d requests held; released, they were answered to nobody: served %d tokens, delivered %d",
		held, afterKill.ServedTokens(), afterKill.BilledTokens())
	stk.startWorker()

	run := stk.client.GetWorkflow(ctx, runner.WorkflowID(sweepID), "")
	var final workflows.Progress
	if err := run.Get(ctx, &final); err != nil {
		t.Fatalf("sweep %s: %v\nworker log:\n%s", sweepID, err, tail(stk.worker.log))
	}
	if final.Status != workflows.StatusCompleted || final.TrialsDone != seeds {
		t.Fatalf("final progress = %+v", final)
	}
	stk.worker.stop() // the store closes after the last write

	var rep struct {
		Spend struct {
			ExactUSD        float64 `json:"exact_usd"`
			EstimatedUSD    float64 `json:"estimated_usd"`
			ExactTokens     int64   `json:"exact_tokens"`
			EstimatedTokens int64   `json:"estimated_tokens"`
			RequestsSent    int     `json:"requests_sent"`
			RequestsLost    int     `json:"requests_lost"`
		} `json:"spend"`
	}
	js := cli(t, ctx, bin, "report", "--output", "json", "--data-dir", stk.dataDir, "--chdb-lib", chdbLib, sweepID)
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, js)
	}
	sp := rep.Spend
	stats := model.Stats()
	served := stats.ServedTokens()
	t.Logf("served (billed by a provider that bills generation) %d tokens, delivered %d; report: exact %d + estimated %d tokens ($%.6f + $%.6f), %d of %d sends lost",
		served, stats.BilledTokens(), sp.ExactTokens, sp.EstimatedTokens, sp.ExactUSD, sp.EstimatedUSD, sp.RequestsLost, sp.RequestsSent)
	if sp.ExactTokens > served || sp.ExactTokens+sp.EstimatedTokens < served {
		t.Errorf("spend does not bracket the bill: exact %d, exact + estimated %d, served %d tokens", sp.ExactTokens, sp.ExactTokens+sp.EstimatedTokens, served)
	}
	if sp.ExactTokens != stats.BilledTokens() {
		t.Errorf("exact %d tokens, delivered (and stored) %d", sp.ExactTokens, stats.BilledTokens())
	}
	if sp.RequestsLost < held || sp.RequestsSent != stats.Requests+(sp.RequestsLost-held) {
		// Every request the server received was journaled first; a send
		// lost beyond those held never reached the server.
		t.Errorf("%d sends lost of %d journaled; %d requests were held at the kill, %d received in all", sp.RequestsLost, sp.RequestsSent, held, stats.Requests)
	}
	if sp.EstimatedUSD <= 0 || sp.ExactUSD <= 0 {
		t.Errorf("spend in USD: exact $%f, estimated $%f", sp.ExactUSD, sp.EstimatedUSD)
	}
	text := cli(t, ctx, bin, "report", "--data-dir", stk.dataDir, "--chdb-lib", chdbLib, sweepID)
	if want := fmt.Sprintf("estimated (%s tokens + ≤ ", strconv.FormatInt(sp.ExactTokens, 10)); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(text, ",", "")), " "), want) {
		t.Errorf("report text has no exact + estimated spend line (%q):\n%s", want, text)
	}
}
