package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/harness"
)

// ClientEnv is an agent.Env over an MCP client session of a rebound tool
// server: Go agent code written against agent.Env runs unchanged against a
// trial in another process. Tools come from tools/list with their metadata
// (_meta["rebound/tool"]); Sleep, Now and Replan use the wait and
// update_plan built-ins; SubmitClaim calls submit_claim.
type ClientEnv struct {
	ctx   context.Context
	sess  *mcp.ClientSession
	tools []harness.Tool
	names map[string]string // tool name -> offered name

	mu  sync.Mutex
	now int64
	err error // the first transport or protocol error
}

// NewClientEnv lists the session's tools. ctx bounds every later call.
func NewClientEnv(ctx context.Context, sess *mcp.ClientSession) (*ClientEnv, error) {
	e := &ClientEnv{ctx: ctx, sess: sess, names: map[string]string{}}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("toolserver client: tools/list: %w", err)
		}
		raw, ok := t.Meta[MetaKey]
		if !ok {
			continue // a built-in
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		var ht harness.Tool
		if err := json.Unmarshal(b, &ht); err != nil {
			return nil, fmt.Errorf("toolserver client: metadata of %s: %w", t.Name, err)
		}
		e.tools = append(e.tools, ht)
		e.names[ht.Name] = t.Name
	}
	return e, nil
}

// Err returns the first transport or protocol error a call met (a call
// that met one is answered as an UNAVAILABLE failure).
func (e *ClientEnv) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Tools returns the offered tools with their metadata.
func (e *ClientEnv) Tools() []harness.Tool { return e.tools }

// Call calls a tool by its (dotted) tool name.
func (e *ClientEnv) Call(ctx context.Context, tool string, args map[string]any) harness.Result {
	name, ok := e.names[tool]
	if !ok {
		name = tool
	}
	return e.call(ctx, name, args)
}

// Sleep waits on the trial's simulated clock.
func (e *ClientEnv) Sleep(ms int64) {
	e.call(e.ctx, ToolWait, map[string]any{"ms": ms})
}

// Now is the trial's simulated time, in ms.
func (e *ClientEnv) Now() int64 {
	e.call(e.ctx, ToolWait, map[string]any{"ms": 0})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// Replan publishes a plan update.
func (e *ClientEnv) Replan(summary string) {
	e.call(e.ctx, ToolPlan, map[string]any{"summary": summary})
}

// SubmitClaim submits a claim (JSON) through submit_claim.
func (e *ClientEnv) SubmitClaim(ctx context.Context, claim string) harness.Result {
	var args map[string]any
	if err := json.Unmarshal([]byte(claim), &args); err != nil {
		return harness.Failed(harness.CodeInvalidInput, false, "claim is not a JSON object: %v", err)
	}
	return e.call(ctx, ToolClaim, args)
}

func (e *ClientEnv) call(ctx context.Context, name string, args map[string]any) harness.Result {
	res, err := e.sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.fail(err)
		return harness.Failed(harness.CodeUnavailable, true, "tools/call %s: %v", name, err)
	}
	r, err := ParseResult(res)
	if err != nil {
		e.fail(err)
		return harness.Failed(harness.CodeUnavailable, true, "%v", err)
	}
	if now, ok := r.Data["now_ms"].(float64); ok && r.OK {
		e.mu.Lock()
		e.now = int64(now)
		e.mu.Unlock()
	}
	return r
}

func (e *ClientEnv) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

// ParseResult reads a tool server's answer back into a normalized result:
// the JSON text content, with isError matching ok.
func ParseResult(res *mcp.CallToolResult) (harness.Result, error) {
	if len(res.Content) != 1 {
		return harness.Result{}, fmt.Errorf("toolserver client: %d content items, want 1", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return harness.Result{}, fmt.Errorf("toolserver client: content is %T, want text", res.Content[0])
	}
	var r harness.Result
	if err := json.Unmarshal([]byte(text.Text), &r); err != nil {
		return harness.Result{}, fmt.Errorf("toolserver client: content is not a result: %w", err)
	}
	if r.OK == res.IsError {
		return harness.Result{}, fmt.Errorf("toolserver client: isError=%v but ok=%v", res.IsError, r.OK)
	}
	return r, nil
}
