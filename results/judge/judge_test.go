package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/endpoint"
)

func newJudge(t *testing.T, srv *llmtest.Server, opts ...Option) (*Judge, *fakeSleep) {
	t.Helper()
	fs := &fakeSleep{}
	j, err := New(Config{BaseURL: srv.BaseURL(), Model: "judge-model"}, append([]Option{WithSleep(fs.Sleep)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return j, fs
}

func TestScoreValidOutputIsCached(t *testing.T) {
	srv := llmtest.New(t)
	cache := &MemoryCache{}
	j, fs := newJudge(t, srv, WithCache(cache))
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	srv.Push(llmtest.Text(outputJSON(5, 5, 4, 5, 4)))

	ctx := context.Background()
	res, err := j.Score(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Judged || res.Cached || res.Attempts != 1 || res.Output.BackoffBehavior.Score != 4 ||
		res.Output.Recommendation != Pass || res.Output.AggregateScore != 4.6 {
		t.Fatalf("first Score = %+v", res)
	}
	if res.Model != "judge-model" || res.PromptHash != endpoint.HashPrompt(DefaultPrompt) || len(res.TraceHash) != 64 || res.ServedModel != "judge-model" {
		t.Fatalf("versions not logged: model %q prompt %q trace %q served %q", res.Model, res.PromptHash, res.TraceHash, res.ServedModel)
	}
	if len(fs.All()) != 0 || cache.Len() != 1 {
		t.Fatalf("waits %v, cached %d", fs.All(), cache.Len())
	}

	// The same trace again: answered from the cache, no request.
	again, err := j.Score(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("second Score made a request (%d in all)", n)
	}
	if again.Status != Judged || !again.Cached || again.Attempts != 0 || !reflect.DeepEqual(again.Output, res.Output) ||
		again.TraceHash != res.TraceHash || again.Model != res.Model || again.PromptHash != res.PromptHash {
		t.Fatalf("cached Score = %+v", again)
	}

	// Another judge prompt is another cache key: it asks the model.
	other, err := New(Config{BaseURL: srv.BaseURL(), Model: "judge-model", Prompt: DefaultPrompt + "\nBe brief."},
		WithSleep(fs.Sleep), WithCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(llmtest.Text(outputJSON(3, 3, 3, 3, 3)))
	r3, err := other.Score(ctx, in)
	if err != nil || r3.Cached || r3.Output.Recommendation != Review || len(srv.Requests()) != 2 {
		t.Fatalf("another prompt: %+v, %v, %d requests", r3, err, len(srv.Requests()))
	}
	// So is another trace of the same scenario.
	changed := in
	changed.Trace.Answer += " (edited)"
	srv.Push(llmtest.Text(outputJSON(3, 3, 3, 3, 3)))
	if r4, err := j.Score(ctx, changed); err != nil || r4.Cached || r4.TraceHash == res.TraceHash || len(srv.Requests()) != 3 {
		t.Fatalf("changed trace: %+v, %v", r4, err)
	}
}

func TestRequestShape(t *testing.T) {
	srv := llmtest.New(t)
	j, _ := newJudge(t, srv)
	in, _ := realInput(t, "charge-502-twice", "502-twice", "naive_retrier")
	srv.Push(llmtest.Text(outputJSON(4, 2, 1, 3, 4)))
	res, err := j.Score(context.Background(), in)
	if err != nil || res.Status != Judged || res.Output.Recommendation != Fail {
		t.Fatalf("%+v, %v", res, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Model          string  `json:"model"`
		Temperature    float64 `json:"temperature"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "judge-model" || body.Temperature > 1e-6 {
		t.Fatalf("model %q temperature %v (0 must be sent, not dropped)", body.Model, body.Temperature)
	}
	rf := body.ResponseFormat
	if rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Name == "" {
		t.Fatalf("response_format %+v", rf)
	}
	var got, want any
	_ = json.Unmarshal(rf.JSONSchema.Schema, &got)
	if err := json.Unmarshal(OutputSchema, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schema sent %s", rf.JSONSchema.Schema)
	}
	doc, _ := in.Document()
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[0].Content != DefaultPrompt ||
		body.Messages[1].Role != "user" || body.Messages[1].Content != string(doc) || res.Document != string(doc) {
		t.Fatalf("messages %+v", body.Messages)
	}
	// The judge sees no verdict of the checks.
	for _, leak := range []string{"failed_checks", "outcomes", "pivot", "recovered", "honest_block", "premature_block"} {
		if strings.Contains(string(doc), `"`+leak+`"`) {
			t.Errorf("the judged document carries %q", leak)
		}
	}
}

func TestScoreInvalidTwiceThenValid(t *testing.T) {
	srv := llmtest.New(t)
	cache := &MemoryCache{}
	j, fs := newJudge(t, srv, WithCache(cache))
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	bad := strings.Replace(outputJSON(5, 5, 5, 5, 5), `"aggregate_score":5`, `"aggregate_score":4.5`, 1)
	srv.Push(
		llmtest.Text("Sure! Here are the scores: error_detection 5 ..."),
		llmtest.Text(bad),
		llmtest.Text(outputJSON(5, 5, 5, 5, 5)),
	)
	res, err := j.Score(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Judged || res.Attempts != 3 || res.Output.AggregateScore != 5 || res.Output.Recommendation != Pass {
		t.Fatalf("result %+v", res)
	}
	if got := fs.All(); !reflect.DeepEqual(got, []time.Duration{time.Second, 4 * time.Second}) {
		t.Fatalf("waits %v, want [1s 4s]", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	// The retry tells the model what was wrong with its last answer.
	last := reqs[2].Chat.Messages
	if len(last) != 4 || last[2].Role != "assistant" || last[2].Content != bad || last[3].Role != "user" ||
		!strings.Contains(last[3].Content, "aggregate_score 4.5 is not the mean") {
		t.Fatalf("third request messages %+v", last)
	}
	if cache.Len() != 1 {
		t.Fatal("the valid output was not cached")
	}
}

func TestScoreAlwaysInvalidNeedsReview(t *testing.T) {
	srv := llmtest.New(t)
	cache := &MemoryCache{}
	j, fs := newJudge(t, srv, WithCache(cache))
	in, _ := realInput(t, "charge-502-twice", "502-twice", "naive_retrier")
	partial := `{"error_detection": {"score": 6, "justification": "x"}}`
	srv.Always(llmtest.Text(partial))
	res, err := j.Score(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ReviewNeeded || res.Attempts != 3 || len(srv.Requests()) != 3 {
		t.Fatalf("result %+v after %d requests", res, len(srv.Requests()))
	}
	if res.Output != (Output{}) {
		t.Fatalf("a review-needed result carries scores: %+v", res.Output)
	}
	if res.PartialOutput != partial || !strings.Contains(res.Reason, "attempt 3: invalid judge output") ||
		!strings.Contains(res.Reason, "score 6 is outside 1..5") || !strings.Contains(res.Reason, "missing field recommendation") {
		t.Fatalf("reason %q partial %q", res.Reason, res.PartialOutput)
	}
	if !reflect.DeepEqual(fs.All(), []time.Duration{time.Second, 4 * time.Second}) {
		t.Fatalf("waits %v", fs.All())
	}
	if cache.Len() != 0 {
		t.Fatal("an invalid output was cached")
	}
	doc, _ := in.Document()
	if res.Document != string(doc) || res.Model == "" || res.PromptHash == "" || res.TraceHash == "" {
		t.Fatalf("review result lacks the trace or the versions: %+v", res)
	}
	if res.PartialOutput != partial || res.Attempts != 3 || res.Reason == "" {
		t.Fatalf("review result %+v", res)
	}
}

func TestScoreProviderFailures(t *testing.T) {
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	t.Run("500 every time", func(t *testing.T) {
		srv := llmtest.New(t)
		j, fs := newJudge(t, srv)
		srv.Always(llmtest.Error(500))
		res, err := j.Score(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != ReviewNeeded || res.Attempts != 3 || len(srv.Requests()) != 3 || res.PartialOutput != "" ||
			strings.Count(res.Reason, "HTTP 500") != 3 {
			t.Fatalf("result %+v after %d requests", res, len(srv.Requests()))
		}
		if !reflect.DeepEqual(fs.All(), []time.Duration{time.Second, 4 * time.Second}) {
			t.Fatalf("waits %v", fs.All())
		}
	})
	t.Run("500, 429, malformed body, then nothing more", func(t *testing.T) {
		srv := llmtest.New(t)
		j, _ := newJudge(t, srv)
		srv.Push(llmtest.Error(500), llmtest.Error(429, "Retry-After", "1"), llmtest.Text("").WithBody(`{"choices": [`))
		res, err := j.Score(context.Background(), in)
		if err != nil || res.Status != ReviewNeeded || !strings.Contains(res.Reason, "HTTP 429") || !strings.Contains(res.Reason, "attempt 3: provider failure") {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("Retry-After is honoured", func(t *testing.T) {
		srv := llmtest.New(t)
		j, fs := newJudge(t, srv)
		srv.Push(llmtest.Error(429, "Retry-After", "7"), llmtest.Error(503, "Retry-After-Ms", "1500"), llmtest.Text(outputJSON(4, 4, 4, 4, 4)))
		res, err := j.Score(context.Background(), in)
		if err != nil || res.Status != Judged || res.Attempts != 3 {
			t.Fatalf("%+v, %v", res, err)
		}
		if !reflect.DeepEqual(fs.All(), []time.Duration{7 * time.Second, 1500 * time.Millisecond}) {
			t.Fatalf("waits %v, want the provider's [7s 1.5s]", fs.All())
		}
	})
	t.Run("a Retry-After beyond MaxWait sends the trial to review at once", func(t *testing.T) {
		srv := llmtest.New(t)
		// An arm of this provider configured its limits: the judge shares
		// the provider's limiter.
		endpoint.LimiterFor(srv.BaseURL(), "", 600, 0)
		j, fs := newJudge(t, srv)
		srv.Always(llmtest.Error(429, "Retry-After", "3600"))
		res, err := j.Score(context.Background(), in)
		if err != nil || res.Status != ReviewNeeded || res.Attempts != 1 || len(srv.Requests()) != 1 || len(fs.All()) != 0 ||
			!strings.Contains(res.Reason, "asked to wait 1h0m0s, more than retry_max_wait 2m0s") {
			t.Fatalf("%+v, %v, waits %v", res, err, fs.All())
		}
		// The 429 holds the provider's limiter for the hour: the next trial
		// goes to review too, unsent, instead of waiting an hour in line.
		// (A provider with no limits configured has no shared limiter: each
		// request then honours its own 429.)
		res, err = j.Score(context.Background(), in)
		if err != nil || res.Status != ReviewNeeded || res.Attempts != 0 || len(srv.Requests()) != 1 || len(fs.All()) != 0 ||
			!strings.Contains(res.Reason, "asked every request to wait 1h0m0s, more than retry_max_wait 2m0s") {
			t.Fatalf("the next trial: %+v, %v, %d requests, waits %v", res, err, len(srv.Requests()), fs.All())
		}
	})
	t.Run("503 then valid", func(t *testing.T) {
		srv := llmtest.New(t)
		j, fs := newJudge(t, srv)
		srv.Push(llmtest.Error(503), llmtest.Text(outputJSON(4, 4, 4, 4, 4)))
		res, err := j.Score(context.Background(), in)
		if err != nil || res.Status != Judged || res.Attempts != 2 || !reflect.DeepEqual(fs.All(), []time.Duration{time.Second}) {
			t.Fatalf("%+v, %v, waits %v", res, err, fs.All())
		}
		// A provider failure is retried with the original messages.
		if msgs := srv.Requests()[1].Chat.Messages; len(msgs) != 2 {
			t.Fatalf("retry after a 503 sent %d messages", len(msgs))
		}
	})
	t.Run("refusal and truncation count as failures", func(t *testing.T) {
		srv := llmtest.New(t)
		j, _ := newJudge(t, srv)
		srv.Push(
			llmtest.Text("").WithBody(`{"id":"x","object":"chat.completion","model":"judge-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`),
			llmtest.Text(`{"error_detection": {"score": 5, "justif`).WithFinish("length"),
			llmtest.Text(outputJSON(2, 2, 2, 2, 2)),
		)
		res, err := j.Score(context.Background(), in)
		if err != nil || res.Status != Judged || res.Attempts != 3 || res.Output.Recommendation != Fail {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("400, 401, 403, 404 and 422 are configuration errors", func(t *testing.T) {
		for _, status := range []int{400, 401, 403, 404, 422} {
			srv := llmtest.New(t)
			j, fs := newJudge(t, srv)
			srv.Always(llmtest.Error(status))
			res, err := j.Score(context.Background(), in)
			if !errors.Is(err, ErrConfig) || res.Status != "" || len(srv.Requests()) != 1 || len(fs.All()) != 0 {
				t.Fatalf("HTTP %d: %+v, %v, %d requests", status, res, err, len(srv.Requests()))
			}
		}
	})
}

func TestScoreContextCancelled(t *testing.T) {
	srv := llmtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	j, err := New(Config{BaseURL: srv.BaseURL(), Model: "m"}, WithSleep(func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	srv.Always(llmtest.Error(500))
	if _, err := j.Score(ctx, in); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(srv.Requests()) != 1 {
		t.Fatalf("%d requests after cancellation", len(srv.Requests()))
	}
}

func TestScoreNothingToJudge(t *testing.T) {
	srv := llmtest.New(t)
	j, _ := newJudge(t, srv)
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	clean := in
	clean.Trace.Calls = nil
	for _, c := range in.Trace.Calls {
		if c.OK && c.Fault == "" {
			clean.Trace.Calls = append(clean.Trace.Calls, c)
		}
	}
	if _, err := j.Score(context.Background(), clean); !errors.Is(err, ErrNothingToJudge) {
		t.Fatalf("err = %v", err)
	}
	noID := in
	noID.Scenario = ""
	if _, err := j.Score(context.Background(), noID); err == nil {
		t.Fatal("input without a scenario accepted")
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("a request was made")
	}
}

// TestStaleCacheEntryIsRejudged: a cached entry that no longer validates is
// not trusted; the trial is judged again and the entry overwritten.
func TestStaleCacheEntryIsRejudged(t *testing.T) {
	srv := llmtest.New(t)
	cache := &MemoryCache{}
	j, _ := newJudge(t, srv, WithCache(cache))
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	hash, err := in.TraceHash()
	if err != nil {
		t.Fatal(err)
	}
	key := CacheKey{Scenario: in.Scenario, TraceHash: hash, Model: j.Model(), PromptHash: j.PromptHash()}
	_ = cache.Put(context.Background(), key, `{"score": 0}`)
	srv.Push(llmtest.Text(outputJSON(4, 4, 4, 4, 5)))
	res, err := j.Score(context.Background(), in)
	if err != nil || res.Cached || res.Status != Judged || len(srv.Requests()) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if out, _, _ := cache.Get(context.Background(), key); out != canonicalOutput(res.Output) {
		t.Fatalf("cache holds %q", out)
	}
}

type failingCache struct{ getErr, putErr error }

func (f failingCache) Get(context.Context, CacheKey) (string, bool, error) {
	return "", false, f.getErr
}
func (f failingCache) Put(context.Context, CacheKey, string) error { return f.putErr }

func TestCacheFailures(t *testing.T) {
	srv := llmtest.New(t)
	in, _ := realInput(t, "charge-502-twice", "502-twice", "careful")
	j, _ := newJudge(t, srv, WithCache(failingCache{getErr: errors.New("clickhouse down")}))
	if _, err := j.Score(context.Background(), in); !errors.Is(err, ErrCache) || len(srv.Requests()) != 0 {
		t.Fatalf("read failure: %v, %d requests", err, len(srv.Requests()))
	}
	j, _ = newJudge(t, srv, WithCache(failingCache{putErr: errors.New("clickhouse down")}))
	srv.Push(llmtest.Text(outputJSON(4, 4, 4, 4, 4)))
	res, err := j.Score(context.Background(), in)
	if !errors.Is(err, ErrCache) || res.Status != Judged || res.Output.Recommendation != Pass {
		t.Fatalf("write failure: %+v, %v", res, err)
	}
}

// TestKeyNeverLeaks: the key goes to the provider in the Authorization
// header and nowhere else: not in results, reasons, partial outputs, the
// cache, the rows, errors or the judge's printed form, even when the
// provider echoes it.
func TestKeyNeverLeaks(t *testing.T) {
	const secret = "sk-judge-test-5EcR3T-0123456789"
	t.Setenv("REBOUND_JUDGE_TEST_KEY", secret)
	srv := llmtest.New(t)
	cache := &MemoryCache{}
	fs := &fakeSleep{}
	j, err := New(Config{BaseURL: srv.BaseURL(), APIKeyEnv: "REBOUND_JUDGE_TEST_KEY", Model: "judge-model"},
		WithSleep(fs.Sleep), WithCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := realInput(t, "charge-502-twice", "502-twice", "naive_retrier")

	// A provider that echoes the key in errors and in its answers.
	echoed := strings.Replace(outputJSON(4, 4, 4, 4, 4), "see calls 1-3.", "key "+secret, 1)
	srv.Push(
		llmtest.Error(500).WithBody(`{"error":{"message":"bad key `+secret+`","type":"server_error"}}`),
		llmtest.Text("not json, key "+secret),
		llmtest.Text(echoed),
	)
	judged, err := j.Score(context.Background(), in)
	if err != nil || judged.Status != Judged {
		t.Fatalf("%+v, %v", judged, err)
	}
	srv.Always(llmtest.Text("{" + secret))
	changed := in
	changed.Trace.Answer = "another answer"
	review, err := j.Score(context.Background(), changed)
	if err != nil || review.Status != ReviewNeeded {
		t.Fatalf("%+v, %v", review, err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+secret {
		t.Fatalf("the key was not sent to the provider (Authorization %q)", got)
	}
	var cached []string
	for _, v := range cache.m {
		cached = append(cached, v)
	}
	for name, v := range map[string]any{
		"judged result": judged, "review result": review, // the stored rows copy these (judgestore)
		"cache": cached, "judge": fmt.Sprintf("%v %+v %#v %s", j, j, j, j),
	} {
		if s := fmt.Sprintf("%+v", v); strings.Contains(s, secret) {
			t.Errorf("%s leaks the key: %s", name, s)
		}
	}
	if !strings.Contains(judged.RawOutput, "[REDACTED]") || !strings.Contains(judged.Output.BackoffBehavior.Justification, "[REDACTED]") ||
		!strings.Contains(review.PartialOutput, "[REDACTED]") {
		t.Fatalf("the echoed key was not redacted: %q / %q", judged.RawOutput, review.PartialOutput)
	}
	// A configuration error names the variable, never the key.
	t.Setenv("REBOUND_JUDGE_TEST_KEY", "")
	if _, err := New(Config{BaseURL: srv.BaseURL(), APIKeyEnv: "REBOUND_JUDGE_TEST_KEY", Model: "m"}); !errors.Is(err, ErrConfig) ||
		!strings.Contains(err.Error(), "REBOUND_JUDGE_TEST_KEY") {
		t.Fatalf("missing key: %v", err)
	}
	srv401 := llmtest.New(t)
	srv401.Always(llmtest.Error(401).WithBody(`{"error":{"message":"Incorrect API key provided: ` + secret + `","type":"invalid_request_error"}}`))
	t.Setenv("REBOUND_JUDGE_TEST_KEY", secret)
	j401, err := New(Config{BaseURL: srv401.BaseURL(), APIKeyEnv: "REBOUND_JUDGE_TEST_KEY", Model: "m"}, WithSleep(fs.Sleep))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j401.Score(context.Background(), in); !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), secret) {
		t.Fatalf("401 error: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if strings.TrimSpace(DefaultPrompt) == "" || !strings.Contains(DefaultPrompt, "escalation_correctness") {
		t.Fatal("the default prompt is not embedded")
	}
	for _, d := range Dimensions {
		if !strings.Contains(DefaultPrompt, "## "+string(d)) {
			t.Errorf("the rubric has no section for %s", d)
		}
	}
	good := Config{BaseURL: "http://localhost:8000/v1", Model: "m"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	withHash := good
	withHash.PromptHash = endpoint.HashPrompt(DefaultPrompt)
	if err := withHash.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"no url":        {Model: "m"},
		"ftp url":       {BaseURL: "ftp://x/v1", Model: "m"},
		"credentials":   {BaseURL: "https://u:p@x/v1", Model: "m"},
		"no model":      {BaseURL: "http://x/v1"},
		"key not name":  {BaseURL: "http://x/v1", Model: "m", APIKeyEnv: "sk-abc-123"},
		"stale hash":    {BaseURL: "http://x/v1", Model: "m", PromptHash: "0000000000000000"},
		"temperature":   {BaseURL: "http://x/v1", Model: "m", Temperature: 3},
		"nan temp":      {BaseURL: "http://x/v1", Model: "m", Temperature: math.NaN()},
		"blank prompt":  {BaseURL: "http://x/v1", Model: "m", Prompt: "  "},
		"negative tok":  {BaseURL: "http://x/v1", Model: "m", MaxTokens: -1},
		"negative wait": {BaseURL: "http://x/v1", Model: "m", RequestTimeout: -time.Second},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
