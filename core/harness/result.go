// Package harness is the fault-injectable tool boundary. Every tool call an
// agent makes passes through a Dispatcher, which consults the trial's fault
// schedule, invokes the simulated world when the call really reaches it,
// normalizes the outcome into a Result and records the attempt (and any
// committed side effect) in a Ledger that only the harness writes.
//
// The package is plain Go: no Temporal, no ClickHouse, no clocks or randomness
// that are not derived from the trial's seed.
package harness

import (
	"encoding/json"
	"fmt"
)

// Normalized error codes. A real adapter maps provider responses onto these;
// the agent sees exactly this shape, never the injection controls.
const (
	CodeTimeout          = "TIMEOUT"
	CodeTimeoutAfterSend = "TIMEOUT_AFTER_SEND"
	CodeUnavailable      = "UNAVAILABLE"      // 503 and friends
	CodeBadGateway       = "BAD_GATEWAY"      // 502
	CodeRateLimited      = "RATE_LIMITED"     // 429
	CodeInvalidInput     = "INVALID_INPUT"    // 400
	CodeUnauthorized     = "UNAUTHORIZED"     // 401
	CodeForbidden        = "FORBIDDEN"        // 403
	CodeToolUnavailable  = "TOOL_UNAVAILABLE" // tool or method missing
	CodeNotFound         = "NOT_FOUND"
	CodeConflict         = "CONFLICT"
	CodeBudgetExhausted  = "BUDGET_EXHAUSTED"
	CodeDeadlineExceeded = "DEADLINE_EXCEEDED"
)

// Result is the normalized outcome of one tool call, the only thing the agent
// sees. Either OK with Data, or a failure with a code, a retryable flag, an
// optional retry-after, and a safe message.
type Result struct {
	OK   bool           `json:"ok"`
	Data map[string]any `json:"data,omitempty"`

	Code         string `json:"code,omitempty"`
	Retryable    bool   `json:"retryable,omitempty"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	Message      string `json:"message,omitempty"`
	// Uncertain marks a failure whose side effect may or may not have
	// happened (a timeout after the request was sent): the caller must
	// reconcile before resubmitting.
	Uncertain bool `json:"uncertain,omitempty"`
	// Evidence describes the strength of successful data: "exact" (default)
	// or "stale" with its age.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Evidence qualifies successful data that is weaker than the primary source.
type Evidence struct {
	Strength string `json:"strength"` // exact | stale
	AgeMs    int64  `json:"age_ms,omitempty"`
}

// Failed builds a failure result.
func Failed(code string, retryable bool, format string, args ...any) Result {
	return Result{Code: code, Retryable: retryable, Message: fmt.Sprintf(format, args...)}
}

// Succeeded builds a success result.
func Succeeded(data map[string]any) Result { return Result{OK: true, Data: data} }

// JSON renders the result as the tool message an agent receives.
func (r Result) JSON() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Data comes from worlds as plain JSON-compatible maps; this cannot
		// happen unless a world returns an unsupported value.
		return fmt.Sprintf(`{"ok":false,"code":"INTERNAL","message":%q}`, err.Error())
	}
	return string(b)
}

// ToolError is how a world reports a domain failure (unknown invoice,
// invalid argument). The dispatcher turns it into a Result.
type ToolError struct {
	Code      string
	Retryable bool
	Message   string
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// Errorf builds a non-retryable ToolError.
func Errorf(code, format string, args ...any) *ToolError {
	return &ToolError{Code: code, Message: fmt.Sprintf(format, args...)}
}
