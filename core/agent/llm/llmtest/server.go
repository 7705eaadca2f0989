// Package llmtest is a scripted, local OpenAI-compatible chat-completions
// server for tests. A test queues the replies (assistant text, tool calls,
// usage, finish reasons; HTTP errors with headers; slow responses) and then
// asserts on the requests the agent sent. Responses use the real wire
// format, built independently of go-openai, so the client parses them as it
// would parse OpenAI's.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer. The zero Reply is an assistant message
// with empty content and finish_reason "stop".
type Reply struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string // default: "tool_calls" when there are tool calls, else "stop"
	Usage        Usage

	// Status, when not 0 or 200, makes the reply an HTTP error with an
	// OpenAI-shaped error body (or Body verbatim when set).
	Status int
	// Header is added to the response (Retry-After, retry-after-ms...).
	Header http.Header
	// Body, when set, is sent verbatim instead of the generated body (for
	// malformed responses and custom error bodies).
	Body string
	// Delay holds the response back; a client that gives up first sees a
	// timeout. The server stops waiting when the request is cancelled.
	Delay time.Duration
}

// ToolCall is one function call in an assistant reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text as the model produced it (may be malformed)
}

// Usage is the token usage reported with a reply.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Text is an assistant reply with content and no tool calls.
func Text(content string) Reply { return Reply{Content: content} }

// Calls is an assistant reply calling tools.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call is one tool call; args is marshalled to JSON (pass a string to send
// it verbatim).
func Call(id, name string, args any) ToolCall {
	if s, ok := args.(string); ok {
		return ToolCall{ID: id, Name: name, Arguments: s}
	}
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return ToolCall{ID: id, Name: name, Arguments: string(b)}
}

// Error is an HTTP error reply; headers are name, value pairs.
func Error(status int, headers ...string) Reply {
	r := Reply{Status: status, Header: http.Header{}}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// WithUsage sets the reported usage.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.Usage = Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

// WithDelay holds the reply back by d.
func (r Reply) WithDelay(d time.Duration) Reply { r.Delay = d; return r }

// WithFinish sets finish_reason.
func (r Reply) WithFinish(reason string) Reply { r.FinishReason = reason; return r }

// WithBody sends body verbatim.
func (r Reply) WithBody(body string) Reply { r.Body = body; return r }

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Chat is Body decoded as a chat-completion request.
	Chat openai.ChatCompletionRequest
}

// Server is the scripted server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	t testing.TB

	mu       sync.Mutex
	queue    []Reply
	fallback *Reply
	policy   func(openai.ChatCompletionRequest) Reply
	requests []Request
	served   int
	stats    Stats
	gate     chan struct{} // closed: requests pass; open channel: held
	limits   *limits
	// finish: a request whose client went away is answered anyway.
	finish bool
}

// Stats is what the server saw and billed. A response is billed when it
// was written to a client still connected; a request whose client went
// away while the server held it (Hold) is Abandoned and never billed.
type Stats struct {
	Requests               int   // requests received (abandoned ones included)
	Delivered              int   // responses written (successes and errors)
	RateLimited            int   // answered 429 by the server's own limits
	Abandoned              int   // the client vanished while the request was held
	Held                   int   // requests held right now
	BilledPromptTokens     int64 // usage of delivered successful responses
	BilledCompletionTokens int64
	// Served*Tokens is the usage of every successful response the server
	// produced, delivered or not: what a provider that bills generation
	// bills. It exceeds Billed*Tokens by the answers produced for clients
	// that were gone (see FinishAbandoned).
	ServedPromptTokens     int64
	ServedCompletionTokens int64
}

// BilledTokens is prompt plus completion tokens billed.
func (s Stats) BilledTokens() int64 { return s.BilledPromptTokens + s.BilledCompletionTokens }

// ServedTokens is prompt plus completion tokens of every successful
// response produced, whether or not its client received it.
func (s Stats) ServedTokens() int64 { return s.ServedPromptTokens + s.ServedCompletionTokens }

// FinishAbandoned makes the server behave like a provider that does not
// notice a client going away: a request held (Hold) or delayed whose client
// vanished is still answered once released (or once its delay passed), and
// its usage counts in Served*Tokens, though nobody receives it. Abandoned
// still counts the requests whose client vanished while held.
func (s *Server) FinishAbandoned() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish = true
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Policy answers every request from its content (the queue and Always
// come first). A policy that depends only on the conversation makes the
// server behave like a deterministic model, whatever the order and
// concurrency of requests.
func (s *Server) Policy(f func(openai.ChatCompletionRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = f
}

// Hold makes every request wait (before it is answered or billed) until
// Release; a client that goes away meanwhile is counted as Abandoned.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// Release lets held requests go on.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// wait holds a request while the server is held; false means the client
// went away (and the server does not finish abandoned requests).
func (s *Server) wait(r *http.Request) bool {
	s.mu.Lock()
	gate, finish := s.gate, s.finish
	if gate != nil {
		s.stats.Held++
	}
	s.mu.Unlock()
	if gate == nil {
		return true
	}
	gone := r.Context().Done()
	for {
		select {
		case <-gate:
			s.mu.Lock()
			s.stats.Held--
			s.mu.Unlock()
			return true
		case <-gone:
			s.mu.Lock()
			s.stats.Abandoned++
			if !finish {
				s.stats.Held--
				s.mu.Unlock()
				return false
			}
			s.mu.Unlock()
			gone = nil // held on until released, then answered
		}
	}
}

// New starts a server that is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the OpenAI-style base URL (ending in /v1).
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Push queues replies, answered in order, one per request.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Always answers every request with r once the queue is empty.
func (s *Server) Always(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &r
}

// Pending is the number of queued replies not yet served.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets received requests (benchmarks call it per iteration).
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = s.requests[:0]
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions") {
		writeError(w, http.StatusNotFound, nil, "", fmt.Sprintf("llmtest: no route for %s %s", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, "", "llmtest: reading body: "+err.Error())
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &req.Chat); err != nil {
		s.t.Errorf("llmtest: request body is not a chat-completion request: %v\n%s", err, body)
	}
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	if !s.wait(r) {
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if s.limits != nil {
		if retry, ok := s.limits.admit(time.Now(), EstimateTokens(req.Body, req.Chat)); !ok {
			s.stats.RateLimited++
			s.stats.Delivered++
			s.mu.Unlock()
			writeError(w, http.StatusTooManyRequests, http.Header{"Retry-After-Ms": {strconv.FormatInt(retry.Milliseconds()+1, 10)}}, "", "llmtest: rate limit exceeded")
			return
		}
	}
	var reply Reply
	switch {
	case len(s.queue) > 0:
		reply = s.queue[0]
		s.queue = s.queue[1:]
	case s.fallback != nil:
		reply = *s.fallback
	case s.policy != nil:
		reply = s.policy(req.Chat)
	default:
		n := len(s.requests)
		s.mu.Unlock()
		s.t.Errorf("llmtest: no scripted reply for request %d", n)
		writeError(w, http.StatusInternalServerError, nil, "", fmt.Sprintf("llmtest: no scripted reply for request %d", n))
		return
	}
	s.served++
	n := s.served
	finish := s.finish
	s.mu.Unlock()

	if reply.Delay > 0 {
		gone := r.Context().Done()
		if finish {
			gone = nil
		}
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-gone:
			t.Stop()
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Header, reply.Body, "")
		s.mu.Lock()
		s.stats.Delivered++
		s.mu.Unlock()
		return
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Body != "" {
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	out, err := json.Marshal(completion(n, req.Chat.Model, reply))
	if err != nil {
		s.t.Errorf("llmtest: %v", err)
	}
	s.mu.Lock()
	s.stats.ServedPromptTokens += int64(reply.Usage.PromptTokens)
	s.stats.ServedCompletionTokens += int64(reply.Usage.CompletionTokens)
	s.mu.Unlock()
	if r.Context().Err() != nil {
		return // the client is gone: nothing delivered, nothing billed
	}
	if _, err := w.Write(out); err == nil {
		s.mu.Lock()
		s.stats.Delivered++
		s.stats.BilledPromptTokens += int64(reply.Usage.PromptTokens)
		s.stats.BilledCompletionTokens += int64(reply.Usage.CompletionTokens)
		if s.limits != nil {
			s.limits.settle(time.Now(), EstimateTokens(req.Body, req.Chat), reply.Usage.PromptTokens+reply.Usage.CompletionTokens)
		}
		s.mu.Unlock()
	}
}

// The wire format of a chat completion, as OpenAI sends it.
type (
	wireCompletion struct {
		ID                string       `json:"id"`
		Object            string       `json:"object"`
		Created           int64        `json:"created"`
		Model             string       `json:"model"`
		Choices           []wireChoice `json:"choices"`
		Usage             wireUsage    `json:"usage"`
		SystemFingerprint string       `json:"system_fingerprint"`
	}
	wireChoice struct {
		Index        int         `json:"index"`
		Message      wireMessage `json:"message"`
		Logprobs     any         `json:"logprobs"`
		FinishReason string      `json:"finish_reason"`
	}
	wireMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		Refusal   any            `json:"refusal"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
)

func completion(n int, model string, r Reply) wireCompletion {
	msg := wireMessage{Role: "assistant"}
	if r.Content != "" || len(r.ToolCalls) == 0 {
		c := r.Content
		msg.Content = &c
	}
	for _, tc := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return wireCompletion{
		ID: "chatcmpl-llmtest-" + strconv.Itoa(n), Object: "chat.completion", Created: 1700000000 + int64(n),
		Model: model, Choices: []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             wireUsage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.PromptTokens + r.Usage.CompletionTokens},
		SystemFingerprint: "fp_llmtest",
	}
}

// writeError sends an OpenAI-shaped error.
func writeError(w http.ResponseWriter, status int, header http.Header, body, message string) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if body != "" {
		_, _ = io.WriteString(w, body)
		return
	}
	typ, code := "server_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status >= 400 && status < 500:
		typ = "invalid_request_error"
	}
	if message == "" {
		message = http.StatusText(status)
	}
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	_, _ = w.Write(out)
}
