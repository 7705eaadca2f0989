package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"rebound/activities"
	"rebound/core/agent"
	armpkg "rebound/core/agent/arm"
	"rebound/core/agent/llm"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/redact/redacttest"
	"rebound/results/judge"
	"rebound/workflows"
)

// Issue 10: secrets of every shape, planted in every place a plan and an
// agent can put them (goal, initial state, tool arguments, the claim, fault
// messages) and a provider key echoed by the model, must never be stored:
// not in any table, not in the stored plan, not in the judge's input or
// review queue, not in Temporal's history or database.
func TestPlantedSecretsNeverStored(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Places: 0 goal, 1 initial state, 2 arguments, 3 claim, 4 fault message.
	places := []string{"goal", "initial state", "arguments", "claim", "fault message"}
	planted := map[string]string{} // secret part -> where
	secrets := make([][]string, len(places))
	for p := range places {
		secrets[p] = redacttest.Shapes(p + 1)
		for _, s := range secrets[p] {
			planted[redacttest.SecretPart(s)] = places[p]
		}
	}
	const keyEnv = "REBOUND_TEST_PLANTED_API_KEY"
	apiKey := "opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N" // no known shape: redacted by value only
	t.Setenv(keyEnv, apiKey)
	planted[apiKey] = "the provider key, echoed by the model"

	initial := map[string]any{}
	var plan []map[string]any
	fields := []map[string]any{}
	var faults []map[string]any
	for k := range secrets[0] {
		initial[secrets[1][k]] = map[string]any{"available": k}
		initial[secrets[2][k]] = map[string]any{"available": k}
		field := fmt.Sprintf("c%02d", k)
		plan = append(plan, map[string]any{"id": fmt.Sprintf("s%02d", k), "tool": "inventory.lookup",
			"args": map[string]any{"sku": secrets[2][k]}, "sets": map[string]any{field: secrets[3][k]}})
		fields = append(fields, map[string]any{"name": field, "type": "string"})
		faults = append(faults, map[string]any{"tool": "inventory.lookup", "class": "transient", "code": "TIMEOUT",
			"attempts": []int{2*k + 1}, "message": secrets[4][k]})
	}
	sc := map[string]any{
		"name": "planted-secrets", "description": "secrets everywhere", "world": "inventory",
		"goal":  "Look up every SKU. Credentials: " + strings.Join(secrets[0], " | "),
		"tools": []string{"inventory.lookup"}, "permissions": []string{"inventory.read"},
		"budget": map[string]any{"tool_calls": 200}, "initial": map[string]any{"skus": initial},
		"plan": plan, "claim": map[string]any{"fields": fields},
		"variants": []any{map[string]any{"name": "timeouts", "recoverable": true, "faults": faults}},
	}
	dir := t.TempDir()
	scJSON, err := json.Marshal(sc) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("planted.yaml", scJSON)
	write("prompt.md", []byte("Recover carefully.\n"))

	// The model echoes its own key into a tool call, its prose and its
	// claim; the judge never answers validly, so every trial goes to the
	// review queue with the document the judge was sent.
	model := llmtest.New(t)
	model.Push(
		llmtest.Calls(llmtest.Call("c1", "inventory__lookup", map[string]any{"sku": secrets[2][0], "note": "my key is " + apiKey})),
		llmtest.Text("Looked it up with key "+apiKey),
		llmtest.Text(`{"status":"completed","blocked_on":null,"c00":"`+apiKey+`"}`),
	)
	model.Always(llmtest.Text(`{"status":"blocked","blocked_on":"inventory.lookup"}`))
	judgeModel := llmtest.New(t)
	judgeModel.Always(llmtest.Text("not a score, but here is a key: " + apiKey + " and " + secrets[0][0]))
	write("plan.yaml", fmt.Appendf(nil, `name: planted
scenarios: [planted.yaml]
seeds: [1]
arms:
  - {name: careful, agent: careful}
  - {name: naive, agent: naive_retrier}
  - {name: fabricator, agent: fabricator}
  - name: model
    agent: llm
    llm: {base_url: %q, api_key_env: %s, model: m, prompt: prompt.md}
judge: {base_url: %q, api_key_env: %s, model: judge-model}
`, model.BaseURL(), keyEnv, judgeModel.BaseURL(), keyEnv))
	resolved, err := scenario.LoadPlan(filepath.Join(dir, "plan.yaml"), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}

	const database = "runner_planted"
	store, c := openStack(t, ctx, srv, lib, database)
	noSleep := func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	acts := &activities.Activities{Store: store, RedactionKey: testRedactionKey,
		Agents:       func(arm scenario.Arm) (agent.Agent, error) { return armpkg.Resolve(arm, llm.WithSleep(noSleep)) },
		JudgeOptions: []judge.Option{judge.WithSleep(noSleep)}}
	queue := startWorker(t, c, "runner-planted", acts)
	sweepID, final := runSweep(t, ctx, c, queue, resolved)
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 4 {
		t.Fatalf("final progress = %+v", final)
	}
	if q, err := store.ReviewQueue(ctx, sweepID); err != nil || len(q) == 0 {
		t.Fatalf("review queue = %d items, %v: the judge's input must have been stored there", len(q), err)
	}

	// Every table of the database, every row, every column.
	var dump bytes.Buffer
	tables, err := store.Query(ctx, "SELECT name FROM system.tables WHERE database = '"+database+"' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range tables.Rows {
		name := fmt.Sprint(row[0])
		tab, err := store.Query(ctx, "SELECT * FROM "+database+"."+name)
		if err != nil {
			t.Fatalf("dump %s: %v", name, err)
		}
		b, _ := json.Marshal(tab)
		fmt.Fprintf(&dump, "== %s\n%s\n%v\n", name, b, tab.Rows)
	}
	// The sweep's Temporal history, every event, and the dev server's
	// database files themselves.
	var history bytes.Buffer
	events := 0
	it := c.GetWorkflowHistory(ctx, WorkflowID(sweepID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		history.Write(b)
		events++
	}
	var db []byte
	for _, f := range []string{srv.DBFile(), srv.DBFile() + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			db = append(db, b...)
		}
	}
	// The judge's requests: what the judge was sent (its own answers,
	// which echo secrets, are in the tables dump: the review queue).
	var judged bytes.Buffer
	for _, r := range judgeModel.Requests() {
		// What rebound sent: the rubric and the judged document. (A retry
		// also quotes the judge's own rejected answer back to it.)
		for _, m := range r.Chat.Messages[:min(2, len(r.Chat.Messages))] {
			judged.WriteString(m.Content)
		}
	}

	// Controls: the search would find what is there.
	if !strings.Contains(dump.String(), sweepID) || !strings.Contains(dump.String(), "planted-secrets") || events == 0 ||
		!bytes.Contains(history.Bytes(), []byte("binary/encrypted")) || judged.Len() == 0 || len(db) == 0 {
		t.Fatalf("controls failed: dump %d bytes, %d events, judge %d bytes, db %d bytes", dump.Len(), events, judged.Len(), len(db))
	}
	places2 := map[string][]byte{"tables": dump.Bytes(), "Temporal history": history.Bytes(), "Temporal database": db, "judge input": judged.Bytes()}
	found := 0
	for secret, where := range planted {
		escaped, _ := json.Marshal(secret)
		for name, hay := range places2 {
			if bytes.Contains(hay, []byte(secret)) || bytes.Contains(hay, escaped[1:len(escaped)-1]) {
				found++
				t.Errorf("secret planted in the %s found raw in the %s: %q", where, name, secret)
			}
		}
	}
	t.Logf("planted %d distinct secrets (%d shapes x %d places, plus the provider key); found raw: %d", len(planted), len(secrets[0]), len(places), found)
}
