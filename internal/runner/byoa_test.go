package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"

	"rebound/activities"
	"rebound/core/agent"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/results/record"
	"rebound/workflows"
)

// The OpenAI Agents SDK example (examples/agents/openai-agents-ts), run as a
// command arm through a real Temporal dev server, its tools served by
// rebound's MCP server, its model the local OpenAI-compatible test server;
// rows read back from chDB. The first attempt of the first trial's activity
// fails after writing its row: the retry finds the trial stored and skips
// it, so the external agent runs once and the trial is stored once, from
// attempt 1. A second arm's model endpoint is down: the agent exits 75,
// declared as attrition.
func TestAgentsSDKCommandArmEndToEnd(t *testing.T) {
	launcher := devstacktest.ExampleAgent(t)
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	model := llmtest.New(t)
	charge := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
	refund := map[string]any{"invoice_id": "inv-900", "idempotency_key": "refund-case-771"}
	// Trials run in plan order (one per shard, one shard at a time, a
	// retried shard before the next), so the model's answers are queued in
	// that order: the charge trial (once: its retried shard skips it), then
	// the refund trial. The down arm never reaches this server.
	chargeTrial := []llmtest.Reply{
		llmtest.Calls(llmtest.Call("c1", "payments__charge", charge)),
		llmtest.Calls(llmtest.Call("c2", "wait", map[string]any{"ms": 1000})),
		llmtest.Calls(llmtest.Call("c3", "payments__charge", charge)),
		llmtest.Calls(llmtest.Call("c4", "wait", map[string]any{"ms": 2000})),
		llmtest.Calls(llmtest.Call("c5", "payments__charge", charge)),
		llmtest.Calls(llmtest.Call("c6", "submit_claim", map[string]any{"status": "completed", "charged": true})),
		llmtest.Text("Charged order A-4417 after two gateway errors."),
	}
	model.Push(chargeTrial...)
	model.Push(
		llmtest.Calls(llmtest.Call("r1", "payments__get_invoice", map[string]any{"invoice_id": "inv-900"})),
		llmtest.Calls(llmtest.Call("r2", "payments__refund", refund)),
		llmtest.Calls(llmtest.Call("r3", "payments__refund_status", map[string]any{"idempotency_key": "refund-case-771"})),
		llmtest.Calls(llmtest.Call("r4", "submit_claim", map[string]any{"status": "completed", "refunded": true, "invoice_amount_cents": 4200})),
		llmtest.Text("Refund re_inv-900_1 completed; it was not resent."),
	)
	// An endpoint that refuses connections: a port that was free a moment ago.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close()

	dir := t.TempDir()
	t.Setenv("BYOA_TEST_MODEL_KEY", "sk-test-byoa-0123456789abcdef")
	scenarios := []string{}
	for _, f := range []string{"charge-502-twice.yaml", "refund-timeout-after-send.yaml"} {
		abs, err := filepath.Abs(filepath.Join("../../examples/scenarios", f))
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, abs)
	}
	// Sealed, the agent reads its build under .cache/ and reaches only its
	// model's host:port.
	install := filepath.Clean(filepath.Join(filepath.Dir(launcher), "..", "..", "..", ".cache", "agents", "openai-agents-ts"))
	planFile := filepath.Join(dir, "plan.yaml")
	planYAML := fmt.Sprintf(`name: agents-sdk-e2e
scenarios: [%s, %s]
seeds: [1]
concurrency: 1
arms:
  - name: agents-sdk
    agent: command
    command: [%s]
    env: {OPENAI_BASE_URL: %q, OPENAI_MODEL: test-model}
    env_from: {OPENAI_API_KEY: BYOA_TEST_MODEL_KEY}
    timeout: 2m
    attrition_exit_codes: [75]
    read_only: [%s]
    egress: [%s]
  - name: agents-sdk-down
    agent: command
    command: [%s]
    env: {OPENAI_BASE_URL: %q, OPENAI_MODEL: test-model}
    timeout: 2m
    attrition_exit_codes: [75]
    read_only: [%[5]s]
    egress: [%s]
`, scenarios[0], scenarios[1], launcher, model.BaseURL(), install, hostPort(t, model.BaseURL()), launcher, down, hostPort(t, down))
	if err := os.WriteFile(planFile, []byte(planYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadPlan(planFile, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	if plan.ShardSize != 1 {
		t.Fatalf("shard size %d, want 1 for command arms", plan.ShardSize)
	}

	store, c := openStack(t, ctx, srv, lib, "runner_byoa")
	var failed atomic.Int32
	acts := &activities.Activities{Store: store, RedactionKey: testRedactionKey, FailAfterWrite: func(ctx context.Context, in workflows.ShardInput) error {
		if in.Shard == 0 && activity.GetInfo(ctx).Attempt == 1 {
			failed.Add(1)
			return errors.New("injected: worker lost after writing the first command trial")
		}
		return nil
	}}
	queue := startWorker(t, c, "runner-byoa", acts)

	sweepID, final := runSweep(t, ctx, c, queue, plan)
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 4 || final.Attrition != 2 {
		t.Fatalf("final progress = %+v", final)
	}
	if failed.Load() != 1 {
		t.Fatalf("the injected failure fired %d times, want 1", failed.Load())
	}
	if n, err := store.CountTrials(ctx, sweepID); err != nil || n != 4 {
		t.Fatalf("stored (deduplicated) trials = %d (%v), want 4", n, err)
	}
	if n := model.Pending(); n != 0 {
		t.Errorf("%d scripted model answers were never asked for", n)
	}

	// The model saw rebound's normalized errors as the Agents SDK passed
	// them on: code, retryable, retry_after_ms, uncertain.
	reqs := model.Requests()
	if len(reqs) != 12 {
		t.Fatalf("%d model requests, want 12: the retried shard must not run its stored trial's agent again", len(reqs))
	}
	lastTool := func(i int) string {
		msgs := reqs[i].Chat.Messages
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == "tool" {
				return msgs[j].Content
			}
		}
		return ""
	}
	for i, want := range map[int][]string{
		1: {`"code":"BAD_GATEWAY"`, `"retryable":true`, `"retry_after_ms":0`, `"uncertain":false`},
		9: {`"code":"TIMEOUT_AFTER_SEND"`, `"uncertain":true`},
	} {
		for _, w := range want {
			if got := lastTool(i); !strings.Contains(got, w) {
				t.Errorf("model request %d: the last tool message %q lacks %s", i+1, got, w)
			}
		}
	}
	offered := map[string]bool{}
	for _, tl := range reqs[0].Chat.Tools {
		offered[tl.Function.Name] = true
	}
	for _, name := range []string{"payments__charge", "payments__charge_status", "wait", "update_plan", "submit_claim"} {
		if !offered[name] {
			t.Errorf("the Agents SDK did not offer %s to the model (offered %v)", name, offered)
		}
	}
	if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer sk-test-byoa-0123456789abcdef" {
		t.Errorf("the key from env_from did not reach the model client: %q", auth)
	}

	trials, err := store.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]record.Trial{}
	for _, tr := range trials {
		byKey[tr.Arm+"/"+tr.Scenario] = tr
	}
	type want struct {
		claim   string
		codes   []string
		commit  int // the call that committed
		attempt uint32
	}
	for scen, w := range map[string]want{
		"charge-502-twice":          {`{"charged":true,"status":"completed"}`, []string{"BAD_GATEWAY", "BAD_GATEWAY", ""}, 3, 1},
		"refund-timeout-after-send": {`{"invoice_amount_cents":4200,"refunded":true,"status":"completed"}`, []string{"", "TIMEOUT_AFTER_SEND", ""}, 2, 1},
	} {
		tr := byKey["agents-sdk/"+scen]
		if tr.TrialID == "" {
			t.Fatalf("no stored trial of agents-sdk on %s (have %v)", scen, byKey)
		}
		if tr.Attrition || tr.Agent != "command" || tr.Claim != w.claim || tr.ActivityAttempt != w.attempt {
			t.Errorf("%s: attrition=%v agent=%q claim=%s attempt=%d", scen, tr.Attrition, tr.Agent, tr.Claim, tr.ActivityAttempt)
		}
		for name, got := range map[string]*bool{"recovered": tr.Recovered, "unsafe_action": tr.UnsafeAction,
			"duplicate_side_effect": tr.DuplicateSideEffect, "fabricated_claim": tr.FabricatedClaim} {
			if got == nil || *got != (name == "recovered") {
				t.Errorf("%s: %s = %v", scen, name, got)
			}
		}
		var p agent.Process
		if err := json.Unmarshal([]byte(tr.Process), &p); err != nil || p.ExitCode != 0 || p.TimedOut ||
			!strings.Contains(p.Stdout, "trial "+tr.TrialID+":") {
			t.Errorf("%s: process record %s (%v)", scen, tr.Process, err)
		}
		if strings.Contains(tr.Process, "sk-test-byoa") {
			t.Errorf("%s: the key reached storage: %s", scen, tr.Process)
		}
		_, calls, err := store.Trial(ctx, tr.TrialID)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != len(w.codes) {
			t.Fatalf("%s: %d stored calls, want %d", scen, len(calls), len(w.codes))
		}
		for i, call := range calls {
			if call.Code != w.codes[i] || call.OK != (w.codes[i] == "") || call.Committed != (i+1 == w.commit) {
				t.Errorf("%s call %d: %s code=%q ok=%v committed=%v", scen, i+1, call.Tool, call.Code, call.OK, call.Committed)
			}
		}
	}
	for _, scen := range []string{"charge-502-twice", "refund-timeout-after-send"} {
		tr := byKey["agents-sdk-down/"+scen]
		if !tr.Attrition || tr.Recovered != nil || tr.SelfCorrection != nil || tr.ToolCalls != 0 {
			t.Errorf("%s on the down endpoint: want ungraded attrition, got %+v", scen, tr)
		}
		var p agent.Process
		if err := json.Unmarshal([]byte(tr.Process), &p); err != nil || p.ExitCode != 75 || !strings.Contains(p.Stderr, "Connection") {
			t.Errorf("%s on the down endpoint: process record %s (%v)", scen, tr.Process, err)
		}
	}
}

// hostPort is the host:port of a URL.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
