package endpoint_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/endpoint"
)

func newClient(t *testing.T, srv *llmtest.Server, key endpoint.Key, sl *llmtest.Sleeps) *endpoint.Client {
	t.Helper()
	return endpoint.NewClient(endpoint.ClientConfig{
		BaseURL: srv.BaseURL(), Key: key, Model: "m", RequestTimeout: 5 * time.Second, Sleep: sl.Sleep,
	})
}

var request = openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}

// policy retries twice, 1 s then 2 s, and accepts a Retry-After up to a
// minute.
var policy = endpoint.RetryPolicy{MaxRetries: 2, Base: time.Second, MaxWait: time.Minute}

// The one taxonomy: what each answer of the provider is, and what
// Complete does with it under the policy.
func TestTaxonomy(t *testing.T) {
	cases := []struct {
		name     string
		reply    llmtest.Reply
		want     error // ErrConfig or ErrExhausted
		requests int
		waits    []time.Duration
		msg      string
	}{
		{"400 bad request", llmtest.Error(http.StatusBadRequest), endpoint.ErrConfig, 1, nil, "m: HTTP 400 Bad Request"},
		{"401", llmtest.Error(http.StatusUnauthorized), endpoint.ErrConfig, 1, nil, "HTTP 401"},
		{"403", llmtest.Error(http.StatusForbidden), endpoint.ErrConfig, 1, nil, "HTTP 403"},
		{"404 unknown model", llmtest.Error(http.StatusNotFound), endpoint.ErrConfig, 1, nil, "HTTP 404"},
		{"422", llmtest.Error(http.StatusUnprocessableEntity), endpoint.ErrConfig, 1, nil, "HTTP 422"},
		{"408", llmtest.Error(http.StatusRequestTimeout), endpoint.ErrExhausted, 3, []time.Duration{time.Second, 2 * time.Second}, "HTTP 408"},
		{"409", llmtest.Error(http.StatusConflict), endpoint.ErrExhausted, 3, []time.Duration{time.Second, 2 * time.Second}, "HTTP 409"},
		{"429 with Retry-After", llmtest.Error(http.StatusTooManyRequests, "Retry-After", "7"), endpoint.ErrExhausted, 3, []time.Duration{7 * time.Second, 7 * time.Second}, "still failing after 3 attempts"},
		{"500", llmtest.Error(http.StatusInternalServerError), endpoint.ErrExhausted, 3, []time.Duration{time.Second, 2 * time.Second}, "HTTP 500"},
		{"503 with retry-after-ms", llmtest.Error(http.StatusServiceUnavailable, "Retry-After-Ms", "250"), endpoint.ErrExhausted, 3, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}, "HTTP 503"},
		{"Retry-After beyond MaxWait", llmtest.Error(http.StatusTooManyRequests, "Retry-After", "120"), endpoint.ErrExhausted, 1, nil, "asked to wait 2m0s, more than retry_max_wait 1m0s"},
		{"malformed body", llmtest.Text("").WithBody(`{"choices": [`), endpoint.ErrExhausted, 3, []time.Duration{time.Second, 2 * time.Second}, "m: "},
		{"no choices", llmtest.Text("").WithBody(`{"id":"x","object":"chat.completion","model":"m","choices":[]}`), endpoint.ErrExhausted, 3, []time.Duration{time.Second, 2 * time.Second}, "malformed response: response has no choices"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Always(tc.reply)
			var sl llmtest.Sleeps
			_, _, retries, err := newClient(t, srv, "", &sl).Complete(context.Background(), request, 0, policy)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.want, tc.msg)
			}
			if tc.want == endpoint.ErrConfig && (errors.Is(err, endpoint.ErrTransient) || errors.Is(err, endpoint.ErrExhausted)) {
				t.Fatalf("a configuration error is also %v", err)
			}
			if n := len(srv.Requests()); n != tc.requests || retries != tc.requests-1 {
				t.Fatalf("%d requests, %d retries; want %d requests", n, retries, tc.requests)
			}
			if len(sl.All()) != len(tc.waits) || (len(tc.waits) > 0 && !slices.Equal(sl.All(), tc.waits)) {
				t.Fatalf("waits %v, want %v", sl.All(), tc.waits)
			}
		})
	}
}

// A transient failure followed by an answer: the answer and its raw body
// come back with the retry counted; the key is redacted from the body.
func TestCompleteRecoversAndRedacts(t *testing.T) {
	const key = "sk-endpoint-test-KEY-0123456789"
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusBadGateway), llmtest.Text("the key is "+key))
	var sl llmtest.Sleeps
	resp, raw, retries, err := newClient(t, srv, key, &sl).Complete(context.Background(), request, 0, policy)
	if err != nil || retries != 1 || len(sl.All()) != 1 {
		t.Fatalf("err %v, %d retries, waits %v", err, retries, sl.All())
	}
	if got := resp.Choices[0].Message.Content; got != "the key is "+key {
		t.Fatalf("content %q (the caller redacts what it keeps)", got)
	}
	if strings.Contains(string(raw), key) || !strings.Contains(string(raw), endpoint.Redacted) {
		t.Fatalf("raw body not redacted: %s", raw)
	}
	if h := srv.Requests()[1].Header.Get("Authorization"); h != "Bearer "+key {
		t.Fatalf("authorization header %q", h)
	}
}

// A 429 throttles the provider's limiter: the next request of any client
// sharing it waits out the Retry-After.
func TestTooManyRequestsThrottlesTheLimiter(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusTooManyRequests, "Retry-After", "30"), llmtest.Text("ok"))
	now := time.Unix(1700000000, 0)
	l := endpoint.NewLimiter(0, 0, func() time.Time { return now })
	var sl llmtest.Sleeps
	c := endpoint.NewClient(endpoint.ClientConfig{BaseURL: srv.BaseURL(), Model: "m", RequestTimeout: 5 * time.Second, Limiter: l, Sleep: sl.Sleep})
	if _, _, err := c.Attempt(context.Background(), request, 0); !errors.Is(err, endpoint.ErrTransient) {
		t.Fatalf("err = %v", err)
	}
	if d := l.Reserve(0); d != 30*time.Second {
		t.Fatalf("after a 429 with Retry-After 30 the limiter holds requests %v", d)
	}
}

// A 429 asking for longer than the policy accepts gives up the request
// that got it and every later request of the provider while the pause
// lasts, at once: none of them sleeps the hour, none is sent. An absurd
// Retry-After holds the limiter for a day at the most.
func TestLongRetryAfterGivesUpEveryRequest(t *testing.T) {
	for _, after := range []string{"3600", "1" + strings.Repeat("0", 40)} {
		t.Run(after[:4], func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(llmtest.Error(http.StatusTooManyRequests, "Retry-After", after))
			srv.Always(llmtest.Text("ok"))
			now := time.Unix(1700000000, 0)
			l := endpoint.NewLimiter(0, 0, func() time.Time { return now })
			var sl llmtest.Sleeps
			cfg := endpoint.ClientConfig{BaseURL: srv.BaseURL(), Model: "m", RequestTimeout: 5 * time.Second, Limiter: l, Sleep: sl.Sleep}
			first, second := endpoint.NewClient(cfg), endpoint.NewClient(cfg)
			if _, _, _, err := first.Complete(context.Background(), request, 0, policy); !errors.Is(err, endpoint.ErrExhausted) || !strings.Contains(err.Error(), "more than retry_max_wait 1m0s") {
				t.Fatalf("the request answered 429: err = %v", err)
			}
			if p := l.Paused(); p <= policy.MaxWait || p > 24*time.Hour {
				t.Fatalf("limiter paused %v, want more than MaxWait and at most a day", p)
			}
			_, _, retries, err := second.Complete(context.Background(), request, 0, policy)
			if !errors.Is(err, endpoint.ErrExhausted) || !strings.Contains(err.Error(), "asked every request to wait") || retries != 0 {
				t.Fatalf("a later request: err = %v after %d retries", err, retries)
			}
			if n := len(srv.Requests()); n != 1 || len(sl.All()) != 0 {
				t.Fatalf("%d requests sent, waits %v: the later request must give up unsent, without waiting", n, sl.All())
			}
			// Once the pause is over, requests flow again.
			now = now.Add(24 * time.Hour)
			if _, _, _, err := second.Complete(context.Background(), request, 0, policy); err != nil {
				t.Fatalf("after the pause: %v", err)
			}
		})
	}
}

// A request that outlasts RequestTimeout is a transient failure; the
// caller's own cancellation is returned as such.
func TestTimeoutAndCancellation(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Text("late").WithDelay(time.Second))
	c := endpoint.NewClient(endpoint.ClientConfig{BaseURL: srv.BaseURL(), Model: "m", RequestTimeout: 50 * time.Millisecond})
	_, _, err := c.Attempt(context.Background(), request, 0)
	if !errors.Is(err, endpoint.ErrTransient) || !strings.Contains(err.Error(), "no response within request_timeout 50ms") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := c.Complete(ctx, request, 0, policy); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}
