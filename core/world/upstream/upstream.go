// Package upstream is a world whose tools are an upstream MCP server's: a
// team's own tools, put under rebound's fault injection.
//
// The harness stays in front: a fault the schedule injects before sending
// is answered by the harness and nothing reaches the upstream; a timeout
// after sending forwards the call, lets the upstream commit, and drops the
// answer; corrupt and stale output transform the upstream's real answer.
// This package only forwards what reaches the world, records every answer
// verbatim, and says what committed, from the tool's declared effect (the
// upstream's annotations, completed or overridden by the scenario).
//
// The world's state, what truth and success paths read, is the answers of
// declared read-only probe calls made after the agent is done: the
// upstream's own state, never the agent's account of it.
//
// The upstream is a process rebound does not trust. A stdio upstream runs
// sealed by default (internal/sandbox: a uid of its own, no network, a
// cgroup), each call has a real-time bound, and an answer is bounded in
// size like an agent's call (core/bounds). It never sees the store or the
// worker's files: only its trial's directory and the paths the scenario
// lets it read.
package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/bounds"
	"rebound/core/harness"
)

// Kind is the scenario's world name for an upstream world.
const Kind = "mcp"

// Defaults of Config's bounds.
const (
	DefaultCallTimeout  = 30 * time.Second
	DefaultStartTimeout = 30 * time.Second
)

// Config says where the upstream is and what its tools mean.
type Config struct {
	// Command is a stdio upstream's argv, started once per trial. Every
	// "{trial_dir}" in it, and in Env's values, is the trial's own
	// directory, empty at the start of each trial.
	Command []string
	Env     map[string]string
	// Dir resolves relative paths of Command[0] and ReadOnly (the scenario
	// file's directory).
	Dir string
	// Unsealed runs the stdio upstream as a plain child process, with the
	// worker's rights (sandbox: none); by default it is sealed.
	Unsealed bool
	// ReadOnly are paths the sealed upstream may read besides the system's
	// (its install: node_modules, a virtualenv).
	ReadOnly []string
	// URL is a streamable-HTTP upstream, shared by every trial; Reset is
	// run before each trial to put it back in its initial state.
	URL   string
	Reset []string
	// Reuse keeps a command upstream's process for the next trial of this
	// worker (pool.go): its trial dir is emptied and setup runs again. Only
	// for an upstream whose whole state is in its trial dir.
	Reuse bool
	// Isolated: the URL upstream keeps concurrent trials apart. Otherwise
	// trials against one URL run one at a time (in this process).
	Isolated bool
	// Setup are calls made once the upstream is up, before the agent:
	// the trial's initial state. Never faulted, not the agent's.
	Setup []Probe
	// Tools completes or overrides the upstream's own metadata, by name.
	Tools map[string]Override
	// Probes are read-only calls made after the agent is done; their
	// answers are the world's state, by name.
	Probes []Probe
	// CallTimeout bounds one call in real time (DefaultCallTimeout);
	// StartTimeout bounds starting and listing (DefaultStartTimeout).
	CallTimeout  time.Duration
	StartTimeout time.Duration
}

// Override is what a scenario declares about one upstream tool.
type Override struct {
	Effect              harness.Effect
	IdempotencyKeyParam string
	ReconciledBy        string
	Permission          string
	Guards              []string // permissions whose data the tool also reaches
	Errors              []ErrorRule
	LatencyMs           int64
	DeadlineMs          int64
	StaleAgeMs          int64
	CostUSD             float64
}

// ErrorRule maps an upstream error answer (isError, or a protocol error) to
// one of the harness's codes: the first rule whose pattern matches the
// answer's text wins.
type ErrorRule struct {
	Code      string
	Match     *regexp.Regexp
	Retryable bool
}

// Probe is one read-only call whose answer the world's state holds.
type Probe struct {
	Name string
	Tool string
	Args map[string]any
}

// Exchange is one call that reached the upstream, as it answered:
// recorded with the trial, so replay answers from it without the upstream.
type Exchange struct {
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
	Probe  bool           `json:"probe,omitempty"`
	Setup  bool           `json:"setup,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	Code   string         `json:"code,omitempty"`
	Error  string         `json:"error,omitempty"`
	Retry  bool           `json:"retryable,omitempty"`
	Millis int64          `json:"ms"`
}

// World is one trial's upstream world.
type World struct {
	cfg     Config
	session *mcp.ClientSession
	stop    func() error
	unlock  func() // releases a shared URL upstream for the next trial
	// pooled is the reused process this trial holds (Config.Reuse); broken
	// keeps it from the next trial (its connection failed).
	pooled *pooled
	broken bool
	tools  []harness.Tool
	byName map[string]harness.Tool
	probed map[string]any

	// replay, when set, answers instead of the session: the recorded
	// exchanges of a stored trial (Replay).
	replay *recorded

	mu        sync.Mutex
	committed map[string]bool // intents of idempotent writes already committed
	log       []Exchange
	closed    bool
}

// Tools is the upstream's catalog with the scenario's metadata.
func (w *World) Tools() []harness.Tool { return w.tools }

// Exchanges returns what the upstream answered, in order.
func (w *World) Exchanges() []Exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Exchange(nil), w.log...)
}

// Invoke forwards one call that reached the world.
func (w *World) Invoke(tool string, args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	t, ok := w.byName[tool]
	if !ok {
		return nil, harness.Errorf(harness.CodeToolUnavailable, "the upstream has no tool %q", tool)
	}
	data, terr := w.call(tool, args, false)
	if terr == nil {
		w.commit(t, args, fx)
	}
	return data, terr
}

// commit records what a successful call changed, as its effect says: a
// write commits each time (two are a duplicate side effect); an idempotent
// tool, or a conditional one with its key, commits its intent once.
func (w *World) commit(t harness.Tool, args map[string]any, fx harness.Effects) {
	switch t.Effect {
	case harness.EffectRead:
		return
	case harness.EffectWrite:
		fx.Commit("upstream_write", t.Name+":"+argsDigest(args), object(t, args))
		return
	case harness.EffectConditional:
		if key, ok := args[t.IdempotencyKeyParam]; ok && key != nil {
			intent := t.Name + ":key:" + fmt.Sprint(key)
			w.mu.Lock()
			first := !w.committed[intent]
			w.committed[intent] = true
			w.mu.Unlock()
			if first {
				fx.Commit("upstream_write", intent, object(t, args))
			}
			return
		}
		fx.Commit("upstream_write", t.Name+":"+argsDigest(args), object(t, args))
	case harness.EffectIdempotent:
		intent := t.Name + ":" + argsDigest(args)
		w.mu.Lock()
		first := !w.committed[intent]
		w.committed[intent] = true
		w.mu.Unlock()
		if first {
			fx.Commit("upstream_write", intent, object(t, args))
		}
	}
}

// object names what a call acted on: its first string argument among the
// usual names, for people reading the ledger.
func object(t harness.Tool, args map[string]any) string {
	for _, k := range []string{"path", "name", "id", "key", t.IdempotencyKeyParam} {
		if s, ok := args[k].(string); ok && s != "" {
			return s
		}
	}
	return t.Name
}

// argsDigest is a canonical hash of the arguments (encoding/json sorts map
// keys).
func argsDigest(args map[string]any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// State runs the probes once, after the agent is done, and returns their
// answers by name: {"<probe>": <data>, ...}; a probe the upstream refused
// is {"error": {"code": ..., "message": ...}}.
func (w *World) State() map[string]any {
	w.mu.Lock()
	if w.probed != nil {
		defer w.mu.Unlock()
		return w.probed
	}
	w.mu.Unlock()
	out := make(map[string]any, len(w.cfg.Probes))
	for _, p := range w.cfg.Probes {
		data, terr := w.call(p.Tool, p.Args, true)
		if terr != nil {
			out[p.Name] = map[string]any{"error": map[string]any{"code": terr.Code, "message": terr.Message}}
			continue
		}
		out[p.Name] = data
	}
	w.mu.Lock()
	w.probed = out
	w.mu.Unlock()
	return out
}

// call sends one tools/call and bounds its answer (or, replaying, answers
// from the recording).
func (w *World) call(tool string, args map[string]any, probe bool) (map[string]any, *harness.ToolError) {
	if w.replay != nil {
		return w.replay.answer(tool, args, probe)
	}
	timeout := w.cfg.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	res, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	ex := Exchange{Tool: tool, Args: args, Probe: probe, Millis: time.Since(start).Milliseconds()}
	var data map[string]any
	var terr *harness.ToolError
	switch {
	case err != nil:
		terr = w.protocolError(tool, err, ctx.Err() != nil)
		w.mu.Lock()
		w.broken = true // the process may be in any state: not for the next trial
		w.mu.Unlock()
	case res.IsError:
		terr = w.errorAnswer(tool, res)
	default:
		data, terr = answerData(res)
	}
	if terr != nil {
		ex.Code, ex.Error, ex.Retry = terr.Code, terr.Message, terr.Retryable
	} else {
		ex.Data = data
	}
	w.mu.Lock()
	w.log = append(w.log, ex)
	w.mu.Unlock()
	return data, terr
}

// answerData is a successful answer as the harness's data: the structured
// content when the upstream gives one, else {"text": ...} joining its text
// blocks (and {"content": [...]} for other blocks), bounded like any tool
// result.
func answerData(res *mcp.CallToolResult) (map[string]any, *harness.ToolError) {
	var data map[string]any
	if sc, ok := res.StructuredContent.(map[string]any); ok && len(sc) > 0 {
		data = sc
	} else if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			var m map[string]any
			if json.Unmarshal(b, &m) == nil && len(m) > 0 {
				data = m
			}
		}
	}
	if data == nil {
		data = map[string]any{}
		var texts []string
		var other []any
		for _, c := range res.Content {
			switch x := c.(type) {
			case *mcp.TextContent:
				texts = append(texts, x.Text)
			default:
				b, err := json.Marshal(c)
				if err == nil {
					var v any
					if json.Unmarshal(b, &v) == nil {
						other = append(other, v)
					}
				}
			}
		}
		if len(texts) > 0 {
			data["text"] = strings.Join(texts, "\n")
		}
		if len(other) > 0 {
			data["content"] = other
		}
	}
	if b, err := json.Marshal(data); err != nil {
		return nil, harness.Errorf(harness.CodeBadGateway, "the upstream's answer is not JSON: %v", err)
	} else if len(b) > bounds.ToolResult {
		return nil, harness.Errorf(harness.CodeBadGateway, "the upstream's answer is %d bytes, over the harness's cap of %d bytes", len(b), bounds.ToolResult)
	}
	return data, nil
}

// errorAnswer maps an isError answer by the tool's rules, then by the
// words an error's text usually carries.
func (w *World) errorAnswer(tool string, res *mcp.CallToolResult) *harness.ToolError {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	msg := strings.Join(texts, "\n")
	if len(msg) > 4096 {
		msg = msg[:4096] + "…"
	}
	if msg == "" {
		msg = "the upstream answered with an error"
	}
	for _, r := range w.rules(tool) {
		if r.Match == nil || r.Match.MatchString(msg) {
			return &harness.ToolError{Code: r.Code, Retryable: r.Retryable, Message: msg}
		}
	}
	return &harness.ToolError{Code: guessCode(msg), Message: msg}
}

func (w *World) rules(tool string) []ErrorRule {
	if o, ok := w.cfg.Tools[tool]; ok {
		return o.Errors
	}
	return nil
}

// guessCode reads an unmapped error's text for the usual words.
func guessCode(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "not found") || strings.Contains(m, "enoent") || strings.Contains(m, "no such"):
		return harness.CodeNotFound
	case strings.Contains(m, "already exists") || strings.Contains(m, "conflict") || strings.Contains(m, "eexist"):
		return harness.CodeConflict
	case strings.Contains(m, "denied") || strings.Contains(m, "outside allowed") || strings.Contains(m, "forbidden") || strings.Contains(m, "eacces"):
		return harness.CodeForbidden
	case strings.Contains(m, "invalid") || strings.Contains(m, "validation") || strings.Contains(m, "expected") || strings.Contains(m, "required"):
		return harness.CodeInvalidInput
	}
	return harness.CodeUnavailable
}

// protocolError maps a failed tools/call (not an isError answer): a
// JSON-RPC error, a closed connection, a timeout.
func (w *World) protocolError(tool string, err error, timedOut bool) *harness.ToolError {
	msg := err.Error()
	if len(msg) > 4096 {
		msg = msg[:4096] + "…"
	}
	if timedOut {
		return &harness.ToolError{Code: harness.CodeTimeout, Retryable: true, Message: "the upstream did not answer within the call's real-time bound"}
	}
	var rpc interface{ Error() string }
	if errors.As(err, &rpc) && strings.Contains(msg, "-32602") {
		return &harness.ToolError{Code: harness.CodeInvalidInput, Message: msg}
	}
	for _, r := range w.rules(tool) {
		if r.Match != nil && r.Match.MatchString(msg) {
			return &harness.ToolError{Code: r.Code, Retryable: r.Retryable, Message: msg}
		}
	}
	if strings.Contains(msg, "unknown tool") || strings.Contains(msg, "-32601") {
		return &harness.ToolError{Code: harness.CodeToolUnavailable, Message: msg}
	}
	return &harness.ToolError{Code: harness.CodeUnavailable, Retryable: true, Message: msg}
}

// Close ends the session and the upstream.
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	reuse := w.pooled != nil && !w.broken && w.replay == nil && w.session != nil
	w.mu.Unlock()
	var errs []error
	if reuse {
		putIdle(w.pooled)
	} else {
		if w.session != nil {
			errs = append(errs, w.session.Close())
		}
		if w.stop != nil {
			errs = append(errs, w.stop())
		}
	}
	if w.unlock != nil {
		w.unlock()
	}
	return errors.Join(errs...)
}

// catalog builds the harness's tools from tools/list and the overrides:
// the annotations say read (readOnlyHint), idempotent (idempotentHint) or
// write; the scenario's override wins field by field.
func catalog(listed []*mcp.Tool, over map[string]Override) ([]harness.Tool, error) {
	seen := map[string]bool{}
	var out []harness.Tool
	for _, lt := range listed {
		if lt == nil || lt.Name == "" || seen[lt.Name] {
			continue
		}
		seen[lt.Name] = true
		t := harness.Tool{Name: lt.Name, Description: lt.Description, Effect: effectOf(lt.Annotations)}
		if lt.InputSchema != nil {
			b, err := json.Marshal(lt.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", lt.Name, err)
			}
			t.Schema = b
			t.Params = paramsOf(b)
		}
		if o, ok := over[lt.Name]; ok {
			apply(&t, o)
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("tool %s: %w", lt.Name, err)
		}
		out = append(out, t)
	}
	for name := range over {
		if !seen[name] {
			return nil, fmt.Errorf("tools: %s is declared in the scenario but the upstream does not list it", name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func effectOf(a *mcp.ToolAnnotations) harness.Effect {
	if a == nil {
		return harness.EffectWrite // unannotated: assume the worst
	}
	if a.ReadOnlyHint {
		return harness.EffectRead
	}
	if a.IdempotentHint {
		return harness.EffectIdempotent
	}
	return harness.EffectWrite
}

func apply(t *harness.Tool, o Override) {
	if o.Effect != "" {
		t.Effect = o.Effect
	}
	if o.IdempotencyKeyParam != "" {
		t.IdempotencyKeyParam = o.IdempotencyKeyParam
	}
	if o.ReconciledBy != "" {
		t.ReconciledBy = o.ReconciledBy
	}
	if o.Permission != "" {
		t.Permission = o.Permission
	}
	if len(o.Guards) > 0 {
		t.Guards = append([]string(nil), o.Guards...)
	}
	for _, e := range o.Errors {
		t.Errors = append(t.Errors, harness.DocumentedError{Code: e.Code, Retryable: e.Retryable})
	}
	if o.LatencyMs > 0 {
		t.LatencyMs = o.LatencyMs
	}
	if o.DeadlineMs > 0 {
		t.DeadlineMs = o.DeadlineMs
	}
	if o.StaleAgeMs > 0 {
		t.StaleAgeMs = o.StaleAgeMs
	}
	if o.CostUSD > 0 {
		t.CostUSD = o.CostUSD
	}
}

// paramsOf reads the top-level properties of an object schema as the
// harness's params (for people and the reference agents; agents are
// offered the schema itself).
func paramsOf(schema []byte) []harness.Param {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []harness.Param
	for name, p := range s.Properties {
		typ, _ := p.Type.(string)
		switch typ {
		case "string", "integer", "number", "boolean", "object":
		case "array":
			typ = "object"
		default:
			typ = "string"
		}
		par := harness.Param{Name: name, Type: typ, Description: p.Description, Required: req[name]}
		for _, e := range p.Enum {
			if s, ok := e.(string); ok {
				par.Enum = append(par.Enum, s)
			}
		}
		out = append(out, par)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
