package judge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"rebound/results/artifact"
)

// Input is what the judge grades: one trial's trace and the scenario side
// it is judged against. Everything in it must already be redacted (the
// trace comes from the artifact or the stored rows, which are).
//
// The judge never sees the executable checks' verdicts, the outcomes or the
// causal pivot: its scores must be independent of the checks for their
// agreement (Agreement) to mean anything.
type Input struct {
	// Scenario is the scenario id (name); part of the cache key.
	Scenario string
	// FailureScenario is the fault schedule in words (Describe writes it).
	FailureScenario string
	// Trace is what the agent did and saw.
	Trace Trace
	// ToolCatalog summarizes the offered tools: effect, permission,
	// documented errors, status tool.
	ToolCatalog string
	// RetryPolicy is the expected retry behaviour: the bound, the waits,
	// what is never retried.
	RetryPolicy string
	// EscalationPath is the expected behaviour when the goal cannot be
	// reached, and whether it can.
	EscalationPath string
}

// Trace is the compact, redacted record of one trial as the judge reads it:
// the calls with the results the agent saw, the final prose and the claim.
type Trace struct {
	Goal   string      `json:"goal"`
	Calls  []TraceCall `json:"calls"`
	Answer string      `json:"answer"`
	// Claim is the structured claim as the agent submitted it (JSON text,
	// possibly malformed; "" when there was none).
	Claim string `json:"claim"`
}

// TraceCall is one tool call: what was sent (redacted arguments) and the
// normalized result the agent saw. Fault and Committed are the harness's
// annotations (the injected fault class; whether the call changed the
// world), which the agent did not see.
type TraceCall struct {
	Index        int             `json:"index"`
	AtMs         int64           `json:"at_ms"`
	Tool         string          `json:"tool"`
	Args         json.RawMessage `json:"args,omitempty"`
	OK           bool            `json:"ok"`
	Code         string          `json:"code,omitempty"`
	Retryable    *bool           `json:"retryable,omitempty"` // set on failures
	RetryAfterMs int64           `json:"retry_after_ms,omitempty"`
	Uncertain    bool            `json:"uncertain,omitempty"`
	Message      string          `json:"message,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	Evidence     json.RawMessage `json:"evidence,omitempty"`
	Fault        string          `json:"fault,omitempty"`
	Committed    bool            `json:"committed,omitempty"`
}

// ErrNothingToJudge is returned for a trace in which no call failed and no
// fault fired: there is no error handling to grade (the checks call such a
// trial NOT TESTED). Skip the trial; it is neither scored nor queued.
var ErrNothingToJudge = errors.New("judge: no failed call in the trace, nothing to judge")

// failed reports whether the trace met a failure (a failed call, or an
// injected fault that returned corrupt or stale data).
func (t Trace) failed() bool {
	for _, c := range t.Calls {
		if !c.OK || c.Fault != "" {
			return true
		}
	}
	return false
}

// TraceFromArtifact takes the trace out of a failure artifact: the goal, the
// calls (redacted arguments, ok/code/retryable, fault, committed), the
// answer and the claim. The artifact's outcomes, failed checks and pivot
// are deliberately left out. The artifact carries no result messages or
// data; TraceFromStored does.
func TraceFromArtifact(a artifact.Artifact) Trace {
	t := Trace{Goal: a.Goal, Answer: a.Answer, Claim: a.Claim, Calls: make([]TraceCall, 0, len(a.Calls))}
	for _, c := range a.Calls {
		tc := TraceCall{Index: c.Index, AtMs: c.AtMs, Tool: c.Tool, Args: c.Args, OK: c.OK, Code: c.Code,
			Fault: c.Fault, Committed: c.Committed}
		if !c.OK {
			r := c.Retryable
			tc.Retryable = &r
		}
		t.Calls = append(t.Calls, tc)
	}
	return t
}

// The judged document: the user message sent to the model, the bytes the
// trace hash is computed over, and the raw trace a reviewer sees.
type document struct {
	Scenario        string        `json:"scenario"`
	FailureScenario string        `json:"failure_scenario"`
	ToolCatalog     string        `json:"tool_catalog"`
	RetryPolicy     string        `json:"retry_policy"`
	EscalationPath  string        `json:"escalation_path"`
	AgentTrace      traceDocument `json:"agent_trace"`
}

type traceDocument struct {
	Goal   string          `json:"goal"`
	Calls  []TraceCall     `json:"calls"`
	Answer string          `json:"answer"`
	Claim  json.RawMessage `json:"claim"`
}

// Document renders the canonical judged document: compact JSON with fixed
// field order, object keys sorted inside arguments, data and the claim, and
// no HTML escaping. It is the user message sent to the judge, the input of
// TraceHash and the raw trace stored for human review.
func (in Input) Document() ([]byte, error) {
	calls := make([]TraceCall, len(in.Trace.Calls))
	for i, c := range in.Trace.Calls {
		c.Args = canonical(c.Args)
		c.Data = canonical(c.Data)
		c.Evidence = canonical(c.Evidence)
		calls[i] = c
	}
	doc := document{
		Scenario: in.Scenario, FailureScenario: in.FailureScenario, ToolCatalog: in.ToolCatalog,
		RetryPolicy: in.RetryPolicy, EscalationPath: in.EscalationPath,
		AgentTrace: traceDocument{Goal: in.Trace.Goal, Calls: calls, Answer: in.Trace.Answer, Claim: claimJSON(in.Trace.Claim)},
	}
	return marshalCanonical(doc)
}

// TraceHash is the hex SHA-256 of the canonical judged document (Document).
// It covers the trace and the scenario side it is judged against, so a
// changed retry policy or fault description under the same scenario name
// is judged afresh rather than answered from the cache.
func (in Input) TraceHash() (string, error) {
	doc, err := in.Document()
	if err != nil {
		return "", err
	}
	return hashBytes(doc), nil
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Validate checks that there is something to judge.
func (in Input) Validate() error {
	if strings.TrimSpace(in.Scenario) == "" {
		return fmt.Errorf("judge: input without a scenario id")
	}
	if !in.Trace.failed() {
		return ErrNothingToJudge
	}
	return nil
}

// claimJSON embeds a claim that is valid JSON as canonical JSON, anything
// else (malformed, empty) as a JSON string so the document stays valid.
func claimJSON(claim string) json.RawMessage {
	if strings.TrimSpace(claim) != "" && json.Valid([]byte(claim)) {
		return canonical(json.RawMessage(claim))
	}
	b, _ := marshalCanonical(claim)
	return b
}

// canonical re-encodes a JSON value with sorted object keys, numbers kept
// as written; invalid JSON becomes a JSON string.
func canonical(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		b, _ := marshalCanonical(string(raw))
		return b
	}
	b, err := marshalCanonical(v)
	if err != nil {
		b, _ = marshalCanonical(string(raw))
	}
	return b
}

func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
