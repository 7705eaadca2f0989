package llm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RecordingVersion is the format version of Recording.
const RecordingVersion = 1

// Recording is everything the model said during one Run, in order: each
// request's fingerprint and the provider's full chat-completion response as
// received (JSON). With WithReplay it lets a trial be re-run offline: the
// same scenario variant and seed then produce the same ledger. It never
// contains the API key (a response that echoes it is redacted).
//
// Run does not put it in agent.Outcome: read it with (*Agent).Recording
// after Run returns, successfully or not.
type Recording struct {
	Version    int    `json:"version"`
	Model      string `json:"model"`
	PromptName string `json:"prompt_name,omitempty"`
	PromptHash string `json:"prompt_hash"`
	Protocol   string `json:"protocol"`
	Steps      []Step `json:"steps"`
	// Totals over the steps.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// ProviderRetries counts requests retried after provider failures
	// (429, 5xx, timeouts); they are not steps.
	ProviderRetries int `json:"provider_retries,omitempty"`
	// JournalSteps counts the steps answered from the trial's journal
	// (paid before a crash, replayed instead of requested again).
	JournalSteps int `json:"journal_steps,omitempty"`
	// Superseded*Tokens were paid for stored responses this run did not
	// use (it diverged from them); they count in the trial's spend.
	SupersededPromptTokens     int64 `json:"superseded_prompt_tokens,omitempty"`
	SupersededCompletionTokens int64 `json:"superseded_completion_tokens,omitempty"`
}

// Billed is what the provider billed for the run: the steps' usage plus
// superseded journal entries, in tokens and at prices.
func (r *Recording) Billed(p Prices) (tokens int64, cost float64) {
	pt := r.PromptTokens + r.SupersededPromptTokens
	ct := r.CompletionTokens + r.SupersededCompletionTokens
	return pt + ct, p.Cost(pt, ct)
}

// Step is one model request and its response.
type Step struct {
	Index   int         `json:"index"` // 1-based
	Request StepRequest `json:"request"`
	// Response is the chat-completion response body as the provider sent
	// it.
	Response json.RawMessage `json:"response"`
	// ProviderRetries is the number of failed attempts before this
	// response.
	ProviderRetries int `json:"provider_retries,omitempty"`
}

// StepRequest identifies a request in a stable way: what kind of turn it
// was, the model settings and tool definitions it carried (by hash), and
// the messages the agent added since the previous response. Earlier
// messages are not repeated: they are the previous steps' messages and
// responses, so two runs whose steps match message for message sent
// identical conversations.
type StepRequest struct {
	Kind           string    `json:"kind"` // "turn" (tools offered) or "claim" (final structured claim)
	Model          string    `json:"model"`
	Params         string    `json:"params"`
	Tools          []string  `json:"tools"`
	ToolsHash      string    `json:"tools_hash"`
	ResponseFormat string    `json:"response_format,omitempty"`
	Sent           []Message `json:"sent"`
}

// Message is one message the agent sent: the system prompt and goal
// first, then tool results (keyed by the tool call they answer) and the
// claim request.
type Message struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Content    string `json:"content"`
}

func (m Message) describe(other string) string {
	who := m.Role
	if m.ToolCallID != "" {
		who += " result for " + m.ToolCallID
	}
	return fmt.Sprintf("%s %s", who, excerpt(m.Content, other))
}

// diff compares an expected request with the one the agent is making and
// describes the first difference as ("expected X", "got Y").
func (e StepRequest) diff(g StepRequest) (string, string, bool) {
	switch {
	case e.Kind != g.Kind:
		return "kind " + e.Kind, "kind " + g.Kind, true
	case e.Model != g.Model:
		return "model " + e.Model, "model " + g.Model, true
	case e.Params != g.Params:
		return "params " + e.Params, "params " + g.Params, true
	case strings.Join(e.Tools, ",") != strings.Join(g.Tools, ","):
		return "tools [" + strings.Join(e.Tools, " ") + "]", "tools [" + strings.Join(g.Tools, " ") + "]", true
	case e.ToolsHash != g.ToolsHash:
		return "tool definitions " + e.ToolsHash, "tool definitions " + g.ToolsHash, true
	case e.ResponseFormat != g.ResponseFormat:
		return "response_format " + orNone(e.ResponseFormat), "response_format " + orNone(g.ResponseFormat), true
	}
	for i := 0; i < len(e.Sent) || i < len(g.Sent); i++ {
		switch {
		case i >= len(e.Sent):
			return fmt.Sprintf("%d new messages", len(e.Sent)), fmt.Sprintf("message %d: %s", i+1, g.Sent[i].describe("")), true
		case i >= len(g.Sent):
			return fmt.Sprintf("message %d: %s", i+1, e.Sent[i].describe("")), fmt.Sprintf("%d new messages", len(g.Sent)), true
		case e.Sent[i] != g.Sent[i]:
			return fmt.Sprintf("message %d: %s", i+1, e.Sent[i].describe(g.Sent[i].Content)),
				fmt.Sprintf("message %d: %s", i+1, g.Sent[i].describe(e.Sent[i].Content)), true
		}
	}
	return "", "", false
}

func (e StepRequest) summary() string {
	if len(e.Sent) > 0 {
		return fmt.Sprintf("%s request with message 1: %s", e.Kind, e.Sent[0].describe(""))
	}
	return e.Kind + " request"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// excerpt quotes s around its first difference from other (from the start
// when other is empty or equal), at most about 100 characters.
func excerpt(s, other string) string {
	const width = 100
	at := 0
	if other != "" {
		for at < len(s) && at < len(other) && s[at] == other[at] {
			at++
		}
	}
	start := at - width/2
	if start < 0 || other == "" {
		start = 0
	}
	end := start + width
	if end > len(s) {
		end = len(s)
	}
	out := fmt.Sprintf("%q", s[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}
