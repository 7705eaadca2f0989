package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/devstack/devstacktest"
)

// A stopped sweep says so, with its stored trials and the command that
// resumes it; resumed, its max_usd counts the spend already stored: the
// sweep ends max_usd_reached having spent at most the cap plus the one
// trial in flight when it was reached. Counting from zero (the resumed run
// forgetting what was spent) would spend the cap again on top of what the
// first run spent, which fails the test.
func TestResumedSweepKeepsItsBudget(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	bin := reboundBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")

	// About $0.47 a trial (46 completion tokens at $10,000/M, 540 prompt
	// tokens at $10/M); a send lost in flight is estimated at most at about
	// $0.2 (its body's bytes at $10/M, max_tokens 16 at $10,000/M).
	const (
		seeds  = 16
		maxUSD = 3.0
	)
	model := llmtest.New(t)
	model.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		return policy(req).WithDelay(100 * time.Millisecond)
	})
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "prompt.md", "Recover from tool failures carefully.\n")
	write(t, dir, "budget.yaml", fmt.Sprintf(`name: budget
scenarios: [%s]
seeds: %d
shard_size: 1
concurrency: 1
max_usd: %g
arms:
  - name: model
    agent: llm
    llm: {base_url: %q, model: policy-model, prompt: prompt.md, max_tokens: 16, input_usd_per_mtok: 10, output_usd_per_mtok: 10000}
`, abs, seeds, maxUSD, model.BaseURL()))
	env := append(os.Environ(), "REBOUND_DATA_DIR="+data, "REBOUND_CHDB_LIB="+chdbLib, "REBOUND_TEMPORAL_BIN="+temporalBin,
		"REBOUND_TEMPORAL_ADDRESS=", "REBOUND_CLICKHOUSE_DSN=", "REBOUND_REDACTION_KEY="+redactionKey)

	cmd := exec.Command(bin, "run", filepath.Join(dir, "budget.yaml"))
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Three trials answered (four turns each), then Ctrl-C.
	waitFor(t, ctx, "three trials answered", func() bool { return model.Stats().Delivered >= 3*turnsPerRun+1 })
	_ = cmd.Process.Signal(os.Interrupt)
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("Ctrl-C: %v\n%s", err, out.String())
	}
	id := regexpSweepID(t, out.String())

	run := func(args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = env
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			t.Fatalf("rebound %v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	type spendJSON struct {
		TrialsStored int    `json:"trials_stored"`
		Status       string `json:"status"`
		Spend        struct {
			ExactUSD     float64 `json:"exact_usd"`
			EstimatedUSD float64 `json:"estimated_usd"`
		} `json:"spend"`
	}
	readReport := func() spendJSON {
		t.Helper()
		var r spendJSON
		if err := json.Unmarshal([]byte(run("report", "--output", "json", id)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}

	// The stopped sweep's status: stopped, resumable, its stored trials,
	// the resume command.
	atStop := readReport()
	if atStop.TrialsStored < 3 || atStop.TrialsStored >= seeds {
		t.Fatalf("%d of %d trials stored at the stop: it did not land mid-sweep", atStop.TrialsStored, seeds)
	}
	status := run("sweep", "status", id)
	for _, want := range []string{"stopped (interrupted, resumable)", fmt.Sprintf("%d of %d trials stored", atStop.TrialsStored, seeds), "rebound run --resume " + id, "spend: $"} {
		if !strings.Contains(status, want) {
			t.Errorf("sweep status of the stopped sweep does not say %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "progress unavailable") {
		t.Errorf("sweep status of the stopped sweep:\n%s", status)
	}
	var sj struct {
		Stored struct {
			Status        string `json:"status"`
			TrialsStored  int    `json:"trials_stored"`
			Resumable     bool   `json:"resumable"`
			ResumeCommand string `json:"resume_command"`
		} `json:"stored"`
	}
	if err := json.Unmarshal([]byte(run("sweep", "status", "--output", "json", id)), &sj); err != nil ||
		sj.Stored.Status != "stopped" || !sj.Stored.Resumable || sj.Stored.TrialsStored != atStop.TrialsStored || sj.Stored.ResumeCommand != "rebound run --resume "+id {
		t.Errorf("sweep status --output json: %+v, %v", sj, err)
	}

	// Resumed, it stops at the cap counting what the first run spent.
	resume := exec.CommandContext(ctx, bin, "run", "--resume", id)
	resume.Env = env
	var rout bytes.Buffer
	resume.Stdout, resume.Stderr = &rout, &rout
	_ = resume.Run() // max_usd_reached is not an error of the command's making; the report says what happened
	final := readReport()
	perTrial := final.Spend.ExactUSD / float64(final.TrialsStored)
	total := final.Spend.ExactUSD + final.Spend.EstimatedUSD
	t.Logf("stop: %d trials, $%.3f exact + $%.3f estimated; resumed: %s, %d trials, $%.3f exact + $%.3f estimated ($%.3f a trial), max_usd $%g",
		atStop.TrialsStored, atStop.Spend.ExactUSD, atStop.Spend.EstimatedUSD, final.Status, final.TrialsStored, final.Spend.ExactUSD, final.Spend.EstimatedUSD, perTrial, maxUSD)
	if final.Status != "max_usd_reached" || final.TrialsStored >= seeds {
		t.Fatalf("resumed sweep ended %s with %d of %d trials, want max_usd_reached before the end\n%s", final.Status, final.TrialsStored, seeds, rout.String())
	}
	// The cap is checked between shards (one trial each, one at a time):
	// the spend passes it by at most the trial that reached it.
	if limit := maxUSD + perTrial + atStop.Spend.EstimatedUSD; total > limit {
		t.Errorf("resumed sweep spent $%.3f (exact + estimated), over max_usd $%g plus one trial ($%.3f)", total, maxUSD, perTrial)
	}
}
