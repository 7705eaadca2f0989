package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"rebound/core/agent/llm/llmtest"
	"rebound/core/harness"
	"rebound/internal/endpoint"
)

func recordChargeTrial(t *testing.T) (*Recording, []byte, string) {
	t.Helper()
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(429, "Retry-After", "1"))
	srv.Push(chargeScript()...)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	ledger, _ := json.Marshal(env.d.Ledger())
	// Through JSON, as it would be stored.
	raw, err := json.Marshal(a.Recording())
	if err != nil {
		t.Fatal(err)
	}
	var rec Recording
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return &rec, ledger, out.Claim
}

// Replaying a recording on the same variant and seed reproduces the same
// ledger, claim and usage, offline (no server, no key).
func TestRecordAndReplayReproduceLedger(t *testing.T) {
	rec, ledger, claim := recordChargeTrial(t)
	if len(rec.Steps) != 6 || rec.ProviderRetries != 1 {
		t.Fatalf("recording: %d steps, %d retries", len(rec.Steps), rec.ProviderRetries)
	}
	var resp struct {
		ID    string `json:"id"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(rec.Steps[0].Response, &resp); err != nil || resp.ID != "chatcmpl-llmtest-2" || resp.Usage.PromptTokens != 300 {
		t.Errorf("step 1 response is not the provider's JSON: %s", rec.Steps[0].Response)
	}

	t.Setenv(testKeyEnv, "")
	temp := 0.0
	cfg := Config{Settings: endpoint.Settings{BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: testKeyEnv, Model: "test-model", Temperature: &temp, MaxTurns: 8}, Prompt: "You are a careful operations agent.", PromptName: "careful-v1", Prices: Prices{InputPerMTok: 2.5, OutputPerMTok: 10}, MaxRetries: 3}
	a, err := New(cfg, WithReplay(rec))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(env.d.Ledger())
	if string(got) != string(ledger) {
		t.Errorf("replayed ledger differs:\n%s\n%s", got, ledger)
	}
	if out.Claim != claim || out.Tokens != rec.PromptTokens+rec.CompletionTokens {
		t.Errorf("outcome = %+v", out)
	}
	if !reflect.DeepEqual(a.Recording(), rec) {
		t.Errorf("the replay's recording differs from the original")
	}
}

// A replay on a different fault schedule diverges where the conversation
// first differs: the charge no longer fails, so the tool result sent at
// step 3 is not the recorded one.
func TestReplayDivergenceAtFirstDifferingStep(t *testing.T) {
	rec, _, _ := recordChargeTrial(t)
	temp := 0.0
	cfg := Config{Settings: endpoint.Settings{BaseURL: "http://127.0.0.1:1/v1", Model: "test-model", Temperature: &temp, MaxTurns: 8}, Prompt: "You are a careful operations agent.", PromptName: "careful-v1", MaxRetries: 3}
	a, err := New(cfg, WithReplay(rec))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := newEnv(t) // no fault
	_, err = a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrDivergence) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"divergence at step 3: expected request with message 1: tool result for call_2",
		`"{\"ok\":false,\"code\":\"BAD_GATEWAY\"`, `got message 1: tool result for call_2 "{\"ok\":true`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := len(a.Recording().Steps); n != 2 {
		t.Errorf("recording kept %d steps, want the 2 before the divergence", n)
	}
	if n := len(env.d.Ledger().Attempts); n != 2 {
		t.Errorf("%d attempts before the divergence, want 2", n)
	}

	// A changed prompt diverges at step 1; a smaller MaxTurns ends early.
	cfg.Prompt = "You are a reckless agent."
	b, _ := New(cfg, WithReplay(rec))
	env2, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := b.Run(context.Background(), env2, testTask); !errors.Is(err, ErrDivergence) || !strings.Contains(err.Error(), "at step 1: expected request with message 1: system") {
		t.Errorf("changed prompt: err = %v", err)
	}
	cfg.Prompt = "You are a careful operations agent."
	cfg.MaxTurns = 3
	c, _ := New(cfg, WithReplay(rec))
	env3, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := c.Run(context.Background(), env3, testTask); !errors.Is(err, ErrDivergence) || !strings.Contains(err.Error(), "at step 4: expected turn request with message 1: tool result for call_3") || !strings.Contains(err.Error(), "got the end of the run") {
		t.Errorf("fewer turns: err = %v", err)
	}
	// A different tool catalog diverges at step 1 on the tools.
	cfg.MaxTurns = 8
	d, _ := New(cfg, WithReplay(rec))
	if _, err := d.Run(context.Background(), fixedTools{{Name: "shop.get_order", Effect: harness.EffectRead}}, testTask); !errors.Is(err, ErrDivergence) || !strings.Contains(err.Error(), "at step 1: expected request with tools [shop__admin_override") {
		t.Errorf("other tools: err = %v", err)
	}
}
