package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// memStore keeps what a shard writes; the other methods of storage.Store
// are not used by RunShard.
type memStore struct {
	storage.Store
	mu     sync.Mutex
	sweep  record.Sweep
	writes [][]record.Trial
	stored map[string]bool
	calls  []record.ModelCall
	sends  []record.ModelRequest
}

func (m *memStore) Sweep(context.Context, string) (record.Sweep, error) { return m.sweep, nil }

func (m *memStore) StoredTrials(_ context.Context, _ string, keys []storage.TrialKey) ([]storage.StoredTrial, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []storage.StoredTrial
	for _, k := range keys {
		if m.stored[k.TrialID] {
			out = append(out, storage.StoredTrial{TrialID: k.TrialID})
		}
	}
	return out, nil
}

func (m *memStore) WriteTrials(_ context.Context, trials []record.Trial, _ []record.ToolCall) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, append([]record.Trial(nil), trials...))
	for _, t := range trials {
		m.stored[t.TrialID] = true
	}
	return nil
}

func (m *memStore) PutModelCall(_ context.Context, c record.ModelCall) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	return nil
}

func (m *memStore) PutModelRequest(_ context.Context, r record.ModelRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sends = append(m.sends, r)
	return nil
}

func (m *memStore) ModelCalls(_ context.Context, _, trialID string) ([]record.ModelCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record.ModelCall
	for _, c := range m.calls {
		if c.TrialID == trialID {
			out = append(out, c)
		}
	}
	return out, nil
}

func shardStore(t *testing.T, arms string, seeds int) *memStore {
	t.Helper()
	abs, err := filepath.Abs("../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("Be careful.\n"), 0o644)
	path := filepath.Join(dir, "plan.yaml")
	body := fmt.Sprintf("name: shard\nscenarios: [%s]\nseeds: %d\nshard_size: %d\narms:\n%s\n", abs, seeds, seeds, arms)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return &memStore{sweep: record.Sweep{SweepID: "s", PlanJSON: string(b)}, stored: map[string]bool{}}
}

// Scripted trials cost nothing to redo: a fast shard writes them in one
// insert, not one per trial. A trial an earlier attempt stored is skipped
// and counted.
func TestScriptedTrialsAreBatched(t *testing.T) {
	st := shardStore(t, "  - {name: careful, agent: careful}", 12)
	a := &Activities{Store: st, RedactionKey: testKey}
	first, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 6})
	if err != nil || first.Trials != 6 {
		t.Fatalf("first shard: %+v, %v", first, err)
	}
	if len(st.writes) != 1 || len(st.writes[0]) != 6 {
		t.Fatalf("writes = %d (first has %d rows), want one insert of 6", len(st.writes), len(st.writes[0]))
	}
	// Trials 0..5 stored; a shard over 0..12 skips them.
	again, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 12})
	if err != nil || again.Trials != 12 {
		t.Fatalf("second shard: %+v, %v", again, err)
	}
	if len(st.writes) != 2 || len(st.writes[1]) != 6 {
		t.Fatalf("second shard wrote %d batches (last of %d rows), want one of the 6 new trials", len(st.writes)-1, len(st.writes[len(st.writes)-1]))
	}
}

// A trial that paid a model is written as soon as it finishes, one insert
// per trial, and its every response went to the journal first.
func TestModelTrialsAreWrittenOneByOne(t *testing.T) {
	model := llmtest.New(t)
	model.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		if req.ResponseFormat != nil {
			return llmtest.Text(`{"status":"completed","blocked_on":null,"available":7}`).WithUsage(50, 5)
		}
		return llmtest.Text("7 units.").WithUsage(40, 4)
	})
	arm := fmt.Sprintf("  - name: m\n    agent: llm\n    llm: {base_url: %q, model: m, prompt: prompt.md}", model.BaseURL())
	st := shardStore(t, arm, 3)
	a := &Activities{Store: st, RedactionKey: testKey}
	start := time.Now()
	res, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 3})
	if err != nil || res.Trials != 3 {
		t.Fatalf("shard: %+v, %v", res, err)
	}
	if len(st.writes) != 3 {
		t.Fatalf("%d inserts for 3 model trials (%s), want one per trial", len(st.writes), time.Since(start))
	}
	if len(st.calls) != 6 || model.Stats().Requests != 6 {
		t.Fatalf("journal holds %d responses of %d requests, want 6 of 6", len(st.calls), model.Stats().Requests)
	}
	if len(st.sends) != 6 {
		t.Fatalf("model_requests holds %d sends, want one per request: 6", len(st.sends))
	}
	for i, r := range st.sends {
		if r.SweepID != "s" || r.Step == 0 || r.PromptTokensBound == 0 || r.CompletionTokensBound == 0 || r.ActivityAttempt == 0 {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
	for _, w := range st.writes {
		if w[0].Tokens != 99 || w[0].CostUSD != 0 {
			t.Fatalf("trial tokens %d cost %f, want 99 (two responses) at no price", w[0].Tokens, w[0].CostUSD)
		}
	}
}

var testKey = []byte("shard-test-redaction-key-0123456789abcdef")

// slowAgent is the careful agent, taking d per trial.
type slowAgent struct {
	agent.Agent
	d time.Duration
}

func (s slowAgent) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	time.Sleep(s.d)
	return s.Agent.Run(ctx, env, task)
}

// Scripted rows wait at most flushEvery: slow scripted trials are written
// once flushEvery's worth has accumulated, not only at the end of the shard.
func TestScriptedBatchesAreTimeBounded(t *testing.T) {
	st := shardStore(t, "  - {name: careful, agent: careful}", 6)
	a := &Activities{Store: st, RedactionKey: testKey, Agents: func(scenario.Arm) (agent.Agent, error) {
		ag, err := agent.NewScripted("careful")
		return slowAgent{ag, 600 * time.Millisecond}, err
	}}
	if _, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 6}); err != nil {
		t.Fatal(err)
	}
	sizes := []int{}
	for _, w := range st.writes {
		sizes = append(sizes, len(w))
	}
	// Six trials of 0.6 s take 3.6 s: a batch closes once its first row
	// is flushEvery (2 s) old, so they cannot all wait for the end of the
	// shard.
	total := 0
	for _, n := range sizes {
		total += n
	}
	if len(sizes) < 2 || total != 6 {
		t.Fatalf("batches of %v rows, want the 6 trials in time-bounded batches", sizes)
	}
}

// A shard reports the model spend of the trials it stored (for the sweep's
// max_usd): the sum of the trials' recorded cost, priced by the arm.
func TestShardReportsItsSpend(t *testing.T) {
	model := llmtest.New(t)
	model.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		if req.ResponseFormat != nil {
			return llmtest.Text(`{"status":"completed","blocked_on":null,"available":7}`).WithUsage(50, 5)
		}
		return llmtest.Text("7 units.").WithUsage(40, 4)
	})
	// $1000 per million input tokens, $10000 per million output.
	arm := fmt.Sprintf("  - name: m\n    agent: llm\n    llm: {base_url: %q, model: m, prompt: prompt.md, input_usd_per_mtok: 1000, output_usd_per_mtok: 10000}", model.BaseURL())
	st := shardStore(t, arm, 3)
	a := &Activities{Store: st, RedactionKey: testKey}
	res, err := a.RunShard(context.Background(), workflows.ShardInput{SweepID: "s", From: 0, To: 3})
	if err != nil || res.Trials != 3 {
		t.Fatalf("shard: %+v, %v", res, err)
	}
	var stored float64
	for _, w := range st.writes {
		for _, tr := range w {
			stored += tr.CostUSD
		}
	}
	// Per trial: 90 input tokens ($0.09) and 9 output ($0.09).
	if math.Abs(stored-0.54) > 1e-9 || math.Abs(res.CostUSD-stored) > 1e-12 {
		t.Fatalf("shard reports $%v, its stored trials cost $%v; want both 3 x $0.18", res.CostUSD, stored)
	}
}
