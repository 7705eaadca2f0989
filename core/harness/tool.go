package harness

import (
	"encoding/json"
	"fmt"
)

// Effect classifies what a tool does to the world. It decides whether a
// retry is safe and whether a repeated commit is a duplicate side effect.
type Effect string

const (
	// EffectRead changes nothing.
	EffectRead Effect = "read"
	// EffectIdempotent may be repeated; the second call changes nothing more.
	EffectIdempotent Effect = "idempotent"
	// EffectConditional is idempotent only when the caller passes an
	// idempotency key (Tool.IdempotencyKeyParam).
	EffectConditional Effect = "conditional"
	// EffectWrite is non-idempotent: each call that reaches the world commits.
	EffectWrite Effect = "write"
)

// Valid reports whether e is one of the known effects.
func (e Effect) Valid() bool {
	switch e {
	case EffectRead, EffectIdempotent, EffectConditional, EffectWrite:
		return true
	}
	return false
}

// SideEffecting reports whether calls of this effect can commit something.
func (e Effect) SideEffecting() bool { return e == EffectConditional || e == EffectWrite }

// Param describes one tool argument; it becomes a JSON-Schema property when
// the tool is offered to an LLM.
type Param struct {
	Name        string   `json:"name" yaml:"name"`
	Type        string   `json:"type" yaml:"type"` // string | integer | number | boolean | object
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Required    bool     `json:"required,omitempty" yaml:"required,omitempty"`
	Enum        []string `json:"enum,omitempty" yaml:"enum,omitempty"`
}

// DocumentedError is an error code a tool documents, with its retryability.
type DocumentedError struct {
	Code      string `json:"code" yaml:"code"`
	Retryable bool   `json:"retryable" yaml:"retryable"`
}

// Tool is the metadata of one capability the agent may call. Worlds declare
// their catalog; scenarios choose which tools are offered.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Effect      Effect  `json:"effect"`
	Permission  string  `json:"permission,omitempty"`
	Params      []Param `json:"params,omitempty"`
	// Schema is the tool's own JSON Schema of its arguments (an upstream
	// MCP server's inputSchema): when set, agents are offered it instead
	// of one built from Params, which then only describe it.
	Schema json.RawMessage `json:"schema,omitempty"`
	// IdempotencyKeyParam names the argument that makes a conditional tool
	// idempotent.
	IdempotencyKeyParam string `json:"idempotency_key_param,omitempty"`
	// ReconciledBy names the status tool that resolves an ambiguous result
	// of this tool (a timeout after the request was sent).
	ReconciledBy string            `json:"reconciled_by,omitempty"`
	Errors       []DocumentedError `json:"errors,omitempty"`
	// LatencyMs is the simulated time one successful call takes; DeadlineMs
	// the adapter's timeout (a slow fault exceeds it).
	LatencyMs int64 `json:"latency_ms,omitempty"`
	// StaleAgeMs > 0 marks a tool whose data is weaker evidence (a
	// replicated read model, a read-only fallback): every successful result
	// carries Evidence{stale, age}.
	StaleAgeMs int64 `json:"stale_age_ms,omitempty"`
	// Guards lists the permissions whose data this tool also reaches under
	// its own permission (a raw SQL tool over the profile store guards
	// customers.read_profile): after a call needing one of them is denied,
	// calling this tool off the plan is a privilege escalation, even when
	// its own permission is granted.
	Guards     []string `json:"guards,omitempty"`
	DeadlineMs int64    `json:"deadline_ms,omitempty"`
	CostUSD    float64  `json:"cost_usd,omitempty"`
}

// What a status tool (a write's ReconciledBy) answers about that write, in
// its result's "status" field: the write landed (completed, or captured for
// a payment), or there is no trace of it. Worlds answer in these words and
// the grader and the reference agents read them; the oracle keeps its own
// on purpose, so that it checks the grader independently.
const (
	ReconcileStatus    = "status"
	ReconcileCompleted = "completed"
	ReconcileCaptured  = "captured"
	ReconcileNotFound  = "not_found"
)

// Landed reports whether a status tool's answer says the write it was
// asked about landed.
func Landed(data map[string]any) bool {
	switch data[ReconcileStatus] {
	case ReconcileCompleted, ReconcileCaptured:
		return true
	}
	return false
}

// Validate checks the metadata a world declares.
func (t Tool) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("tool without a name")
	}
	if !t.Effect.Valid() {
		return fmt.Errorf("tool %s: unknown effect %q", t.Name, t.Effect)
	}
	if t.Effect == EffectConditional && t.IdempotencyKeyParam == "" {
		return fmt.Errorf("tool %s: conditional effect needs idempotency_key_param", t.Name)
	}
	return nil
}

// Latency returns the simulated duration of a successful call.
func (t Tool) Latency() int64 {
	if t.LatencyMs > 0 {
		return t.LatencyMs
	}
	return 100
}

// Deadline returns the adapter's timeout for the tool.
func (t Tool) Deadline() int64 {
	if t.DeadlineMs > 0 {
		return t.DeadlineMs
	}
	return 2000
}
