// Package toolserver offers one trial's tools to an agent that runs outside
// rebound: over MCP (the official Go SDK, streamable HTTP on loopback) and
// over plain HTTP (POST /tools/{name}). Every call goes through the trial's
// agent.Env, so the fault schedule, the ledger and the simulated clock are
// exactly those a built-in agent meets; the server only translates.
//
// Besides the scenario's tools it offers four built-ins: wait (advances the
// simulated clock), update_plan (a plan update, counted against the replan
// budget), submit_claim (the structured final claim, validated against the
// scenario's claim schema), the three the LLM agent has, and trial_status
// (the budgets and what is left of them). None is a tool call of the
// world: none is faulted, none costs call budget.
//
// Tool names are offered the way the LLM agent offers them (payments.charge
// as payments__charge), because model APIs reject dots in function names;
// the dotted name is the tool's title and its metadata's name, and the HTTP
// endpoint accepts either spelling.
package toolserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/agent"
	"rebound/core/agent/llm"
	"rebound/core/harness"
	"rebound/core/scenario"
)

// Names of the built-in tools.
const (
	ToolWait   = "wait"
	ToolPlan   = "update_plan"
	ToolClaim  = "submit_claim"
	ToolStatus = "trial_status"
)

// builtin reports whether name is one of the built-ins.
func builtin(name string) bool {
	return name == ToolWait || name == ToolPlan || name == ToolClaim || name == ToolStatus
}

// MetaKey is the _meta key (MCP) and the field (HTTP listing) under which
// a tool's documented metadata is offered: effect, idempotency key, status
// tool, permission, documented errors, latency, deadline and cost. The
// fault schedule is never offered.
const MetaKey = "rebound/tool"

// CodeTrialOver answers a call that arrives after the trial ended; it is
// not recorded in the ledger.
const CodeTrialOver = "TRIAL_OVER"

// maxBody bounds one request (MCP or plain HTTP); maxClaim one claim.
const (
	maxBody  = 1 << 20
	maxClaim = 64 << 10
)

// Server serves one trial's tools. It is safe for concurrent use: calls are
// serialized in arrival order, as the dispatcher requires.
type Server struct {
	env    agent.Env
	goal   string
	budget harness.Budget // the task's, bounding wait (llm.WaitArg)
	// retryLimit is the scenario's retry policy bound, stated in the
	// instructions.
	retryLimit int
	tools      []*entry // scenario tools, then the built-ins
	byName     map[string]*entry
	mcp        *mcp.Server
	claims     *jsonschema.Resolved
	// mapped is the exposed name of each scenario tool, by tool name.
	mapped map[string]string

	mu        sync.Mutex
	closed    bool
	claim     string
	submitted int
	refused   int    // claims refused (RefusedClaims)
	refusal   string // why the last one was
	served    int    // calls answered, built-ins included (Served)
	calls     int    // scenario tool calls and plan updates dispatched: trial_status's
	replans   int    // counts when env is no harness.StatusReporter
	halted    chan struct{}
	haltOnce  sync.Once
	haltCause string
}

// entry is one offered tool.
type entry struct {
	name        string        // exposed name
	tool        *harness.Tool // nil for a built-in
	description string
	input       json.RawMessage
}

// New builds the server of one trial over its env and task.
func New(env agent.Env, task agent.Task) (*Server, error) {
	s := &Server{env: env, goal: task.Goal, budget: task.Budget, retryLimit: task.RetryLimit, byName: map[string]*entry{}, mapped: map[string]string{}, halted: make(chan struct{})}
	offered := env.Tools()
	dotted := make([]string, 0, len(offered))
	for i := range offered {
		t := offered[i]
		name, err := llm.FunctionName(t.Name)
		if err != nil {
			return nil, fmt.Errorf("toolserver: %w", err)
		}
		if builtin(name) {
			return nil, fmt.Errorf("toolserver: tool %q collides with the built-in %q", t.Name, name)
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("toolserver: two tools are offered as %q", name)
		}
		schema, err := llm.ParametersSchema(t)
		if err != nil {
			return nil, fmt.Errorf("toolserver: %w", err)
		}
		e := &entry{name: name, tool: &t, description: llm.ToolDescription(t), input: schema}
		s.tools = append(s.tools, e)
		s.byName[name] = e
		s.mapped[t.Name] = name
		dotted = append(dotted, t.Name)
	}
	// blocked_on names a tool; either spelling is accepted and the claim
	// keeps the dotted one, the name the grader and the ledger use.
	names := append([]string(nil), dotted...)
	for _, t := range dotted {
		if m := s.mapped[t]; m != t {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	claimSchema, err := lenientClaimSchema(task.Claim, names)
	if err != nil {
		return nil, fmt.Errorf("toolserver: claim schema: %w", err)
	}
	var cs jsonschema.Schema
	if err := json.Unmarshal(claimSchema, &cs); err != nil {
		return nil, fmt.Errorf("toolserver: claim schema: %w", err)
	}
	if s.claims, err = cs.Resolve(nil); err != nil {
		return nil, fmt.Errorf("toolserver: claim schema: %w", err)
	}
	for _, e := range []*entry{
		{name: ToolWait, input: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"milliseconds to wait"}},"required":["ms"],"additionalProperties":false}`),
			description: waitDescription(task.Budget)},
		{name: ToolPlan, input: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"the new plan"}},"required":["summary"],"additionalProperties":false}`),
			description: "Publish your current plan when it changes (one or two sentences). Counts against the plan-update budget. Does not count as a tool call."},
		{name: ToolStatus, input: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			description: "Report the task's budgets and what is left of them: calls_used, call_limit, calls_left, now_ms, deadline_ms, time_left_ms, replans_used, replan_limit, replans_left, cost_usd, cost_limit_usd, cost_left_usd (a limit of 0 means none; its left is then null). Does not count as a tool call."},
		{name: ToolClaim, input: claimSchema,
			description: "Submit your final structured claim: status \"completed\" if the goal was achieved, \"blocked\" if it was not (then blocked_on names the tool that could not be resolved), and every field you verified (null when you did not verify it). Submit once, at the end; a later submission replaces an earlier one. Does not count as a tool call."},
	} {
		s.tools = append(s.tools, e)
		s.byName[e.name] = e
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "rebound", Title: "rebound scenario tools", Version: "1"},
		&mcp.ServerOptions{Instructions: s.instructions()})
	for _, e := range s.tools {
		s.mcp.AddTool(e.mcpTool(), s.mcpHandler(e))
	}
	s.mcp.AddReceivingMiddleware(s.unlisted)
	return s, nil
}

// unlisted answers a tools/call of a name that is not offered the way
// plain HTTP does, so both transports treat it alike: the dotted spelling
// of an offered tool is that tool, and any other name is a call to a
// missing tool, recorded in the ledger (TOOL_UNAVAILABLE, a call of the
// budget), as for the LLM agent. (The SDK would answer a protocol error
// that reaches no ledger: an agent could probe names for free, and a
// hallucinated tool would leave no trace.)
func (s *Server) unlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		if _, offered := s.byName[r.Params.Name]; offered {
			return next(ctx, method, req)
		}
		return s.mcpHandler(&entry{name: s.resolve(r.Params.Name)})(ctx, r)
	}
}

// resolve is the offered name of a tool called by either spelling; any
// other name is returned as it is.
func (s *Server) resolve(name string) string {
	if _, ok := s.byName[name]; ok {
		return name
	}
	if mapped, ok := s.mapped[name]; ok {
		return mapped
	}
	return name
}

// waitDescription documents wait, with its bound (llm.MaxWaitMs) under
// the task's budget.
func waitDescription(b harness.Budget) string {
	d := "Wait on the task clock for the given number of milliseconds (for example to honour a retry_after_ms). Returns the task time now_ms. Does not count as a tool call. "
	if b.DeadlineMs > 0 {
		return d + fmt.Sprintf("One wait may reach at most %d ms past the task's %d ms deadline; a longer one is refused (INVALID_INPUT) and the clock does not move.", llm.WaitBeyondDeadlineMs, b.DeadlineMs)
	}
	return d + fmt.Sprintf("One wait lasts at most %d ms (24 hours); a longer one is refused (INVALID_INPUT) and the clock does not move.", llm.MaxWaitNoDeadlineMs)
}

// lenientClaimSchema is the LLM agent's claim schema with only status
// required: the LLM agent's strict response format needs every property
// listed, but an agent calling submit_claim may leave out what it did not
// verify (absent and null both read as unknown).
func lenientClaimSchema(fields []scenario.ClaimField, tools []string) (json.RawMessage, error) {
	strict, err := llm.ClaimSchema(fields, tools)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(strict, &m); err != nil {
		return nil, err
	}
	m["required"] = []string{scenario.ClaimStatus}
	return json.Marshal(m)
}

func (s *Server) instructions() string {
	return "Goal: " + s.goal + "\n\n" +
		"Tool failures come back as tool errors whose content is JSON with code, retryable, retry_after_ms and uncertain. " +
		"Call wait(ms) to wait on the task clock (honour retry_after_ms that way). uncertain: true means the request may have taken effect: " +
		"check with the tool's status tool before sending it again. When you are done, call submit_claim with your structured claim.\n\n" +
		BudgetText(s.budget, s.retryLimit)
}

// BudgetText states a task's budgets as the MCP instructions give them
// (and trial_status answers them, with what is left).
func BudgetText(b harness.Budget, retryLimit int) string {
	var t strings.Builder
	t.WriteString("Budget (trial_status reports what is left; wait, update_plan, submit_claim and trial_status are not tool calls):\n")
	fmt.Fprintf(&t, "- at most %d tool calls; calls beyond it are refused with BUDGET_EXHAUSTED\n", b.CallLimit())
	if b.DeadlineMs > 0 {
		fmt.Fprintf(&t, "- deadline: %d ms of task time; every tool call takes task time and wait advances it\n", b.DeadlineMs)
	} else {
		t.WriteString("- deadline: none\n")
	}
	if b.Replans > 0 {
		fmt.Fprintf(&t, "- at most %d plan updates\n", b.Replans)
	}
	if b.CostUSD > 0 {
		fmt.Fprintf(&t, "- tool cost: at most $%.4f\n", b.CostUSD)
	}
	if retryLimit > 0 {
		fmt.Fprintf(&t, "- retry policy: at most %d retries of a failed step\n", retryLimit)
	}
	return t.String()
}

func (e *entry) mcpTool() *mcp.Tool {
	t := &mcp.Tool{Name: e.name, Description: e.description, InputSchema: e.input}
	if e.tool == nil {
		return t
	}
	t.Title = e.tool.Name
	t.Meta = mcp.Meta{MetaKey: *e.tool}
	no := false
	a := &mcp.ToolAnnotations{Title: e.tool.Name}
	switch e.tool.Effect {
	case harness.EffectRead:
		a.ReadOnlyHint, a.IdempotentHint, a.DestructiveHint = true, true, &no
	case harness.EffectIdempotent:
		a.IdempotentHint = true
	}
	t.Annotations = a
	return t
}

// MCP returns the MCP server, to serve it over another transport (stdio).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Claim returns the last claim submitted through submit_claim, and whether
// there was one.
func (s *Server) Claim() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claim, s.submitted > 0
}

// Served is how many calls the server answered, built-ins included: 0
// means the agent never reached its tools.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Halted is closed when the harness stopped the trial (the agent kept
// calling after its budget was spent); the caller should stop the agent.
func (s *Server) Halted() <-chan struct{} { return s.halted }

// HaltCause says why the harness stopped the trial, once Halted is closed.
func (s *Server) HaltCause() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.haltCause
}

// Close ends the trial for the server: every later call is answered
// TRIAL_OVER and reaches nothing. It returns once no call is in progress,
// so the ledger is final.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// Handler serves MCP (streamable HTTP) under /mcp and the plain HTTP tools
// under /tools: GET /tools lists them, POST /tools/{name} calls one. It
// checks neither Host nor Origin beyond the SDK's own check on /mcp (a
// non-loopback Host on a loopback connection): serve it through Guard, as
// Start does.
func (s *Server) Handler() http.Handler { return s.handler(false) }

// handler is Handler; guarded disables the SDK's Host check, which Guard's
// (the exact listener address, AllowHosts) replaces: the SDK's would refuse
// an allowed forwarded Host and accept any loopback port.
func (s *Server) handler(guarded bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", requireSession(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: maxBody, DisableLocalhostProtection: guarded})))
	mux.HandleFunc("GET /tools", s.listHTTP)
	mux.HandleFunc("POST /tools/{name}", s.callHTTP)
	return mux
}

// Running is a server listening on loopback.
type Running struct {
	// MCPURL is the streamable HTTP endpoint; ToolsURL the base of the
	// plain HTTP tools (POST ToolsURL/{name}).
	MCPURL   string
	ToolsURL string
	srv      *http.Server
	s        *Server
	done     chan struct{}
}

// Start listens on a free loopback port and serves Handler under a random
// path prefix: the URLs are capabilities, so another process on the machine
// (another trial's agent, say) cannot reach this trial's tools by guessing
// a port. Every request also passes Guard: its Host must be the listener's
// own address (127.0.0.1:PORT or localhost:PORT, plus any AllowHosts
// adds) and an Origin, when present, must be loopback. OnListener serves
// on a listener of the caller's instead.
func (s *Server) Start(opts ...StartOption) (*Running, error) {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	prefix := o.prefix
	if len(prefix) < 33 || prefix[0] != '/' || strings.Trim(prefix[1:], "0123456789abcdef") != "" {
		if o.prefix != "" {
			return nil, fmt.Errorf("toolserver: prefix %q is not / and 32 or more hex digits", o.prefix)
		}
		secret := make([]byte, 16)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("toolserver: %w", err)
		}
		prefix = "/" + hex.EncodeToString(secret)
	}
	ln := o.ln
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("toolserver: listen on loopback: %w", err)
		}
	}
	hosts, err := listenerHosts(ln.Addr())
	if err != nil {
		if o.ln == nil {
			_ = ln.Close()
		}
		return nil, err
	}
	hosts = append(hosts, o.hosts...)
	base := "http://" + ln.Addr().String() + prefix
	r := &Running{MCPURL: base + "/mcp", ToolsURL: base + "/tools", s: s, done: make(chan struct{}),
		srv: &http.Server{Handler: Guard(http.StripPrefix(prefix, s.handler(true)), hosts), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln) // returns ErrServerClosed after Close
	}()
	return r, nil
}

// Close stops serving and ends the trial for the server (Server.Close).
// Open MCP streams are cut after a short grace.
func (r *Running) Close() {
	r.s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		_ = r.srv.Close()
	}
	<-r.done
}

// dispatch answers one call of an offered name, or of any other name: an
// unknown one reaches the harness, which answers TOOL_UNAVAILABLE and
// records it, as for the LLM agent (over MCP and HTTP alike).
func (s *Server) dispatch(ctx context.Context, name string, args map[string]any) harness.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return harness.Failed(CodeTrialOver, false, "the trial is over; nothing was sent")
	}
	s.served++
	switch name {
	case ToolWait:
		ms, refused := llm.WaitArg(args, s.budget, s.env.Now())
		if refused != nil {
			return *refused
		}
		s.env.Sleep(ms)
		return harness.Succeeded(map[string]any{"waited_ms": ms, "now_ms": s.env.Now()})
	case ToolPlan:
		summary, ok := args["summary"].(string)
		if !ok || strings.TrimSpace(summary) == "" {
			return harness.Failed(harness.CodeInvalidInput, false, "update_plan needs summary, a non-empty string")
		}
		s.replans++
		return s.guard(func() harness.Result {
			if pu, ok := s.env.(harness.PlanUpdater); ok {
				if res := pu.UpdatePlan(summary); !res.OK {
					return res // refused by the harness (over the size cap)
				}
			} else {
				s.env.Replan(summary)
			}
			return harness.Succeeded(map[string]any{"now_ms": s.env.Now()})
		})
	case ToolClaim:
		return s.submit(args)
	case ToolStatus:
		return harness.Succeeded(s.status())
	}
	s.calls++
	tool := llm.ToolName(name)
	if e, ok := s.byName[name]; ok && e.tool != nil {
		tool = e.tool.Name
	}
	return s.guard(func() harness.Result { return s.env.Call(ctx, tool, args) })
}

// status answers trial_status (s.mu held): the harness's own counts when
// the env has them.
func (s *Server) status() map[string]any {
	st := harness.NewStatus(s.budget, s.calls, s.replans, 0, s.env.Now())
	if r, ok := s.env.(harness.StatusReporter); ok {
		st = r.Status()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// guard runs one env operation; a panic (the harness halting a trial whose
// agent would not stop) is answered as a refusal and signalled on Halted.
func (s *Server) guard(f func() harness.Result) (r harness.Result) {
	defer func() {
		if p := recover(); p != nil {
			s.haltOnce.Do(func() {
				s.haltCause = fmt.Sprint(p)
				close(s.halted)
			})
			r = harness.Failed(harness.CodeBudgetExhausted, false, "the harness stopped the trial")
		}
	}()
	return f()
}

// RefusedClaims is how many submit_claim calls were refused, and the
// answer to the last one: a refusal records nothing, so it is the one trace
// of a claim the agent thinks it made.
func (s *Server) RefusedClaims() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, s.refusal
}

// submit validates and records a claim (s.mu held); a refusal is counted.
func (s *Server) submit(args map[string]any) harness.Result {
	r := s.record(args)
	if !r.OK {
		s.refused++
		s.refusal = r.Message
	}
	return r
}

// record validates and records a claim (s.mu held).
func (s *Server) record(args map[string]any) harness.Result {
	if err := s.claims.Validate(args); err != nil {
		return harness.Failed(harness.CodeInvalidInput, false, "the claim does not match submit_claim's schema: %v; nothing was recorded", err)
	}
	claim := make(map[string]any, len(args))
	for k, v := range args {
		claim[k] = v
	}
	if on, ok := claim[scenario.ClaimBlockedOn].(string); ok {
		for tool, name := range s.mapped {
			if on == name {
				claim[scenario.ClaimBlockedOn] = tool
			}
		}
	}
	b, err := json.Marshal(claim)
	if err != nil {
		return harness.Failed(harness.CodeInvalidInput, false, "the claim is not JSON: %v", err)
	}
	if len(b) > maxClaim {
		return harness.Failed(harness.CodeInvalidInput, false, "the claim is %d bytes; at most %d are accepted; nothing was recorded", len(b), maxClaim)
	}
	s.claim = string(b)
	s.submitted++
	return harness.Succeeded(map[string]any{"recorded": true, "submissions": s.submitted})
}

// Body renders a result as the JSON the agent receives. A failure always
// carries code, retryable, retry_after_ms and uncertain, so an agent can
// read them without knowing which are optional.
func Body(r harness.Result) []byte {
	if r.OK {
		return []byte(r.JSON())
	}
	b, err := json.Marshal(struct {
		OK           bool   `json:"ok"`
		Code         string `json:"code"`
		Retryable    bool   `json:"retryable"`
		RetryAfterMs int64  `json:"retry_after_ms"`
		Uncertain    bool   `json:"uncertain"`
		Message      string `json:"message"`
	}{false, r.Code, r.Retryable, r.RetryAfterMs, r.Uncertain, r.Message})
	if err != nil {
		return []byte(r.JSON())
	}
	return b
}

func (s *Server) mcpHandler(e *entry) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		var r harness.Result
		if args, err := harness.DecodeArgs(raw); err != nil {
			r = harness.Failed(harness.CodeInvalidInput, false, "arguments of %s are not a JSON object: %v; nothing was sent", e.name, err)
		} else {
			r = s.dispatch(ctx, e.name, args)
		}
		b := Body(r)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}},
			StructuredContent: json.RawMessage(b), IsError: !r.OK}, nil
	}
}

// HTTPStatus is the status code a plain HTTP call answers with: 200 for a
// success, the provider's usual status for each normalized failure.
func HTTPStatus(r harness.Result) int {
	if r.OK {
		return http.StatusOK
	}
	switch r.Code {
	case harness.CodeTimeout, harness.CodeTimeoutAfterSend, harness.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case harness.CodeUnavailable:
		return http.StatusServiceUnavailable
	case harness.CodeBadGateway:
		return http.StatusBadGateway
	case harness.CodeRateLimited:
		return http.StatusTooManyRequests
	case harness.CodeInvalidInput:
		return http.StatusBadRequest
	case harness.CodeUnauthorized:
		return http.StatusUnauthorized
	case harness.CodeForbidden:
		return http.StatusForbidden
	case harness.CodeToolUnavailable, harness.CodeNotFound:
		return http.StatusNotFound
	case harness.CodeConflict, CodeTrialOver:
		return http.StatusConflict
	}
	return http.StatusUnprocessableEntity
}

func (s *Server) callHTTP(w http.ResponseWriter, req *http.Request) {
	name := s.resolve(req.PathValue("name"))
	var r harness.Result
	raw, err := readBody(w, req)
	if err == nil {
		var args map[string]any
		if args, err = harness.DecodeArgs(raw); err == nil {
			r = s.dispatch(req.Context(), name, args)
		}
	}
	if err != nil {
		r = harness.Failed(harness.CodeInvalidInput, false, "the body of %s is not a JSON object: %v; nothing was sent", name, err)
	}
	if r.RetryAfterMs > 0 {
		w.Header().Set("Retry-After", fmt.Sprint((r.RetryAfterMs+999)/1000))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(HTTPStatus(r))
	_, _ = w.Write(append(Body(r), '\n'))
}

func readBody(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, req.Body, maxBody)
	defer body.Close()
	return io.ReadAll(body)
}

// Listed is one tool in the plain HTTP listing: the fields and names of
// MCP's tools/list (the metadata under _meta["rebound/tool"]).
type Listed struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description"`
	InputSchema json.RawMessage      `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Meta        mcp.Meta             `json:"_meta,omitempty"`
}

func (s *Server) listHTTP(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Goal  string   `json:"goal"`
		Tools []Listed `json:"tools"`
	}{Goal: s.goal}
	for _, e := range s.tools {
		t := e.mcpTool()
		out.Tools = append(out.Tools, Listed{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: e.input, Annotations: t.Annotations, Meta: t.Meta})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
