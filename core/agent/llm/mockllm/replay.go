package mockllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent"
	"rebound/core/agent/llm"
	"rebound/core/harness"
	"rebound/core/scenario"
)

// Names of the built-in functions the server uses when a request offers
// them (the LLM arm offers wait and update_plan; rebound's MCP tool server
// adds submit_claim and trial_status).
const (
	fnWait   = "wait"
	fnPlan   = "update_plan"
	fnClaim  = "submit_claim"
	fnStatus = "trial_status"
)

// step is one tool call of the conversation and the answer it got.
type step struct {
	name   string // the function name called
	result string // the tool message's content; "" when none came yet
}

// answer is the assistant message the policy gives next.
func (s *Server) answer(req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
	sc, err := s.scenarioOf(req.Messages)
	if err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	fns := map[string]bool{}
	for _, t := range req.Tools {
		if t.Function != nil {
			fns[t.Function.Name] = true
		}
	}
	history := stepsOf(req.Messages)
	next, out, err := replay(s.opts.Policy, sc, s.tools[sc], fns, history)
	if err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if next != nil {
		return calls(len(history), *next), nil
	}
	claimed := false
	for _, h := range history {
		claimed = claimed || h.name == fnClaim
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	switch {
	case req.ResponseFormat != nil && req.ResponseFormat.Type == openai.ChatCompletionResponseFormatTypeJSONSchema:
		msg.Content = out.Claim
		if msg.Content == "" {
			msg.Content = "{}" // a policy that files no claim: unparseable as one
		}
	case fns[fnClaim] && !claimed && out.Claim != "":
		var args map[string]any
		if err := json.Unmarshal([]byte(out.Claim), &args); err != nil {
			return msg, fmt.Errorf("the %s policy's claim is not a JSON object: %v", s.opts.Policy, err)
		}
		return calls(len(history), call{name: fnClaim, args: args}), nil
	default:
		msg.Content = fmt.Sprintf("Done (policy %s). Claim: %s", s.opts.Policy, orNone(out.Claim))
	}
	return msg, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// scenarioOf finds the scenario whose goal the conversation's system and
// user messages state (the longest such goal).
func (s *Server) scenarioOf(msgs []openai.ChatCompletionMessage) (*scenario.Scenario, error) {
	var text strings.Builder
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleSystem || m.Role == openai.ChatMessageRoleUser || m.Role == "developer" {
			text.WriteString(m.Content)
			for _, p := range m.MultiContent {
				text.WriteString(p.Text)
			}
			text.WriteString("\n")
		}
	}
	var best *scenario.Scenario
	for _, sc := range s.opts.Scenarios {
		if sc.Goal != "" && strings.Contains(text.String(), sc.Goal) && (best == nil || len(sc.Goal) > len(best.Goal)) {
			best = sc
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no scenario's goal appears in the system or user messages (the server knows %d scenarios; start it with the plan or scenarios the agent runs)", len(s.opts.Scenarios))
	}
	return best, nil
}

// stepsOf lists the conversation's tool calls in order, each with the
// content of the tool message that answered it.
func stepsOf(msgs []openai.ChatCompletionMessage) []step {
	var out []step
	index := map[string]int{}
	for _, m := range msgs {
		switch m.Role {
		case openai.ChatMessageRoleAssistant:
			for _, tc := range m.ToolCalls {
				index[tc.ID] = len(out)
				out = append(out, step{name: tc.Function.Name})
			}
		case openai.ChatMessageRoleTool:
			if i, ok := index[m.ToolCallID]; ok {
				out[i].result = m.Content
				for _, p := range m.MultiContent {
					out[i].result += p.Text
				}
			}
		}
	}
	return out
}

// call is one function call the policy makes.
type call struct {
	name string
	args map[string]any
}

func calls(n int, c call) openai.ChatCompletionMessage {
	args, err := json.Marshal(c.args)
	if err != nil || c.args == nil {
		args = []byte("{}")
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
		ID: fmt.Sprintf("call_%d", n+1), Type: openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: c.name, Arguments: string(args)},
	}}}
}

// errNext unwinds the replayed agent at the call it makes next.
var errNext = errors.New("mockllm: next call")

// replay runs the policy against the conversation's results. It returns
// the next call the policy makes, or (nil, its outcome) when it is done.
func replay(policy string, sc *scenario.Scenario, tools []harness.Tool, fns map[string]bool, history []step) (next *call, out agent.Outcome, err error) {
	ag, err := agent.NewScripted(policy)
	if err != nil {
		return nil, out, err
	}
	env := &replayEnv{tools: tools, fns: fns, history: history}
	task := agent.Task{Goal: sc.Goal, Claim: sc.Claim.Fields, Budget: sc.Budget, RetryLimit: sc.EffectiveRetryLimit(), ReferencePlan: sc.Plan}
	defer func() {
		if r := recover(); r != nil {
			if r != errNext { // the sentinel itself is what take panics with
				panic(r)
			}
			next, out, err = env.next, agent.Outcome{}, nil
		}
	}()
	out, err = ag.Run(context.Background(), env, task)
	return nil, out, err
}

// replayEnv answers the replayed agent from the conversation: its i-th
// call gets the conversation's i-th tool result, and the first call past
// them is the answer (errNext unwinds the agent there).
type replayEnv struct {
	tools   []harness.Tool
	fns     map[string]bool
	history []step
	used    int
	nowMs   int64
	next    *call
}

func (e *replayEnv) Tools() []harness.Tool { return e.tools }
func (e *replayEnv) Now() int64            { return e.nowMs }

func (e *replayEnv) Call(_ context.Context, tool string, args map[string]any) harness.Result {
	name, err := llm.FunctionName(tool)
	if err != nil {
		name = tool
	}
	r := e.take(call{name: name, args: args})
	e.nowMs += elapsed(e.tools, tool, r)
	return r
}

// elapsed estimates the task time a call took, as the harness advances
// its clock: the tool's deadline for a timeout, 10 ms for a missing tool,
// its declared latency otherwise.
func elapsed(tools []harness.Tool, name string, r harness.Result) int64 {
	for _, t := range tools {
		if t.Name != name {
			continue
		}
		switch r.Code {
		case harness.CodeTimeout, harness.CodeTimeoutAfterSend, harness.CodeDeadlineExceeded:
			return t.Deadline()
		case harness.CodeToolUnavailable:
			return 10
		}
		return t.Latency()
	}
	return 10
}

func (e *replayEnv) Sleep(ms int64) {
	if ms <= 0 {
		return
	}
	if !e.fns[fnWait] {
		e.nowMs += ms
		return
	}
	r := e.take(call{name: fnWait, args: map[string]any{"ms": ms}})
	if now, ok := r.Data["now_ms"].(float64); ok {
		e.nowMs = int64(now)
	} else {
		e.nowMs += ms
	}
}

func (e *replayEnv) Replan(summary string) {
	if e.fns[fnPlan] {
		e.take(call{name: fnPlan, args: map[string]any{"summary": summary}})
	}
}

// take answers one call from the history, or unwinds with it as the next.
func (e *replayEnv) take(c call) harness.Result {
	if e.used >= len(e.history) || e.history[e.used].result == "" {
		e.next = &c
		panic(errNext)
	}
	h := e.history[e.used]
	e.used++
	return decodeResult(h.result)
}

// decodeResult reads a tool message as the harness's result: the JSON
// itself, or the first {"ok":...} object inside a wrapper (an MCP
// client's content list, an SDK's text).
func decodeResult(content string) harness.Result {
	if r, ok := resultOf([]byte(content)); ok {
		return r
	}
	var wrapped []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(content), &wrapped) == nil {
		for _, w := range wrapped {
			if r, ok := resultOf([]byte(w.Text)); ok {
				return r
			}
		}
	}
	if i := strings.Index(content, `{"ok"`); i >= 0 {
		dec := json.NewDecoder(bytes.NewReader([]byte(content[i:])))
		var raw json.RawMessage
		if dec.Decode(&raw) == nil {
			if r, ok := resultOf(raw); ok {
				return r
			}
		}
	}
	return harness.Failed("UNREADABLE", false, "the tool message is not a rebound result: %.200s", content)
}

func resultOf(b []byte) (harness.Result, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return harness.Result{}, false
	}
	if _, ok := probe["ok"]; !ok {
		return harness.Result{}, false
	}
	var r harness.Result
	if json.Unmarshal(b, &r) != nil {
		return harness.Result{}, false
	}
	return r, true
}
