package endpoint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
)

// ModelCallSpan names the span of one provider request.
const ModelCallSpan = "model.call"

// maxResponseBytes bounds a response body kept for the caller.
const maxResponseBytes = 32 << 20

// sharedTransport is reused by every client of the process, so concurrent
// trials share connections to a provider.
var sharedTransport = func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}()

// tracedClient wraps c's transport (sharedTransport when c is nil) so that
// each request to the provider is a span (ModelCallSpan) under the
// caller's, through the global tracer provider, with the GenAI semantic
// conventions' attributes (genaiTransport). No trace context is sent to
// the provider.
func tracedClient(c *http.Client) *http.Client {
	out := &http.Client{Transport: sharedTransport}
	if c != nil {
		cp := *c
		out = &cp
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = otelhttp.NewTransport(genaiTransport{base},
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return ModelCallSpan }),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()))
	return out
}

// captureDoer wraps the HTTP client go-openai uses. For each request that
// carries a *capture in its context it keeps the status, the headers (for
// Retry-After) and, on success, the raw body (for recordings), which it
// hands on to go-openai unchanged.
type captureDoer struct{ client *http.Client }

type captureKey struct{}

type capture struct {
	model  string // the request's, for the span (set by Attempt)
	status int
	header http.Header
	body   []byte
}

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	c, _ := req.Context().Value(captureKey{}).(*capture)
	if c == nil {
		return resp, nil
	}
	c.status, c.header = resp.StatusCode, resp.Header
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		c.body = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// ClientConfig configures a Client.
type ClientConfig struct {
	BaseURL string
	Key     Key
	// Model names the model in messages and observations; the request
	// carries its own.
	Model string
	// RequestTimeout bounds one attempt; a timeout is a transient failure.
	RequestTimeout time.Duration
	// HTTPClient carries proxies or TLS settings (nil: a transport shared
	// by the process). Leave its Timeout zero: RequestTimeout bounds each
	// attempt.
	HTTPClient *http.Client
	// Limiter paces the requests (nil: none); a 429 throttles it.
	Limiter *Limiter
	// Sleep waits out the limiter and the backoff (nil: RealSleep).
	Sleep Sleep
	// Observe, when set, is told the HTTP status (0: none arrived) and the
	// duration of every attempt (metrics).
	Observe func(ctx context.Context, status int, elapsed time.Duration)
}

// Client sends chat-completion requests to one OpenAI-compatible endpoint
// and classifies their failures (Classify). It is safe for concurrent use.
type Client struct {
	cfg ClientConfig
	oc  *openai.Client
}

// NewClient returns a client for cfg.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Sleep == nil {
		cfg.Sleep = RealSleep
	}
	oc := openai.DefaultConfig(string(cfg.Key))
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = captureDoer{client: tracedClient(cfg.HTTPClient)}
	return &Client{cfg: cfg, oc: openai.NewClientWithConfig(oc)}
}

// Attempt sends req once, after the limiter's wait (estimate is the
// request's token estimate for the limiter). It returns the response and
// its raw body (the key redacted), or ctx's error when ctx ended, or a
// *Failure.
func (c *Client) Attempt(ctx context.Context, req openai.ChatCompletionRequest, estimate int) (openai.ChatCompletionResponse, []byte, error) {
	l := c.cfg.Limiter
	if d := l.Reserve(estimate); d > 0 {
		if err := c.cfg.Sleep(ctx, d); err != nil {
			l.Cancel(estimate)
			return openai.ChatCompletionResponse{}, nil, err
		}
	}
	cp := &capture{model: req.Model}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, captureKey{}, cp), c.cfg.RequestTimeout)
	sent := time.Now()
	resp, err := c.oc.CreateChatCompletion(rctx, req)
	timedOut := rctx.Err() == context.DeadlineExceeded
	cancel()
	status := cp.status
	if err == nil && status == 0 {
		status = http.StatusOK
	}
	if c.cfg.Observe != nil {
		c.cfg.Observe(ctx, status, time.Since(sent))
	}
	if err == nil && len(resp.Choices) == 0 {
		err = errNoChoices
	}
	if err == nil {
		l.Settle(estimate, usageTokens(resp.Usage))
		l.Recover()
		return resp, c.cfg.Key.RedactBytes(cp.body), nil
	}
	l.Settle(estimate, 0)
	if cp.status == http.StatusTooManyRequests {
		// The provider's limit, not this request's: slow the whole
		// provider down and make every request wait out Retry-After.
		after, _ := RetryAfter(cp.header, time.Now())
		l.Throttle(after)
	}
	if ctx.Err() != nil {
		return openai.ChatCompletionResponse{}, nil, ctx.Err()
	}
	return openai.ChatCompletionResponse{}, nil, Classify(err, cp.header, c.cfg.Model, timedOut, c.cfg.RequestTimeout, c.cfg.Key, time.Now())
}

// Complete is Attempt with the transient failures retried under policy. It
// returns the response, its raw body and the number of retries made; the
// error is ctx's, a *Failure (ErrConfig) or an *Exhausted (ErrExhausted).
func (c *Client) Complete(ctx context.Context, req openai.ChatCompletionRequest, estimate int, policy RetryPolicy) (openai.ChatCompletionResponse, []byte, int, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
		if err := c.Held(policy); err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
		resp, raw, err := c.Attempt(ctx, req, estimate)
		if err == nil {
			return resp, raw, attempt, nil
		}
		f, ok := err.(*Failure)
		if !ok {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
		wait, err := policy.Wait(attempt, f)
		if err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
	}
}

// Held says whether a request must give up before it is sent: a 429
// answered to any request of this provider holds every request for its
// Retry-After, and one that would wait longer than policy.MaxWait gives up
// now (an *Exhausted), as it would on its own 429. Complete checks it
// before every attempt; a caller with its own retry loop around Attempt
// checks it too.
func (c *Client) Held(policy RetryPolicy) error {
	p := c.cfg.Limiter.Paused()
	if policy.MaxWait <= 0 || p <= policy.MaxWait {
		return nil
	}
	last := &Failure{Transient: true, Status: http.StatusTooManyRequests, HasRetryAfter: true, RetryAfter: p,
		Msg: fmt.Sprintf("%s: the provider answered 429 and asked every request to wait %s", c.cfg.Model, p.Round(time.Second))}
	return &Exhausted{Last: last, Detail: fmt.Sprintf(", more than retry_max_wait %s", policy.MaxWait)}
}

// usageTokens is what a response counts against a tokens-per-minute limit.
func usageTokens(u openai.Usage) int {
	if n := u.PromptTokens + u.CompletionTokens; n > 0 {
		return n
	}
	return u.TotalTokens
}
