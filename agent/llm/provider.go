package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// sharedTransport is reused by every Agent of the process, so concurrent
// trials share connections to a provider.
var sharedTransport = func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}()

const maxResponseBytes = 32 << 20

// captureDoer wraps the HTTP client go-openai uses. For each request that
// carries a *capture in its context it keeps the status, the headers (for
// Retry-After) and, on success, the raw body (for the recording), which it
// hands on to go-openai unchanged.
type captureDoer struct{ client *http.Client }

type captureKey struct{}

type capture struct {
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

// providerError is one failed attempt, classified.
type providerError struct {
	retryable  bool
	retryAfter time.Duration
	hasAfter   bool
	msg        string // redacted
}

// complete sends one chat-completion request, retrying provider failures
// with exponential backoff (honouring Retry-After) through the rate
// limiter. It returns the response, its raw body and the number of retries.
func (r *run) complete(ctx context.Context, req openai.ChatCompletionRequest, estimate int) (openai.ChatCompletionResponse, []byte, int, error) {
	a := r.a
	var last *providerError
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
		if d := a.limiter.reserve(estimate); d > 0 {
			if err := a.opts.sleep(ctx, d); err != nil {
				a.limiter.cancel(estimate)
				return openai.ChatCompletionResponse{}, nil, attempt, err
			}
		}
		c := &capture{}
		rctx, cancel := context.WithTimeout(context.WithValue(ctx, captureKey{}, c), a.cfg.RequestTimeout)
		resp, err := a.client.CreateChatCompletion(rctx, req)
		cancel()
		if err == nil && len(resp.Choices) == 0 {
			err = errNoChoices
		}
		if err == nil {
			a.limiter.settle(estimate, usageTokens(resp.Usage))
			a.limiter.recover()
			return resp, a.redactBytes(c.body), attempt, nil
		}
		a.limiter.settle(estimate, 0)
		if c.status == http.StatusTooManyRequests {
			// The provider's limit, not this request's: slow the whole
			// provider down and make every request wait out Retry-After.
			after, _ := retryAfter(c.header, time.Now())
			a.limiter.throttle(after)
		}
		if ctx.Err() != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, ctx.Err()
		}
		pe := a.classify(err, c)
		if !pe.retryable {
			return openai.ChatCompletionResponse{}, nil, attempt, fmt.Errorf("%w: %s", ErrConfig, pe.msg)
		}
		last = pe
		if attempt >= a.cfg.MaxRetries {
			break
		}
		wait := a.backoff(attempt)
		if pe.hasAfter {
			if pe.retryAfter > a.cfg.RetryMaxWait {
				return openai.ChatCompletionResponse{}, nil, attempt, fmt.Errorf("%w: %s; the provider asked to wait %s, more than retry_max_wait %s",
					ErrAttrition, pe.msg, pe.retryAfter, a.cfg.RetryMaxWait)
			}
			wait = pe.retryAfter
		}
		if err := a.opts.sleep(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, nil, attempt, err
		}
	}
	return openai.ChatCompletionResponse{}, nil, a.cfg.MaxRetries, fmt.Errorf("%w: %s (still failing after %d attempts)", ErrAttrition, last.msg, a.cfg.MaxRetries+1)
}

var errNoChoices = errors.New("response has no choices")

func usageTokens(u openai.Usage) int {
	if n := u.PromptTokens + u.CompletionTokens; n > 0 {
		return n
	}
	return u.TotalTokens
}

// backoff is RetryBase doubled per attempt, capped at RetryMaxWait, with
// jitter in [d/2, d] so concurrent trials hit by one outage do not retry in
// lockstep.
func (a *Agent) backoff(attempt int) time.Duration {
	d := a.cfg.RetryBase
	for i := 0; i < attempt && d < a.cfg.RetryMaxWait; i++ {
		d *= 2
	}
	if d > a.cfg.RetryMaxWait {
		d = a.cfg.RetryMaxWait
	}
	return d/2 + rand.N(d/2+1)
}

// classify decides whether a failed attempt is the provider's (retried,
// then attrition) or the configuration's (returned at once).
func (a *Agent) classify(err error, c *capture) *providerError {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	status := 0
	detail := ""
	switch {
	case errors.As(err, &apiErr):
		status, detail = apiErr.HTTPStatusCode, apiErr.Message
		if apiErr.Code != nil {
			detail = fmt.Sprintf("%s (code %v)", detail, apiErr.Code)
		}
	case errors.As(err, &reqErr):
		status, detail = reqErr.HTTPStatusCode, strings.TrimSpace(string(reqErr.Body))
		if len(detail) > 300 {
			detail = detail[:300] + "…"
		}
	}
	if status != 0 {
		pe := &providerError{msg: a.redact(fmt.Sprintf("%s: HTTP %d %s: %s", a.cfg.Model, status, http.StatusText(status), detail))}
		switch {
		case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
			pe.retryable = true
			if c.header != nil {
				pe.retryAfter, pe.hasAfter = retryAfter(c.header, time.Now())
			}
		default:
			// 400, 401, 403, 404, 422...: bad request, authentication,
			// unknown model. Retrying cannot help.
		}
		return pe
	}
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &providerError{retryable: true, msg: fmt.Sprintf("%s: no response within request_timeout %s", a.cfg.Model, a.cfg.RequestTimeout)}
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &providerError{retryable: true, msg: a.redact(fmt.Sprintf("%s: connection error: %v", a.cfg.Model, err))}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, errNoChoices):
		return &providerError{retryable: true, msg: a.redact(fmt.Sprintf("%s: malformed response: %v", a.cfg.Model, err))}
	}
	// Client-side refusals (go-openai's request validation, an
	// unmarshalable request) are configuration errors.
	return &providerError{msg: a.redact(fmt.Sprintf("%s: request rejected before sending: %v", a.cfg.Model, err))}
}

// retryAfter reads how long the provider asked to wait: retry-after-ms
// (Azure OpenAI, OpenAI) or Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// realSleep waits d of wall-clock time or until ctx is done.
func realSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
