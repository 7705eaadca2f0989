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

// The embedded stack's sweep state stays honest across kills, with the
// real binary: a SIGKILLed `rebound run` leaves its sweep stalled, listed
// by `rebound sweeps`; the next `rebound run` on the data dir names it and
// does not run its shards; `rebound run --resume` finishes it; Ctrl-C
// records cancelled; `rebound sweep cancel` ends an orphan.
func TestHonestSweepState(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	bin := reboundBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")

	model := llmtest.New(t)
	model.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		return policy(req).WithDelay(150 * time.Millisecond)
	})
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "prompt.md", "Recover from tool failures carefully.\n")
	llmPlan := func(name string, seeds int) string {
		write(t, dir, name+".yaml", fmt.Sprintf("name: %s\nscenarios: [%s]\nseeds: %d\nshard_size: 2\nconcurrency: 2\narms:\n  - name: model\n    agent: llm\n    llm: {base_url: %q, model: policy-model, prompt: prompt.md}\n", name, abs, seeds, model.BaseURL()))
		return filepath.Join(dir, name+".yaml")
	}
	write(t, dir, "scripted.yaml", fmt.Sprintf("name: scripted\nscenarios: [%s]\nseeds: 4\narms:\n  - {name: careful, agent: careful}\n", abs))

	env := append(os.Environ(), "REBOUND_DATA_DIR="+data, "REBOUND_CHDB_LIB="+chdbLib, "REBOUND_TEMPORAL_BIN="+temporalBin,
		"REBOUND_TEMPORAL_ADDRESS=", "REBOUND_CLICKHOUSE_DSN=")
	rebound := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("rebound %v: %v", args, err)
		}
		return stdout.String(), stderr.String(), code
	}
	// background starts `rebound run PLAN` and returns its process once
	// the model has answered `after` more requests.
	background := func(plan string, after int) (*exec.Cmd, *bytes.Buffer) {
		t.Helper()
		start := model.Stats().Requests
		cmd := exec.Command(bin, "run", plan)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the run's first model requests", func() bool { return model.Stats().Requests >= start+after })
		return cmd, &stderr
	}
	sweepsJSON := func() map[string]map[string]any {
		t.Helper()
		out, stderr, code := rebound("sweeps", "--limit", "50", "--output", "json")
		if code != 0 {
			t.Fatalf("rebound sweeps: exit %d\n%s", code, stderr)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("sweeps json: %v\n%s", err, out)
		}
		byName := map[string]map[string]any{}
		for _, r := range rows {
			byName[r["name"].(string)] = r
		}
		return byName
	}

	// 1. SIGKILL a run mid-sweep: its sweep stays running, with no worker.
	cmdA, _ := background(llmPlan("killed", 12), 6)
	_ = syscall.Kill(-cmdA.Process.Pid, syscall.SIGKILL)
	_ = cmdA.Wait()
	rows := sweepsJSON()
	a := rows["killed"]
	if a == nil || a["status"] != "running" || !strings.HasPrefix(fmt.Sprint(a["state"]), "stalled: no worker polls") {
		t.Fatalf("killed sweep listed as %+v", a)
	}
	idA := a["sweep_id"].(string)

	// 2. The next run names it and leaves its shards alone.
	before := model.Stats().Requests
	_, stderr, code := rebound("run", filepath.Join(dir, "scripted.yaml"))
	if code != 0 || !strings.Contains(stderr, "unfinished sweep "+idA) || !strings.Contains(stderr, "rebound run --resume "+idA) {
		t.Fatalf("run with an unfinished sweep in the data dir: exit %d\n%s", code, stderr)
	}
	if got := model.Stats().Requests; got != before {
		t.Fatalf("the unrelated run made %d model requests: it ran the unfinished sweep's shards", got-before)
	}

	// 3. --resume finishes it.
	out, stderr, code := rebound("run", "--resume", idA)
	if code != 0 || !strings.Contains(out, "12 of 12 trials stored") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, stderr)
	}

	// 4. Ctrl-C records stopped (resumable) and exits 130.
	cmdC, outC := background(llmPlan("interrupted", 12), 4)
	_ = cmdC.Process.Signal(os.Interrupt)
	err = cmdC.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(outC.String(), "stopped") {
		t.Fatalf("Ctrl-C: %v\n%s", err, outC)
	}

	// 5. sweep cancel ends an orphan of a killed run.
	cmdD, _ := background(llmPlan("orphan", 12), 4)
	_ = syscall.Kill(-cmdD.Process.Pid, syscall.SIGKILL)
	_ = cmdD.Wait()
	idD := sweepsJSON()["orphan"]["sweep_id"].(string)
	out, stderr, code = rebound("sweep", "status", idD)
	if code != 0 || !strings.Contains(out, "no worker polls its task queue") || !strings.Contains(out, "rebound run --resume "+idD) {
		t.Fatalf("sweep status of the orphan: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = rebound("sweep", "status", idA)
	if code != 0 || !strings.Contains(out, "completed, 12/12 trials") {
		t.Fatalf("sweep status of the resumed sweep: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = rebound("sweep", "cancel", idD)
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("sweep cancel: exit %d\n%s\n%s", code, out, stderr)
	}

	rows = sweepsJSON()
	for name, want := range map[string]string{"killed": "completed", "scripted": "completed", "interrupted": "stopped", "orphan": "cancelled"} {
		if r := rows[name]; r == nil || r["status"] != want || r["state"] != nil && r["state"] != "" {
			t.Errorf("sweep %s listed as %+v, want status %s", name, r, want)
		}
	}
}
