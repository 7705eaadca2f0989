package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/internal/endpoint"
)

// Status says whether a trial was scored.
type Status string

const (
	// Judged: the output passed validation; Result.Output holds it.
	Judged Status = "judged"
	// ReviewNeeded: every attempt failed (invalid output or provider
	// failure); the trial goes to the human review queue with the reason
	// and the last partial output. It never gets a default score.
	ReviewNeeded Status = "review_needed"
)

// Result is the outcome of one Score call. Model and PromptHash (the judge
// version) come with every result, judged, cached or not.
type Result struct {
	Status Status
	// Output is the validated answer (Status Judged only).
	Output Output

	Scenario   string
	TraceHash  string // hex SHA-256 of Document
	Model      string // the judge model as configured
	PromptHash string // the rubric's hash
	// ServedModel is the model name the provider reported answering (often
	// a dated version of Model); empty for a cached or failed result.
	ServedModel string
	// Attempts is the number of model requests made (0: from the cache).
	Attempts int
	Cached   bool
	// RawOutput is the model's answer as written (Judged; the cached
	// canonical output on a cache hit). The API key is redacted from it.
	RawOutput string
	// Reason says why the trial needs review: every attempt's failure.
	Reason string
	// PartialOutput is the last answer the model gave, if any (ReviewNeeded).
	PartialOutput string
	// Document is the canonical judged document (the raw trace).
	Document string
	JudgedAt time.Time
}

// CacheKey identifies a judged content and the judge: scenario, trace hash,
// model and prompt hash.
type CacheKey struct {
	Scenario   string
	TraceHash  string
	Model      string
	PromptHash string
}

// Cache keeps validated outputs (canonical JSON) by CacheKey. Production
// uses the store (StoreCache); tests use MemoryCache.
type Cache interface {
	Get(ctx context.Context, key CacheKey) (output string, found bool, err error)
	Put(ctx context.Context, key CacheKey, output string) error
}

// MemoryCache is an in-process Cache.
type MemoryCache struct {
	mu sync.Mutex
	m  map[CacheKey]string
}

func (c *MemoryCache) Get(_ context.Context, key CacheKey) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, ok := c.m[key]
	return out, ok, nil
}

func (c *MemoryCache) Put(_ context.Context, key CacheKey, output string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[CacheKey]string{}
	}
	c.m[key] = output
	return nil
}

// Len is the number of cached outputs.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// ErrCache wraps a failure of the cache. A failed read stops Score (retry
// later); a failed write comes with a complete, valid Result.
var ErrCache = errors.New("judge: cache")

// Option adjusts a Judge.
type Option func(*Judge)

// WithCache sets the cache (default: none, every Score asks the model).
func WithCache(c Cache) Option { return func(j *Judge) { j.cache = c } }

// WithSleep replaces the wall-clock wait between attempts (tests record the
// waits and return at once). It must return ctx.Err() when ctx ends first.
func WithSleep(sleep endpoint.Sleep) Option {
	return func(j *Judge) { j.sleep = sleep }
}

// WithHTTPClient sets the HTTP client (proxies, TLS). Leave its Timeout
// zero: Config.RequestTimeout bounds each request.
func WithHTTPClient(c *http.Client) Option { return func(j *Judge) { j.httpClient = c } }

// WithClock sets the clock that stamps JudgedAt.
func WithClock(now func() time.Time) Option { return func(j *Judge) { j.now = now } }

// Judge scores trials with an LLM over an OpenAI-compatible API. It is safe
// for concurrent use.
type Judge struct {
	cfg        Config
	key        endpoint.Key
	client     *endpoint.Client
	cache      Cache
	sleep      endpoint.Sleep
	httpClient *http.Client
	now        func() time.Time
}

// New validates cfg and reads the API key from the environment variable it
// names. Errors wrap ErrConfig and never contain the key.
func New(cfg Config, opts ...Option) (*Judge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	key, err := endpoint.APIKey(cfg.APIKeyEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	j := &Judge{cfg: cfg, key: key, sleep: endpoint.RealSleep, now: time.Now}
	for _, o := range opts {
		o(j)
	}
	if j.sleep == nil {
		j.sleep = endpoint.RealSleep
	}
	if j.now == nil {
		j.now = time.Now
	}
	// The judge shares the client layer with the LLM arms: one error
	// taxonomy, Retry-After honoured, and the provider's process-wide
	// limiter, so a 429 answered to an arm holds the judge back too.
	j.client = endpoint.NewClient(endpoint.ClientConfig{
		BaseURL: cfg.BaseURL, Key: key, Model: cfg.Model, RequestTimeout: cfg.RequestTimeout,
		HTTPClient: j.httpClient, Limiter: endpoint.LimiterFor(cfg.BaseURL, cfg.APIKeyEnv, 0, 0), Sleep: j.sleep,
	})
	return j, nil
}

// Model is the configured judge model.
func (j *Judge) Model() string { return j.cfg.Model }

// PromptHash is the rubric's hash.
func (j *Judge) PromptHash() string { return j.cfg.PromptHash }

// String and GoString name the judge, never its fields (the key is one).
func (j *Judge) String() string   { return "judge:" + j.cfg.Model + "@" + j.cfg.PromptHash }
func (j *Judge) GoString() string { return "judge.Judge(" + j.String() + ")" }

// attempts is the number of requests one Score makes at most.
func attempts() int { return Retry.MaxRetries + 1 }

// Score judges one trial. It looks the content up in the cache first; on a
// miss it asks the model with a strict JSON-schema response format and
// validates the answer (ParseOutput). An invalid answer or a transient
// provider failure (endpoint.ErrTransient: 408, 409, 429, 5xx, timeouts,
// connection errors, a malformed response; also a refusal or an answer cut
// off at the token limit) is retried under Retry: after 1 s and then 4 s,
// or after the provider's Retry-After when it names one. After the third
// failure, or when the provider asks to wait more than Retry.MaxWait, the
// Result has Status ReviewNeeded with the reason and the last partial
// output, for the review queue: never a default score. A valid answer is
// cached.
//
// Errors: ErrNothingToJudge (no failure in the trace: skip the trial), an
// invalid input, ErrConfig (the provider answered 400, 401, 403, 404, 422
// or another 4xx that says the configuration is wrong: fix it), the
// context's error, or ErrCache (a failed cache write still returns the
// complete Result).
func (j *Judge) Score(ctx context.Context, in Input) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	doc, err := in.Document()
	if err != nil {
		return Result{}, fmt.Errorf("judge: render the trace: %w", err)
	}
	res := Result{
		Scenario: in.Scenario, TraceHash: hashBytes(doc), Model: j.cfg.Model, PromptHash: j.cfg.PromptHash,
		Document: string(doc),
	}
	key := CacheKey{Scenario: in.Scenario, TraceHash: res.TraceHash, Model: j.cfg.Model, PromptHash: j.cfg.PromptHash}
	if j.cache != nil {
		cached, found, err := j.cache.Get(ctx, key)
		if err != nil {
			return Result{}, fmt.Errorf("%w: read %s/%s: %v", ErrCache, key.Scenario, key.TraceHash, err)
		}
		if found {
			// An entry that no longer validates (a changed validator) is
			// judged again and overwritten.
			if out, err := ParseOutput([]byte(cached)); err == nil {
				res.Status, res.Output, res.Cached, res.RawOutput = Judged, out, true, cached
				res.JudgedAt = j.now()
				return res, nil
			}
		}
	}

	base := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: j.cfg.Prompt},
		{Role: openai.ChatMessageRoleUser, Content: string(doc)},
	}
	msgs := base
	var reasons []string
	var failed *endpoint.Failure // the last attempt's provider failure
	for attempt := 1; attempt <= attempts(); attempt++ {
		if attempt > 1 {
			wait := Retry.Backoff(attempt - 2)
			if failed != nil {
				w, err := Retry.Wait(attempt-2, failed)
				if err != nil { // the provider asked for more than Retry.MaxWait
					reasons[len(reasons)-1] = fmt.Sprintf("attempt %d: provider failure: %s", attempt-1, j.redact(err.Error()))
					break
				}
				wait = w
			}
			if err := j.sleep(ctx, wait); err != nil {
				return Result{}, err
			}
		}
		if err := j.client.Held(Retry); err != nil { // another request's 429 holds the provider too long
			reasons = append(reasons, fmt.Sprintf("attempt %d: provider failure: %s", attempt, j.redact(err.Error())))
			break
		}
		res.Attempts = attempt
		failed = nil
		content, served, err := j.complete(ctx, msgs)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			if errors.Is(err, ErrConfig) {
				return Result{}, err
			}
			msg := err.Error()
			if errors.As(err, &failed) {
				msg = "provider failure: " + msg
			}
			reasons = append(reasons, fmt.Sprintf("attempt %d: %s", attempt, j.redact(msg)))
			msgs = base
			continue
		}
		// A provider that echoes the key must not get it into a score, a
		// row or the cache: redact before anything is read from the answer.
		content = j.redact(content)
		out, verr := ParseOutput([]byte(content))
		if verr != nil {
			res.PartialOutput = content
			reasons = append(reasons, fmt.Sprintf("attempt %d: %s", attempt, j.redact(verr.Error())))
			// Tell the model what was wrong; the next attempt answers again
			// from the same document.
			msgs = append(append([]openai.ChatCompletionMessage{}, base...),
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "That answer was rejected: " +
					verr.Error() + ". Answer again with only the JSON object, exactly as specified."},
			)
			continue
		}
		res.Status, res.Output, res.ServedModel = Judged, out, served
		res.RawOutput = content
		res.JudgedAt = j.now()
		if j.cache != nil {
			if err := j.cache.Put(ctx, key, canonicalOutput(out)); err != nil {
				return res, fmt.Errorf("%w: write %s/%s: %v", ErrCache, key.Scenario, key.TraceHash, err)
			}
		}
		return res, nil
	}
	res.Status = ReviewNeeded
	res.Reason = strings.Join(reasons, "; ")
	res.JudgedAt = j.now()
	return res, nil
}

// complete sends one request through the client layer and returns the
// answer's content and the served model name. A failure is ErrConfig when
// the provider says the configuration is wrong, else an *endpoint.Failure
// or an error about the answer, each worth a retry.
func (j *Judge) complete(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, string, error) {
	req := openai.ChatCompletionRequest{
		Model:       j.cfg.Model,
		Messages:    msgs,
		Temperature: nonZero32(j.cfg.Temperature),
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:        "error_handling_judgement",
				Description: "scores of an agent's error handling, 1-5 per dimension, with justifications",
				Schema:      OutputSchema,
				Strict:      true,
			},
		},
	}
	if j.cfg.MaxTokens > 0 {
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers read
		req.MaxTokens = j.cfg.MaxTokens
	}
	resp, _, err := j.client.Attempt(ctx, req, 0)
	if err != nil {
		if errors.Is(err, endpoint.ErrConfig) {
			return "", "", fmt.Errorf("%w: %s", ErrConfig, err.Error())
		}
		return "", "", err
	}
	c := resp.Choices[0]
	if c.Message.Refusal != "" {
		return "", "", fmt.Errorf("the model refused: %s", endpoint.Truncate(c.Message.Refusal, 300))
	}
	content := c.Message.Content
	if c.FinishReason == openai.FinishReasonLength {
		return "", "", fmt.Errorf("the answer was cut off at the token limit (finish_reason length): %s", endpoint.Truncate(content, 300))
	}
	return content, resp.Model, nil
}

// redact removes the API key from text bound for a result or a row.
func (j *Judge) redact(s string) string { return j.key.Redact(s) }

// nonZero32 sends temperature 0 as the smallest positive float32: go-openai
// drops a zero (omitempty) and the provider would use its default of 1.
func nonZero32(x float64) float32 {
	if x == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(x)
}
