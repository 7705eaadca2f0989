package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The error taxonomy of a model request, the same for every caller (LLM
// arms and the judge).
var (
	// ErrConfig marks a failure that says the configuration is wrong: the
	// provider answered 400, 401, 403, 404, 422 or another 4xx that is not
	// listed as transient (bad request, authentication, access, unknown
	// model), or the client refused to send the request. Retrying cannot
	// help; the caller reports it at once.
	ErrConfig = errors.New("configuration error")
	// ErrTransient marks a failure worth a retry: 408, 409, 429 and 5xx
	// answers, a request timeout, a connection error, a malformed response.
	ErrTransient = errors.New("provider failure")
	// ErrExhausted marks a transient failure that outlasted the retry
	// policy: its retries are spent, or the provider asked to wait longer
	// than the policy's MaxWait.
	ErrExhausted = errors.New("provider failure (retries exhausted)")
)

// Failure is one failed request, classified. Its message names the model,
// the HTTP status and the provider's words, with the API key redacted.
type Failure struct {
	// Transient: retry (ErrTransient); otherwise a configuration error
	// (ErrConfig).
	Transient bool
	// Status is the HTTP status (0 when no answer arrived).
	Status int
	// RetryAfter is the wait the provider asked for (Retry-After or
	// retry-after-ms), when HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	Msg           string
}

func (f *Failure) Error() string { return f.Msg }

// Is makes errors.Is(f, ErrConfig) or errors.Is(f, ErrTransient) true.
func (f *Failure) Is(target error) bool {
	if f.Transient {
		return target == ErrTransient
	}
	return target == ErrConfig
}

// TransientStatus reports whether an HTTP status is worth a retry: 408
// (request timeout), 409 (conflict), 429 (rate limited) and every 5xx.
func TransientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// errNoChoices: a 2xx answer without a choice is a malformed response.
var errNoChoices = errors.New("response has no choices")

// Classify turns the error of one go-openai request into a Failure. header
// is the answer's (nil when none arrived; it carries Retry-After);
// timedOut says the request's own deadline passed; timeout is that
// deadline, for the message.
func Classify(err error, header http.Header, model string, timedOut bool, timeout time.Duration, key Key, now time.Time) *Failure {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	status, detail := 0, ""
	switch {
	case errors.As(err, &apiErr):
		status, detail = apiErr.HTTPStatusCode, apiErr.Message
		if apiErr.Code != nil {
			detail = fmt.Sprintf("%s (code %v)", detail, apiErr.Code)
		}
	case errors.As(err, &reqErr):
		status, detail = reqErr.HTTPStatusCode, strings.TrimSpace(string(reqErr.Body))
	}
	if status != 0 {
		f := &Failure{Status: status, Transient: TransientStatus(status),
			Msg: key.Redact(fmt.Sprintf("%s: HTTP %d %s: %s", model, status, http.StatusText(status), Truncate(detail, 300)))}
		if f.Transient && header != nil {
			f.RetryAfter, f.HasRetryAfter = RetryAfter(header, now)
		}
		return f
	}
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return &Failure{Transient: true, Msg: fmt.Sprintf("%s: no response within request_timeout %s", model, timeout)}
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Failure{Transient: true, Msg: key.Redact(fmt.Sprintf("%s: connection error: %v", model, err))}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, errNoChoices):
		return &Failure{Transient: true, Msg: key.Redact(fmt.Sprintf("%s: malformed response: %v", model, err))}
	}
	// Client-side refusals (go-openai's request validation, an
	// unmarshalable request) are configuration errors.
	return &Failure{Msg: key.Redact(fmt.Sprintf("%s: request rejected before sending: %v", model, err))}
}

// RetryAfter reads how long the provider asked to wait: retry-after-ms
// (Azure OpenAI, OpenAI) or Retry-After in seconds or as an HTTP date
// (RFC 9110). A number is digits with an optional decimal fraction ("7",
// "0.5"); anything else (a sign, an exponent, hex, Inf, NaN) is no answer,
// and a wait too long for a time.Duration is the longest one, so that an
// absurd header reads as "too long to wait", never as a negative wait.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d, ok := delay(v, time.Millisecond); ok {
			return d, true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := delay(v, time.Second); ok {
		return d, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true // Sub saturates
	}
	return 0, false
}

// delay reads a non-negative decimal number of units: digits, optionally
// a point and more digits. It saturates at the longest time.Duration.
func delay(v string, unit time.Duration) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(v, ".")
	if whole == "" || !allDigits(whole) || (dotted && (frac == "" || !allDigits(frac))) {
		return 0, false
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if ns := n * float64(unit); ns < float64(math.MaxInt64) {
		return time.Duration(ns), true
	}
	return time.Duration(math.MaxInt64), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Truncate cuts s to n bytes (on a rune boundary) and marks the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
