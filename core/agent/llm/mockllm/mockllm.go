// Package mockllm is a local OpenAI-compatible chat-completions server that
// plays a reference policy (careful, fabricator, naive_retrier, ...: the
// scripted agents of core/agent) through real tool calls, so an LLM arm, an
// Agents SDK agent or a user's own pipeline can be tried without a provider
// or a key. `rebound mock-llm` serves it.
//
// Each request is answered from the conversation alone: the server finds
// the scenario whose goal the conversation states, replays the reference
// agent against the tool results the conversation already holds (the
// agent's i-th call gets the i-th tool message), and answers with the next
// call the agent makes, as a tool call of the function the request offers
// for that tool (wait for the agent's sleeps, update_plan for its plan
// updates when offered). When the agent is done it answers its claim:
// through submit_claim when the request offers it and the claim was not
// submitted yet, as the content of a json_schema response format (the LLM
// arm's claim turn), or as a final text. Being stateless, it serves any
// number of concurrent conversations, and the same conversation always
// gets the same answer.
//
// The task clock the agent sees is the server's estimate, advanced as the
// harness advances its own: a tool's declared latency per call (its
// deadline for a timeout), plus the waits, set to the now_ms every wait
// answers.
//
// Injected faults (Options): a share of requests answered 429 with
// Retry-After, a share answered 500 or 503, and latency on every answer;
// drawn from a seeded generator. Every answer reports usage (prompt tokens
// estimated as the request's bytes / 4, completion tokens as the answer's),
// and Stats sums it.
package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world"
)

// Options configure a Server.
type Options struct {
	// Policy is a reference agent's name (agent.ScriptedNames).
	Policy string
	// Scenarios are the scenarios the server can recognise by their goal.
	Scenarios []*scenario.Scenario
	// RateLimited and ServerErrors are the shares (0..1) of requests
	// answered 429 (with Retry-After: RetryAfter) and 500 or 503.
	RateLimited  float64
	ServerErrors float64
	RetryAfter   time.Duration
	// Latency holds every answer back this long.
	Latency time.Duration
	// Seed seeds the draws of injected faults.
	Seed uint64
}

// Stats is what the server answered and billed.
type Stats struct {
	Requests         int   `json:"requests"`
	Answered         int   `json:"answered"`
	ToolCalls        int   `json:"tool_calls"`
	RateLimited      int   `json:"rate_limited"`
	ServerErrors     int   `json:"server_errors"`
	BadRequests      int   `json:"bad_requests"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// Server is the mock model. It is an http.Handler.
type Server struct {
	opts  Options
	tools map[*scenario.Scenario][]harness.Tool

	mu    sync.Mutex
	rng   *rand.Rand
	stats Stats
}

// New checks the options and prepares the scenarios' tool metadata.
func New(opts Options) (*Server, error) {
	if _, err := agent.NewScripted(opts.Policy); err != nil {
		return nil, fmt.Errorf("mockllm: %w", err)
	}
	if len(opts.Scenarios) == 0 {
		return nil, errors.New("mockllm: no scenarios: the server recognises a conversation by its scenario's goal")
	}
	for _, p := range []float64{opts.RateLimited, opts.ServerErrors} {
		if p < 0 || p > 1 {
			return nil, fmt.Errorf("mockllm: a share of injected failures must be within 0..1, got %v", p)
		}
	}
	s := &Server{opts: opts, tools: map[*scenario.Scenario][]harness.Tool{}, rng: rand.New(rand.NewPCG(opts.Seed, 0x6d6f636b))}
	for _, sc := range opts.Scenarios {
		tools, err := offered(sc)
		if err != nil {
			return nil, fmt.Errorf("mockllm: scenario %s: %w", sc.Name, err)
		}
		s.tools[sc] = tools
	}
	return s, nil
}

// offered is the metadata of the scenario's tools, sorted by name, as the
// harness offers them.
func offered(sc *scenario.Scenario) ([]harness.Tool, error) {
	w, catalog, err := world.Open(sc.WorldRef(), sc.Initial)
	if err != nil {
		return nil, err
	}
	if c, ok := w.(io.Closer); ok {
		_ = c.Close()
	}
	var out []harness.Tool
	for _, t := range catalog {
		if slices.Contains(sc.Tools, t.Name) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ServeHTTP serves POST /v1/chat/completions (and /chat/completions),
// GET /v1/models and GET /stats.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && (path == "/v1/chat/completions" || path == "/chat/completions"):
		s.complete(w, r)
	case r.Method == http.MethodGet && (path == "/v1/models" || path == "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
			{"id": "mock-" + s.opts.Policy, "object": "model", "owned_by": "rebound"}}})
	case r.Method == http.MethodGet && path == "/stats":
		writeJSON(w, http.StatusOK, s.Stats())
	default:
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path+" (POST /v1/chat/completions, GET /v1/models, GET /stats)")
	}
}

// fault draws the injected failure of one request: 0, 429 or 5xx.
func (s *Server) fault() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	switch x := s.rng.Float64(); {
	case x < s.opts.RateLimited:
		s.stats.RateLimited++
		return http.StatusTooManyRequests
	case x < s.opts.RateLimited+s.opts.ServerErrors:
		s.stats.ServerErrors++
		if s.rng.IntN(2) == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusServiceUnavailable
	}
	return 0
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	if err != nil {
		s.bad(w, "the request body could not be read: "+err.Error())
		return
	}
	if !s.hold(r.Context()) {
		return
	}
	switch code := s.fault(); code {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.FormatFloat(s.opts.RetryAfter.Seconds(), 'f', -1, 64))
		writeError(w, code, "rate_limit_exceeded", "injected by rebound mock-llm: rate limited")
		return
	case http.StatusInternalServerError, http.StatusServiceUnavailable:
		writeError(w, code, "server_error", "injected by rebound mock-llm: server error")
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.bad(w, "the body is not a chat-completion request: "+err.Error())
		return
	}
	msg, err := s.answer(req)
	if err != nil {
		s.bad(w, err.Error())
		return
	}
	s.respond(w, req, msg, len(body))
}

// hold waits out the configured latency; false when the client left.
func (s *Server) hold(ctx context.Context) bool {
	if s.opts.Latency <= 0 {
		return true
	}
	t := time.NewTimer(s.opts.Latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) bad(w http.ResponseWriter, msg string) {
	s.mu.Lock()
	s.stats.BadRequests++
	s.mu.Unlock()
	writeError(w, http.StatusBadRequest, "invalid_request_error", "rebound mock-llm: "+msg)
}

// respond writes one assistant message with its usage.
func (s *Server) respond(w http.ResponseWriter, req openai.ChatCompletionRequest, msg openai.ChatCompletionMessage, promptBytes int) {
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	out, _ := json.Marshal(msg)
	usage := openai.Usage{PromptTokens: max(promptBytes/4, 1), CompletionTokens: max(len(out)/4, 1)}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	s.mu.Lock()
	s.stats.Answered++
	s.stats.ToolCalls += len(msg.ToolCalls)
	s.stats.PromptTokens += int64(usage.PromptTokens)
	s.stats.CompletionTokens += int64(usage.CompletionTokens)
	n := s.stats.Answered
	s.mu.Unlock()
	model := req.Model
	if model == "" {
		model = "mock-" + s.opts.Policy
	}
	writeJSON(w, http.StatusOK, openai.ChatCompletionResponse{
		ID: fmt.Sprintf("chatcmpl-mock-%d", n), Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an OpenAI-shaped error body.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": typ}})
}
