package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/devstack/devstacktest"
	"rebound/storage"
)

// Ctrl-C of `rebound run` stops sending at once and keeps everything: no
// model request arrives after the signal, the process exits within 2 s,
// the sweep is stored as stopped, and `rebound run --resume` finishes it
// paying for no answer twice (every turn answered once, stored tokens equal
// billed tokens) and running no stored trial again.
func TestStopThenResumePaysNothingTwice(t *testing.T) {
	temporalBin := devstacktest.TemporalBin(t)
	chdbLib := devstacktest.ChDBLib(t)
	bin := reboundBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")

	const seeds = 12
	var (
		mu       sync.Mutex
		arrivals []time.Time
	)
	model := llmtest.New(t)
	model.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		return policy(req).WithDelay(150 * time.Millisecond)
	})
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "prompt.md", "Recover from tool failures carefully.\n")
	write(t, dir, "stop.yaml", fmt.Sprintf("name: stop\nscenarios: [%s]\nseeds: %d\nshard_size: 2\nconcurrency: 2\narms:\n  - name: model\n    agent: llm\n    llm: {base_url: %q, model: policy-model, prompt: prompt.md}\n", abs, seeds, model.BaseURL()))
	env := append(os.Environ(), "REBOUND_DATA_DIR="+data, "REBOUND_CHDB_LIB="+chdbLib, "REBOUND_TEMPORAL_BIN="+temporalBin,
		"REBOUND_TEMPORAL_ADDRESS=", "REBOUND_CLICKHOUSE_DSN=")

	cmd := exec.Command(bin, "run", filepath.Join(dir, "stop.yaml"))
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the run's model requests", func() bool { return model.Stats().Requests >= 10 })
	signalled := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	exited := time.Since(signalled)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("Ctrl-C: %v\n%s", err, out.String())
	}
	atStop := model.Stats()
	mu.Lock()
	late := 0
	for _, a := range arrivals {
		// A request already on the wire at the signal may land a little
		// later; one sent after it would arrive a model turn (150 ms) on.
		if a.After(signalled.Add(100 * time.Millisecond)) {
			late++
		}
	}
	mu.Unlock()
	t.Logf("Ctrl-C after %d requests (%d delivered); exited in %s", atStop.Requests, atStop.Delivered, exited.Round(10*time.Millisecond))
	if late > 0 {
		t.Errorf("%d model request(s) arrived after the signal", late)
	}
	if exited > 2*time.Second {
		t.Errorf("exit took %s after Ctrl-C, want at most 2s\n%s", exited, out.String())
	}
	m := regexpSweepID(t, out.String())
	if !strings.Contains(out.String(), "sweep "+m+" stopped") {
		t.Errorf("Ctrl-C did not say the sweep stopped:\n%s", out.String())
	}

	openStore := func() storage.Store {
		st, err := storage.Open(ctx, storage.Config{DataDir: filepath.Join(data, "chdb"), LibPath: chdbLib})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := openStore()
	sw, err := st.Sweep(ctx, m)
	storedAtStop, _ := st.CountTrials(ctx, m)
	st.Close()
	if err != nil || sw.Status != "stopped" {
		t.Fatalf("stored sweep after Ctrl-C: %+v, %v", sw, err)
	}
	if storedAtStop == 0 || storedAtStop >= seeds {
		t.Fatalf("%d of %d trials stored at the stop: the stop did not land mid-sweep", storedAtStop, seeds)
	}

	resume := exec.CommandContext(ctx, bin, "run", "--resume", m)
	resume.Env = env
	var rout, rerr bytes.Buffer
	resume.Stdout, resume.Stderr = &rout, &rerr
	if err := resume.Run(); err != nil {
		t.Fatalf("run --resume %s: %v\n%s\n%s", m, err, rout.String(), rerr.String())
	}
	if !strings.Contains(rout.String(), fmt.Sprintf("%d of %d trials stored", seeds, seeds)) {
		t.Errorf("resume's report:\n%s", rout.String())
	}
	// Its summary counts what it ran itself.
	if want := fmt.Sprintf("completed: %d trials, %d of them run by this process", seeds, uint64(seeds)-storedAtStop); !strings.Contains(rerr.String(), want) {
		t.Errorf("resume's summary does not say %q:\n%s", want, rerr.String())
	}

	st = openStore()
	defer st.Close()
	q := func(sql string) int64 {
		t.Helper()
		tab, err := st.Query(ctx, fmt.Sprintf(sql, m))
		if err != nil || len(tab.Rows) != 1 {
			t.Fatalf("%s: %v %+v", sql, err, tab)
		}
		var n int64
		fmt.Sscan(fmt.Sprint(tab.Rows[0][0]), &n)
		return n
	}
	stats := model.Stats()
	crashFree := seeds * turnsPerRun
	stored := q("SELECT count() FROM rebound.trials FINAL WHERE sweep_id = '%s'")
	storedTokens := q("SELECT sum(tokens) FROM rebound.trials FINAL WHERE sweep_id = '%s'")
	retried := q("SELECT countIf(activity_attempt > 1) FROM rebound.trials FINAL WHERE sweep_id = '%s'")
	status, _ := st.Sweep(ctx, m)
	t.Logf("requests %d (crash-free %d), delivered %d, billed tokens %d, stored %d; %d trials stored (%d at the stop)",
		stats.Requests, crashFree, stats.Delivered, stats.BilledTokens(), storedTokens, stored, storedAtStop)
	if status.Status != "completed" || stored != seeds {
		t.Errorf("after resume: status %s, %d trials stored, want completed, %d", status.Status, stored, seeds)
	}
	if stats.Delivered != crashFree {
		t.Errorf("the model answered %d requests; a sweep that pays nothing twice is answered once per turn: %d", stats.Delivered, crashFree)
	}
	if storedTokens != stats.BilledTokens() {
		t.Errorf("stored tokens %d, billed %d", storedTokens, stats.BilledTokens())
	}
	if retried != 0 {
		t.Errorf("%d trials were written by a retried attempt", retried)
	}
}

// regexpSweepID finds the sweep id in run's "sweep ID started" line.
func regexpSweepID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "sweep "); i >= 0 && strings.Contains(line, " started (workflow ") {
			rest := strings.TrimPrefix(line[i:], "sweep ")
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no sweep id in:\n%s", out)
	return ""
}
