package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/endpoint"
)

// A provider 429 is retried after its Retry-After and never reaches the
// trial: the ledger and the outcome are those of a healthy provider.
func TestProvider429RetriedHonouringRetryAfter(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(llmtest.Error(http.StatusTooManyRequests, "Retry-After", "7"))
	srv.Push(script[:3]...)
	srv.Push(llmtest.Error(http.StatusServiceUnavailable, "Retry-After-Ms", "1500"))
	srv.Push(script[3:]...)
	a, sl := newAgent(t, srv, nil)
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Claim != goodClaim {
		t.Errorf("claim = %q", out.Claim)
	}
	if got := sl.All(); len(got) != 2 || got[0] != 7*time.Second || got[1] != 1500*time.Millisecond {
		t.Errorf("waits = %v, want [7s 1.5s]", got)
	}
	if n := len(env.d.Ledger().Attempts); n != 3 {
		t.Errorf("provider failures leaked into the ledger: %d attempts", n)
	}
	if rec := a.Recording(); rec.ProviderRetries != 2 || len(rec.Steps) != 6 || rec.Steps[0].ProviderRetries != 1 || rec.Steps[3].ProviderRetries != 1 {
		t.Errorf("recording retries = %d, steps %d", rec.ProviderRetries, len(rec.Steps))
	}
}

// Without Retry-After the backoff is exponential with jitter, capped.
func TestBackoffWithoutRetryAfter(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Error(http.StatusBadGateway))
	a, sl := newAgent(t, srv, func(c *Config) { c.MaxRetries = 5; c.RetryBase = time.Second; c.RetryMaxWait = 8 * time.Second })
	env, _ := newEnv(t)
	_, err := a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrAttrition) {
		t.Fatalf("err = %v", err)
	}
	got := sl.All()
	caps := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if len(got) != len(caps) {
		t.Fatalf("waits = %v", got)
	}
	for i, d := range got {
		if d < caps[i]/2 || d > caps[i] {
			t.Errorf("wait %d = %v, want in [%v, %v]", i+1, d, caps[i]/2, caps[i])
		}
	}
}

// Persistent 5xx: every retry spent, then an error wrapping ErrAttrition
// (the activity counts the trial as attrition and does not grade it).
func TestPersistent5xxIsAttrition(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Error(http.StatusServiceUnavailable))
	a, sl := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	_, err := a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrAttrition) || errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrAttrition", err)
	}
	if !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "4 attempts") {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 4 || len(sl.All()) != 3 {
		t.Errorf("%d requests, %d waits; want 4 and 3 (MaxRetries 3)", n, len(sl.All()))
	}
	if len(env.d.Ledger().Attempts) != 0 {
		t.Error("tool calls without a model answer")
	}
}

// A server asking to wait longer than RetryMaxWait is treated as
// persistent at once.
func TestRetryAfterBeyondMaxWait(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusTooManyRequests, "Retry-After", "3600"))
	a, sl := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	_, err := a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrAttrition) || !strings.Contains(err.Error(), "asked to wait 1h0m0s") || len(sl.All()) != 0 {
		t.Fatalf("err = %v, waits %v", err, sl.All())
	}
}

// 401 is a configuration error: no retry, and the key never appears in
// the error even when the provider echoes it.
func TestUnauthorizedIsConfigError(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusUnauthorized).WithBody(
		`{"error":{"message":"Incorrect API key provided: sk-test-SUPERSECRET-0123456789.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	a, sl := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	_, err := a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrConfig) || errors.Is(err, ErrAttrition) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
	if strings.Contains(err.Error(), "SUPERSECRET") || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("err = %v", err)
	}
	if len(srv.Requests()) != 1 || len(sl.All()) != 0 {
		t.Errorf("a 401 was retried")
	}
}

func TestBadRequestIsConfigError(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusBadRequest).WithBody(`not json at all`))
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	_, err := a.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "not json at all") {
		t.Fatalf("err = %v", err)
	}
}

// Timeouts, malformed bodies and connection errors are provider failures.
func TestTimeoutAndMalformedResponsesRetried(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Text("slow").WithDelay(5*time.Second),
		llmtest.Text("").WithBody(`{"id":"x","choices":[{"index":0,"message":{"role":"assis`),
		llmtest.Text("").WithBody(`{"id":"x","object":"chat.completion","choices":[]}`),
		llmtest.Text("done"),
		llmtest.Text(goodClaim),
	)
	a, sl := newAgent(t, srv, func(c *Config) { c.RequestTimeout = 100 * time.Millisecond })
	env, _ := newEnv(t)
	start := time.Now()
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("the timeout did not cut the slow response")
	}
	if out.Claim != goodClaim || len(sl.All()) != 3 {
		t.Errorf("claim %q, waits %v", out.Claim, sl.All())
	}

	dead := llmtest.New(t)
	url := dead.BaseURL()
	dead.Close()
	b, _ := newAgent(t, srv, func(c *Config) { c.BaseURL = url; c.MaxRetries = 1 })
	_, err = b.Run(context.Background(), env, testTask)
	if !errors.Is(err, ErrAttrition) || !strings.Contains(err.Error(), "connection error") {
		t.Errorf("connection refused: err = %v", err)
	}
}

// Cancellation is not attrition: it ends the run with the context's error,
// during a request or during a backoff.
func TestContextCancellation(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("slow").WithDelay(10 * time.Second))
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Run(ctx, env, testTask)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAttrition) {
		t.Fatalf("err = %v", err)
	}

	srv.Push(llmtest.Error(http.StatusTooManyRequests, "Retry-After", "30"))
	wall, err := New(a.Config()) // wall-clock sleeps
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel2)
	start := time.Now()
	_, err = wall.Run(ctx2, env, testTask)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

// The API key is never in an error, a recording, or the agent's printed
// form, even when the provider echoes it.
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-test-SUPERSECRET-0123456789"
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(llmtest.Call("call_1", "shop__get_order", map[string]any{"order_id": key})),
		llmtest.Text("Your key is "+key),
		llmtest.Text(goodClaim),
	)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	rec, err := json.Marshal(a.Recording())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "SUPERSECRET") {
		t.Errorf("recording contains the key")
	}
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), a.Name(), fmt.Sprintf("%+v", a.Config())} {
		if strings.Contains(s, "SUPERSECRET") {
			t.Errorf("printed agent contains the key: %s", s)
		}
	}
	t.Setenv(testKeyEnv, "")
	_, err = New(a.Config())
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), testKeyEnv) {
		t.Errorf("missing key: err = %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	temp, topP := 2.5, -0.1
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Settings: endpoint.Settings{Model: "m"}}, "base_url: required"},
		{Config{Settings: endpoint.Settings{BaseURL: "ftp://x", Model: "m"}}, "not an http(s) URL"},
		{Config{Settings: endpoint.Settings{BaseURL: "https://user:pw@api.example.com/v1", Model: "m"}}, "must not carry credentials"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1"}}, "model: required"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m", APIKeyEnv: "sk-abc123"}}, "NAME of an environment variable"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m", Temperature: &temp}}, "temperature must be in [0, 2]"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m", TopP: &topP}}, "top_p must be in [0, 1]"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m"}, Prompt: "p", PromptHash: "0000"}, "does not match the prompt"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m", MaxTurns: -1}, MaxRetries: -1}, "max_turns must not be negative; max_retries"},
		{Config{Settings: endpoint.Settings{BaseURL: "http://x/v1", Model: "m"}, Prices: Prices{InputPerMTok: -1}}, "prices must not be negative"},
	}
	for _, c := range bad {
		err := c.cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
	good := Config{Settings: endpoint.Settings{BaseURL: "http://localhost:11434/v1", Model: "qwen3:8b"}, Prompt: "p", PromptHash: endpoint.HashPrompt("p")}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Config(); c.MaxTurns != DefaultMaxTurns || c.RequestTimeout != DefaultRequestTimeout || c.MaxRetries != DefaultMaxRetries {
		t.Errorf("defaults not applied: %+v", c)
	}
	if a.Name() != "llm:qwen3:8b:prompt@"+endpoint.HashPrompt("p") || len(endpoint.HashPrompt("p")) != 16 || endpoint.HashPrompt("p") == endpoint.HashPrompt("p ") {
		t.Errorf("name %s, hash %s", a.Name(), endpoint.HashPrompt("p"))
	}
}

// Reasoning models reject max_tokens: the agent sends
// max_completion_tokens for them, max_tokens otherwise.
func TestMaxTokensField(t *testing.T) {
	for model, field := range map[string]string{"gpt-4o-mini": `"max_tokens":256`, "o3-mini": `"max_completion_tokens":256`, "llama3.1:8b": `"max_tokens":256`} {
		srv := llmtest.New(t)
		srv.Push(llmtest.Text("done"), llmtest.Text(goodClaim))
		a, _ := newAgent(t, srv, func(c *Config) { c.Model = model; c.MaxTokens = 256; c.Temperature = nil })
		env, _ := newEnv(t)
		if _, err := a.Run(context.Background(), env, testTask); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if body := string(srv.Requests()[0].Body); !strings.Contains(body, field) || strings.Contains(body, "temperature") {
			t.Errorf("%s: body %.400s", model, body)
		}
	}
}
