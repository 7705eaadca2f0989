package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent"
	"rebound/core/harness"
	"rebound/internal/endpoint"
)

// Option adjusts an Agent.
type Option func(*options)

type options struct {
	sleep      endpoint.Sleep
	httpClient *http.Client
	replay     *Recording
}

// WithSleep replaces the wall-clock wait used for provider backoff and the
// rate limiter (tests pass a function that records the duration and
// returns at once). It must return ctx.Err() when ctx is done first.
func WithSleep(sleep endpoint.Sleep) Option {
	return func(o *options) { o.sleep = sleep }
}

// WithHTTPClient sets the HTTP client (proxies, custom TLS). Its Timeout
// should be zero: Config.RequestTimeout bounds each request.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.httpClient = c }
}

// WithReplay makes the agent answer from a recording instead of the
// network: step N's recorded response answers request N, provided request
// N matches the recorded one; otherwise Run fails with ErrDivergence and
// names the first difference. No API key is needed and no rate limit
// applies.
func WithReplay(rec *Recording) Option {
	return func(o *options) { o.replay = rec }
}

// Agent is the LLM agent under test: a tool-calling loop over an
// OpenAI-compatible chat-completions API. It implements agent.Agent.
//
// Run is safe for concurrent use, but Recording returns the recording of
// the Run that finished last: create one Agent per trial (New is cheap;
// the HTTP transport and the rate limiter are shared process-wide) when
// you need each trial's recording.
type Agent struct {
	cfg     Config
	opts    options
	key     endpoint.Key
	client  *endpoint.Client
	params  string
	journal Journal

	mu   sync.Mutex
	last *Recording
}

var _ agent.Agent = (*Agent)(nil)

// New validates cfg, reads the API key from the environment variable it
// names (unless replaying) and returns a ready agent. Errors wrap ErrConfig.
func New(cfg Config, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	a := &Agent{cfg: cfg, opts: options{sleep: endpoint.RealSleep}}
	for _, o := range opts {
		o(&a.opts)
	}
	if a.opts.sleep == nil {
		a.opts.sleep = endpoint.RealSleep
	}
	if a.opts.replay == nil {
		key, err := endpoint.APIKey(cfg.APIKeyEnv)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		a.key = key
		a.client = a.newClient(endpoint.LimiterFor(cfg.BaseURL, cfg.APIKeyEnv, cfg.RequestsPerMinute, cfg.TokensPerMinute))
	} else if a.opts.replay.Version != RecordingVersion {
		return nil, fmt.Errorf("%w: recording version %d, this agent replays version %d", ErrConfig, a.opts.replay.Version, RecordingVersion)
	}
	a.params = fmt.Sprintf("temperature=%s top_p=%s seed=%s max_tokens=%d parallel_tool_calls=%s",
		optFloat(cfg.Temperature), optFloat(cfg.TopP), optInt(cfg.Seed), cfg.MaxTokens, optBool(cfg.ParallelToolCalls))
	return a, nil
}

// Name identifies the agent in trial results: model, prompt name and
// prompt hash.
func (a *Agent) Name() string {
	name := a.cfg.PromptName
	if name == "" {
		name = "prompt"
	}
	return "llm:" + a.cfg.Model + ":" + name + "@" + a.cfg.PromptHash
}

// String and GoString print the agent's name, never its fields (the API
// key is one of them).
func (a *Agent) String() string   { return a.Name() }
func (a *Agent) GoString() string { return "llm.Agent(" + a.Name() + ")" }

// Config returns the configuration with defaults applied.
func (a *Agent) Config() Config { return a.cfg }

// Recording returns what the model said in the Run that finished last
// (nil before any Run). It is available after a failed Run too: an
// attrition or a divergence keeps the steps up to the failure.
func (a *Agent) Recording() *Recording {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// run is the state of one Run.
type run struct {
	a         *Agent
	env       agent.Env
	rec       *Recording
	names     nameMap
	toolNames []string // function names offered, in order
	toolsHash string
	format    string // the claim turn's response format, as recorded
	sent      int    // messages already part of an earlier step
	plans     int
	journal   *journalState
	budget    harness.Budget // the task's, bounding wait (WaitArg)
}

// Run plays one trial: it offers the env's tools as functions, executes the
// model's tool calls through the env until the model stops calling tools
// (or MaxTurns is spent: no claim), then asks for the final claim with a
// strict JSON-schema response format and returns its content verbatim.
//
// Errors: ErrAttrition (the provider kept failing: do not grade),
// ErrConfig (fix the configuration), ErrDivergence (replay), or the
// context's error.
func (a *Agent) Run(ctx context.Context, env agent.Env, task agent.Task) (out agent.Outcome, err error) {
	r := &run{a: a, env: env, budget: task.Budget, rec: &Recording{
		Version: RecordingVersion, Model: a.cfg.Model, PromptName: a.cfg.PromptName,
		PromptHash: a.cfg.PromptHash, Protocol: ProtocolVersion, Steps: []Step{},
	}}
	defer func() {
		r.rec.SupersededPromptTokens, r.rec.SupersededCompletionTokens = r.journal.superseded()
		a.mu.Lock()
		a.last = r.rec
		a.mu.Unlock()
		out.Tokens, out.Cost = r.rec.Billed(a.cfg.Prices)
		// A provider that echoes the key must not get it into storage.
		out.Answer, out.Claim = a.redact(out.Answer), a.redact(out.Claim)
	}()

	if a.journal != nil && a.opts.replay == nil {
		if r.journal, err = loadJournal(ctx, a.journal); err != nil {
			return out, err
		}
	}

	tools := env.Tools()
	toolNames := make([]string, len(tools))
	for i, t := range tools {
		toolNames[i] = t.Name
	}
	if r.names, err = newNameMap(toolNames); err != nil {
		return out, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defs, err := toolDefinitions(tools, r.names)
	if err != nil {
		return out, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	schema, err := claimSchema(task.Claim, toolNames)
	if err != nil {
		return out, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	h := sha256.New()
	for _, d := range defs {
		r.toolNames = append(r.toolNames, d.Function.Name)
		h.Write([]byte(d.Function.Name + "\x00" + d.Function.Description + "\x00"))
		h.Write(d.Function.Parameters.(json.RawMessage))
		h.Write([]byte{0})
	}
	r.toolsHash = hex.EncodeToString(h.Sum(nil)[:8])
	r.format = "json_schema claim strict=true " + shortHash(schema)

	req := a.baseRequest(defs)
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemMessage(a.cfg.Prompt, task, tools)},
		{Role: openai.ChatMessageRoleUser, Content: task.Goal},
	}
	stopped := false
	for turn := 1; turn <= a.cfg.MaxTurns; turn++ {
		req.Messages = msgs
		resp, err := r.step(ctx, "turn", req)
		if err != nil {
			return out, err
		}
		msg := assistantMessage(resp.Choices[0].Message, turn)
		msgs = append(msgs, msg)
		r.sent = len(msgs)
		if strings.TrimSpace(msg.Content) != "" {
			out.Answer = msg.Content
		}
		if len(msg.ToolCalls) == 0 {
			stopped = true
			break
		}
		for _, tc := range msg.ToolCalls {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			msgs = append(msgs, openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: r.execute(ctx, tc),
			})
		}
	}
	if !stopped {
		return out, r.replayExhausted() // MaxTurns spent: no claim
	}

	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: claimRequest})
	req.Messages = msgs
	req.ToolChoice = "none"
	req.ResponseFormat = &openai.ChatCompletionResponseFormat{
		Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name: "claim", Schema: schema, Strict: true, // as in r.format
			Description: "the final structured claim of what was achieved",
		},
	}
	resp, err := r.step(ctx, "claim", req)
	if err != nil {
		return out, err
	}
	// The claim is returned exactly as the model wrote it; the grader
	// parses it strictly. Tool calls in this turn are not executed.
	out.Claim = resp.Choices[0].Message.Content
	return out, r.replayExhausted()
}

// baseRequest is the request of a tool turn, without messages.
func (a *Agent) baseRequest(defs []openai.Tool) openai.ChatCompletionRequest {
	c := a.cfg
	req := openai.ChatCompletionRequest{Model: c.Model, Tools: defs, ToolChoice: "auto"}
	if c.Temperature != nil {
		req.Temperature = nonZero32(*c.Temperature)
	}
	if c.TopP != nil {
		req.TopP = nonZero32(*c.TopP)
	}
	if c.Seed != nil {
		seed := *c.Seed
		req.Seed = &seed
	}
	if c.MaxTokens > 0 {
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers read; reasoning models get max_completion_tokens below
		req.MaxTokens = c.MaxTokens
		//lint:ignore SA1019 the validator decides on max_tokens: it is the field it names deprecated for reasoning models
		probe := openai.ChatCompletionRequest{Model: c.Model, MaxTokens: c.MaxTokens}
		if openai.NewReasoningValidator().Validate(probe) == openai.ErrReasoningModelMaxTokensDeprecated {
			//lint:ignore SA1019 cleared here: a reasoning model takes max_completion_tokens instead
			req.MaxTokens, req.MaxCompletionTokens = 0, c.MaxTokens
		}
	}
	if c.ParallelToolCalls != nil {
		req.ParallelToolCalls = *c.ParallelToolCalls
	}
	return req
}

// nonZero32 converts a sampling parameter for go-openai, whose float fields
// are omitempty: an explicit 0 would be dropped and the provider's default
// (1) used instead (go-openai issues #9, #678). The smallest positive
// float32 (1e-45) is sent in its place, which providers treat as 0.
func nonZero32(x float64) float32 {
	if x == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(x)
}

// assistantMessage turns a response message into the history entry sent
// back: role set, tool calls given ids and type when a server omitted them,
// reasoning text dropped (providers reject it in requests).
func assistantMessage(m openai.ChatCompletionMessage, turn int) openai.ChatCompletionMessage {
	m.Role = openai.ChatMessageRoleAssistant
	m.ReasoningContent = ""
	if len(m.ToolCalls) > 0 {
		calls := make([]openai.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.Index = nil
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", turn, i+1)
			}
			if tc.Type == "" {
				tc.Type = openai.ToolTypeFunction
			}
			calls[i] = tc
		}
		m.ToolCalls = calls
	}
	return m
}

// step sends one request (or answers it from the replay) and records it.
func (r *run) step(ctx context.Context, kind string, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	a := r.a
	sr := StepRequest{
		Kind: kind, Model: req.Model, Params: a.params, Tools: r.toolNames, ToolsHash: r.toolsHash,
		Sent: make([]Message, 0, len(req.Messages)-r.sent),
	}
	if req.ResponseFormat != nil {
		sr.ResponseFormat = r.format
	}
	size := 0
	for i, m := range req.Messages {
		size += len(m.Content) + 16
		for _, tc := range m.ToolCalls {
			size += len(tc.Function.Name) + len(tc.Function.Arguments) + 32
		}
		if i >= r.sent {
			sr.Sent = append(sr.Sent, Message{Role: m.Role, ToolCallID: m.ToolCallID, Content: a.redact(m.Content)})
		}
	}
	index := len(r.rec.Steps) + 1

	var (
		resp    openai.ChatCompletionResponse
		raw     []byte
		retries int
	)
	if rp := a.opts.replay; rp != nil {
		if index > len(rp.Steps) {
			return resp, fmt.Errorf("%w at step %d: expected no request (the recording ends after %d steps), got %s",
				ErrDivergence, index, len(rp.Steps), sr.summary())
		}
		want := rp.Steps[index-1]
		if e, g, differ := want.Request.diff(sr); differ {
			return resp, fmt.Errorf("%w at step %d: expected request with %s, got %s", ErrDivergence, index, e, g)
		}
		raw, retries = want.Response, want.ProviderRetries
		r.rec.ProviderRetries += retries
		if err := json.Unmarshal(raw, &resp); err != nil || len(resp.Choices) == 0 {
			return resp, fmt.Errorf("%w: recording step %d: response is not a chat completion with a choice (%v)", ErrConfig, index, err)
		}
	} else if e, ok := r.fromJournal(index, kind, sr, &resp); ok {
		// Answered before a crash: stored, paid once, replayed.
		raw, retries = e.Response, e.ProviderRetries
		r.rec.ProviderRetries += retries
		r.rec.JournalSteps++
	} else {
		// Estimate for the tokens-per-minute limiter: about 4 bytes per
		// token, plus the tool definitions and the completion allowance.
		body := size + toolDefBytes(req.Tools)
		if b, err := json.Marshal(req); err == nil {
			body = len(b) // what the provider counts
		}
		estimate := EstimateTokens(body, a.cfg.MaxTokens)
		if r.journal != nil {
			// Journaled before it leaves: an answer lost with the worker
			// is still counted (estimated at this bound).
			send := newSend(index, r.journal.gen, kind, RequestHash(sr), body, a.cfg.MaxTokens, a.cfg.Prices)
			if err := r.journal.j.Sent(ctx, send); err != nil {
				return resp, fmt.Errorf("model journal: journal step %d before sending it: %w", index, err)
			}
		}
		var err error
		resp, raw, retries, err = r.complete(ctx, req, estimate)
		r.rec.ProviderRetries += retries
		if err != nil {
			return resp, err
		}
		if r.journal != nil {
			e := JournalEntry{
				Step: index, Generation: r.journal.gen, Kind: kind, RequestHash: RequestHash(sr), Response: raw,
				PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens),
				ProviderRetries: retries,
			}
			if err := r.journal.j.Save(ctx, e); err != nil {
				// Paid but not stored: count it, then stop the trial (its
				// shard is retried once storage answers again).
				r.rec.PromptTokens += e.PromptTokens
				r.rec.CompletionTokens += e.CompletionTokens
				return resp, fmt.Errorf("model journal: store step %d: %w", index, err)
			}
		}
	}
	r.rec.Steps = append(r.rec.Steps, Step{Index: index, Request: sr, Response: json.RawMessage(raw), ProviderRetries: retries})
	r.rec.PromptTokens += int64(resp.Usage.PromptTokens)
	r.rec.CompletionTokens += int64(resp.Usage.CompletionTokens)
	return resp, nil
}

// fromJournal answers request index from the trial's journal when it holds
// a matching response, decoded into resp. A stored response that does not
// decode (storage mangled it) is not trusted: the run goes live from there.
func (r *run) fromJournal(index int, kind string, sr StepRequest, resp *openai.ChatCompletionResponse) (JournalEntry, bool) {
	if r.journal == nil {
		return JournalEntry{}, false
	}
	e, ok := r.journal.next(index, kind, RequestHash(sr))
	if !ok {
		return e, false
	}
	var decoded openai.ChatCompletionResponse
	if err := json.Unmarshal(e.Response, &decoded); err != nil || len(decoded.Choices) == 0 {
		r.journal.reject(e)
		return JournalEntry{}, false
	}
	*resp = decoded
	return e, true
}

// EstimateTokens is what a request reserves from the tokens-per-minute
// limit before it is sent: about 4 bytes per token of the request body
// (messages and tool definitions), plus the completion allowance
// (max_tokens), which is how providers count a request against the limit.
func EstimateTokens(requestBytes, maxTokens int) int {
	return requestBytes/4 + maxTokens
}

func toolDefBytes(tools []openai.Tool) int {
	n := 0
	for _, t := range tools {
		if t.Function != nil {
			n += len(t.Function.Name) + len(t.Function.Description) + 64
			if raw, ok := t.Function.Parameters.(json.RawMessage); ok {
				n += len(raw)
			}
		}
	}
	return n
}

// replayExhausted reports a replay that ended before the recording did.
func (r *run) replayExhausted() error {
	rp := r.a.opts.replay
	if rp == nil || len(r.rec.Steps) >= len(rp.Steps) {
		return nil
	}
	n := len(r.rec.Steps) + 1
	return fmt.Errorf("%w at step %d: expected %s, got the end of the run", ErrDivergence, n, rp.Steps[n-1].Request.summary())
}

// execute answers one tool call: a built-in, or a harness tool through the
// env. Arguments that are not a JSON object never reach the env: the
// agent's tool-calling layer rejects them the way a client library
// validating a request would, so nothing is sent, nothing is recorded in
// the ledger and no tool-call budget is spent; the model gets an
// INVALID_INPUT result (the recording keeps the raw arguments). Any
// function name that parses is passed on, offered or not: an unknown name
// reaches the harness, which answers TOOL_UNAVAILABLE and records it.
func (r *run) execute(ctx context.Context, tc openai.ToolCall) string {
	args, err := harness.DecodeArgs([]byte(tc.Function.Arguments))
	if err != nil {
		return harness.Failed(harness.CodeInvalidInput, false, "arguments of %s are not a JSON object: %v; nothing was sent", tc.Function.Name, err).JSON()
	}
	switch tc.Function.Name {
	case builtinWait:
		ms, refused := WaitArg(args, r.budget, r.env.Now())
		if refused != nil {
			return refused.JSON()
		}
		r.env.Sleep(ms)
		return harness.Succeeded(map[string]any{"waited_ms": ms, "now_ms": r.env.Now()}).JSON()
	case builtinPlan:
		summary, ok := args["summary"].(string)
		if !ok || strings.TrimSpace(summary) == "" {
			return harness.Failed(harness.CodeInvalidInput, false, "update_plan needs summary, a non-empty string").JSON()
		}
		if pu, ok := r.env.(harness.PlanUpdater); ok {
			if res := pu.UpdatePlan(summary); !res.OK {
				return res.JSON() // refused (over the size cap, or the trial halted)
			}
		} else {
			r.env.Replan(summary)
		}
		r.plans++
		return harness.Succeeded(map[string]any{"plan_updates": r.plans}).JSON()
	}
	return r.env.Call(ctx, r.names.tool(tc.Function.Name), args).JSON()
}

// redact removes the API key from text bound for an error or a recording.
func (a *Agent) redact(s string) string { return a.key.Redact(s) }

func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func optFloat(p *float64) string {
	if p == nil {
		return "default"
	}
	return fmt.Sprint(*p)
}

func optInt(p *int) string {
	if p == nil {
		return "default"
	}
	return fmt.Sprint(*p)
}

func optBool(p *bool) string {
	if p == nil {
		return "default"
	}
	return fmt.Sprint(*p)
}

// RecordingJSON returns the last run's recording as JSON ("" before any
// run), for storage with the trial and offline replay.
func (a *Agent) RecordingJSON() (string, error) {
	rec := a.Recording()
	if rec == nil {
		return "", nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Spent returns the tokens and cost the provider billed during the Run
// that finished last, failed runs included (an attrition keeps what its
// answered requests cost), superseded journal entries included.
func (a *Agent) Spent() (tokens int64, cost float64) {
	rec := a.Recording()
	if rec == nil {
		return 0, 0
	}
	return rec.Billed(a.cfg.Prices)
}

// PromptHash identifies the prompt revision the agent runs with.
func (a *Agent) PromptHash() string {
	if h := a.Config().PromptHash; h != "" {
		return h
	}
	return endpoint.HashPrompt(a.Config().Prompt)
}
