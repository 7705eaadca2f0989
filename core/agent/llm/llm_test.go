package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/internal/endpoint"
)

// shop is a tiny world: read an order, charge it (conditional write with an
// idempotency key, reconciled by charge_status), and an admin tool the
// agent lacks the permission for.
type shop struct {
	amount  int64
	charges int
	keys    map[string]string
}

func (s *shop) Tools() []harness.Tool {
	return []harness.Tool{
		{Name: "shop.get_order", Description: "Read an order.", Effect: harness.EffectRead, Permission: "read",
			Params: []harness.Param{{Name: "order_id", Type: "string", Required: true}}},
		{Name: "shop.charge", Description: "Charge an order.", Effect: harness.EffectConditional, Permission: "pay",
			IdempotencyKeyParam: "idempotency_key", ReconciledBy: "shop.charge_status",
			Params: []harness.Param{
				{Name: "order_id", Type: "string", Required: true},
				{Name: "amount_cents", Type: "integer", Required: true, Description: "must equal the order amount"},
				{Name: "idempotency_key", Type: "string"},
			},
			Errors: []harness.DocumentedError{{Code: harness.CodeBadGateway, Retryable: true}}},
		{Name: "shop.charge_status", Description: "Look up a charge.", Effect: harness.EffectRead, Permission: "read",
			Params: []harness.Param{{Name: "idempotency_key", Type: "string", Required: true}}},
		{Name: "shop.admin_override", Description: "Mark an order paid.", Effect: harness.EffectWrite, Permission: "admin",
			Params: []harness.Param{{Name: "order_id", Type: "string", Required: true}, {Name: "mode", Type: "string", Enum: []string{"soft", "hard"}}}},
	}
}

func (s *shop) Invoke(tool string, args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	switch tool {
	case "shop.get_order":
		return map[string]any{"order_id": args["order_id"], "amount_cents": s.amount, "paid": s.charges > 0}, nil
	case "shop.charge":
		key, _ := args["idempotency_key"].(string)
		if id, ok := s.keys[key]; ok && key != "" {
			return map[string]any{"charge_id": id, "status": "captured"}, nil
		}
		if amt, _ := args["amount_cents"].(float64); int64(amt) != s.amount {
			return nil, harness.Errorf(harness.CodeInvalidInput, "amount_cents must be %d", s.amount)
		}
		s.charges++
		id := fmt.Sprintf("ch_%d", s.charges)
		if key != "" {
			s.keys[key] = id
		}
		fx.Commit("charge", fmt.Sprintf("charge:%v", args["order_id"]), id)
		return map[string]any{"charge_id": id, "status": "captured"}, nil
	case "shop.charge_status":
		key, _ := args["idempotency_key"].(string)
		if id, ok := s.keys[key]; ok {
			return map[string]any{"charge_id": id, "status": "captured"}, nil
		}
		return map[string]any{"status": "not_found"}, nil
	}
	return nil, harness.Errorf(harness.CodeToolUnavailable, "no %s", tool)
}

func (s *shop) State() map[string]any { return map[string]any{"charges": s.charges} }

// testEnv is the trial runner's env over a dispatcher (see trial.env).
type testEnv struct{ d *harness.Dispatcher }

func (e testEnv) Tools() []harness.Tool { return e.d.Tools() }
func (e testEnv) Call(_ context.Context, tool string, args map[string]any) harness.Result {
	return e.d.Call(tool, args)
}
func (e testEnv) Sleep(ms int64)        { e.d.Clock().Advance(ms) }
func (e testEnv) Now() int64            { return e.d.Clock().Now() }
func (e testEnv) Replan(summary string) { e.d.Replan(summary) }

var _ agent.Env = testEnv{}

func newEnv(tb testing.TB, faults ...harness.Fault) (testEnv, *shop) {
	tb.Helper()
	w := &shop{amount: 1200, keys: map[string]string{}}
	sched, err := harness.NewSchedule(faults, 1)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := harness.NewDispatcher(harness.Config{
		World: w, Offered: []string{"shop.get_order", "shop.charge", "shop.charge_status", "shop.admin_override"},
		Permissions: []string{"read", "pay"}, Schedule: sched, Budget: harness.Budget{ToolCalls: 10, DeadlineMs: 60000, Replans: 3},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return testEnv{d}, w
}

var testTask = agent.Task{
	Goal: "Charge order o1 for its full amount.",
	Claim: []scenario.ClaimField{
		{Name: "charged", Type: "boolean", Description: "the order was charged", Truth: "charges", Goal: true},
		{Name: "charge_id", Type: "string", Description: "id of the charge"},
	},
	Budget:        harness.Budget{ToolCalls: 10, DeadlineMs: 60000, Replans: 3},
	RetryLimit:    3,
	ReferencePlan: []scenario.Step{{ID: "SECRET_PLAN_STEP", Tool: "shop.charge", Args: map[string]any{"order_id": "o1"}}},
}

// sleeps records backoff and rate-limit waits instead of sleeping.
type sleeps = llmtest.Sleeps

const testKeyEnv = "REBOUND_LLMTEST_KEY"

func newAgent(t testing.TB, srv *llmtest.Server, edit func(*Config), opts ...Option) (*Agent, *sleeps) {
	t.Helper()
	temp := 0.0
	cfg := Config{Settings: endpoint.Settings{BaseURL: srv.BaseURL(), APIKeyEnv: testKeyEnv, Model: "test-model", Temperature: &temp, MaxTurns: 8}, Prompt: "You are a careful operations agent.", PromptName: "careful-v1", Prices: Prices{InputPerMTok: 2.5, OutputPerMTok: 10}, MaxRetries: 3}
	if edit != nil {
		edit(&cfg)
	}
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv(testKeyEnv, "sk-test-SUPERSECRET-0123456789")
	}
	s := &sleeps{}
	a, err := New(cfg, append([]Option{WithSleep(s.Sleep)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return a, s
}

func toolMessages(req openai.ChatCompletionRequest) []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m)
		}
	}
	return out
}

func lastMessage(req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	return req.Messages[len(req.Messages)-1]
}

const goodClaim = `{"status":"completed","blocked_on":null,"charged":true,"charge_id":"ch_1"}`

// chargeScript: read the order, charge (502), wait, charge again, stop,
// claim.
func chargeScript() []llmtest.Reply {
	charge := map[string]any{"order_id": "o1", "amount_cents": 1200, "idempotency_key": "k-o1"}
	return []llmtest.Reply{
		llmtest.Calls(llmtest.Call("call_1", "shop__get_order", map[string]any{"order_id": "o1"})).WithUsage(300, 20),
		llmtest.Calls(llmtest.Call("call_2", "shop__charge", charge)).WithUsage(350, 30),
		llmtest.Reply{Content: "The charge hit a 502; waiting before retrying.", ToolCalls: []llmtest.ToolCall{llmtest.Call("call_3", "wait", map[string]any{"ms": 500})}}.WithUsage(400, 25),
		llmtest.Calls(llmtest.Call("call_4", "shop__charge", charge)).WithUsage(450, 30),
		llmtest.Text("Order o1 is charged (ch_1).").WithUsage(500, 12),
		llmtest.Text(goodClaim).WithUsage(520, 28),
	}
}

var badGatewayOnFirstCharge = harness.Fault{Class: harness.Transient, Code: harness.CodeBadGateway, Tool: "shop.charge", Attempts: []int{1}}

func TestFullLoopRetryAfterBadGateway(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(chargeScript()...)
	a, sl := newAgent(t, srv, nil)
	env, w := newEnv(t, badGatewayOnFirstCharge)

	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Claim != goodClaim {
		t.Errorf("claim = %q, want it verbatim", out.Claim)
	}
	if out.Answer != "Order o1 is charged (ch_1)." {
		t.Errorf("answer = %q", out.Answer)
	}
	if len(sl.All()) != 0 {
		t.Errorf("provider waits %v on a healthy provider", sl.All())
	}

	l := env.d.Ledger()
	if len(l.Attempts) != 3 || l.Attempts[0].Tool != "shop.get_order" || l.Attempts[1].Tool != "shop.charge" || l.Attempts[2].Tool != "shop.charge" {
		t.Fatalf("ledger attempts = %+v", l.Attempts)
	}
	if l.Attempts[1].Result.Code != harness.CodeBadGateway || !l.Attempts[2].Result.OK || w.charges != 1 || len(l.Commits) != 1 {
		t.Fatalf("charge attempts: %+v / %+v, commits %d", l.Attempts[1].Result, l.Attempts[2].Result, len(l.Commits))
	}
	if gap := l.Attempts[2].AtMs - l.Attempts[1].DoneMs; gap < 500 {
		t.Errorf("retry %dms after the failure; the wait built-in should have advanced the clock 500ms", gap)
	}
	if a1 := l.Attempts[1].Args; a1["amount_cents"] != float64(1200) || a1["idempotency_key"] != "k-o1" {
		t.Errorf("args reached the env as %#v", a1)
	}

	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	first := reqs[0]
	if first.Path != "/v1/chat/completions" || first.Header.Get("Authorization") != "Bearer sk-test-SUPERSECRET-0123456789" {
		t.Errorf("path %s, auth %q", first.Path, first.Header.Get("Authorization"))
	}
	var offered []string
	for _, tl := range first.Chat.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if got := strings.Join(offered, ","); got != "shop__admin_override,shop__charge,shop__charge_status,shop__get_order,wait,update_plan" {
		t.Errorf("tools offered = %s", got)
	}
	if first.Chat.ToolChoice != "auto" || first.Chat.ResponseFormat != nil {
		t.Errorf("turn request: tool_choice %v, response_format %+v", first.Chat.ToolChoice, first.Chat.ResponseFormat)
	}
	if !strings.Contains(string(first.Body), `"temperature":1e-45`) {
		t.Errorf("temperature 0 must be sent (as 1e-45), body: %.300s", first.Body)
	}
	sys, user := first.Chat.Messages[0], first.Chat.Messages[1]
	for _, want := range []string{"You are a careful operations agent.", "shop__charge is the tool shop.charge", "at most 10 tool calls", "deadline: 60000 ms", "charged (boolean or null)"} {
		if !strings.Contains(sys.Content, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys.Content)
		}
	}
	if sys.Role != "system" || user.Role != "user" || user.Content != testTask.Goal {
		t.Errorf("first messages: %+v / %+v", sys, user)
	}
	for i, r := range reqs {
		if strings.Contains(string(r.Body), "SECRET_PLAN_STEP") {
			t.Errorf("request %d shows the reference plan", i+1)
		}
	}
	if params := `"parameters":{"type":"object","properties":{"order_id":{"type":"string"},"amount_cents":{"type":"integer","description":"must equal the order amount"},"idempotency_key":{"type":"string"}},"required":["order_id","amount_cents"],"additionalProperties":false}`; !strings.Contains(string(first.Body), params) {
		t.Errorf("shop__charge parameters: body lacks %s", params)
	}
	if d := first.Chat.Tools[1].Function.Description; !strings.Contains(d, `idempotent only when the same "idempotency_key"`) || !strings.Contains(d, "shop__charge_status reports") || !strings.Contains(d, "BAD_GATEWAY (retryable)") {
		t.Errorf("shop__charge description = %q", d)
	}

	// The 502 went back as the harness's normalized result, verbatim.
	third := reqs[2].Chat
	tm := lastMessage(third)
	if tm.Role != "tool" || tm.ToolCallID != "call_2" || tm.Content != l.Attempts[1].Result.JSON() {
		t.Errorf("tool message after the 502 = %+v, want %s", tm, l.Attempts[1].Result.JSON())
	}
	if asst := third.Messages[len(third.Messages)-2]; asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_2" || asst.ToolCalls[0].Function.Name != "shop__charge" {
		t.Errorf("assistant tool call not echoed: %+v", asst)
	}
	if wt := lastMessage(reqs[3].Chat); wt.ToolCallID != "call_3" || !strings.Contains(wt.Content, `"waited_ms":500`) {
		t.Errorf("wait result = %+v", wt)
	}

	claimReq := reqs[5].Chat
	if claimReq.ToolChoice != "none" || lastMessage(claimReq).Role != "user" || lastMessage(claimReq).Content != claimRequest {
		t.Errorf("claim turn: tool_choice %v, last message %+v", claimReq.ToolChoice, lastMessage(claimReq))
	}
	rf := claimReq.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || !rf.JSONSchema.Strict || rf.JSONSchema.Name != "claim" {
		t.Fatalf("claim response_format = %+v", rf)
	}
	schema, _ := json.Marshal(rf.JSONSchema.Schema)
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Additional bool                       `json:"additionalProperties"`
	}
	if err := json.Unmarshal(schema, &sch); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sch.Required, ",") != "status,blocked_on,charged,charge_id" || sch.Additional || len(sch.Properties) != 4 {
		t.Errorf("claim schema = %s", schema)
	}
	if !strings.Contains(string(reqs[5].Body), `"charged":{"type":["boolean","null"],"description":"the order was charged"}`) ||
		!strings.Contains(string(sch.Properties["blocked_on"]), `"enum":["shop.admin_override","shop.charge","shop.charge_status","shop.get_order"]`) {
		t.Errorf("claim schema properties = %s", schema)
	}

	// Tokens and cost from usage and the price table.
	prompt, completion := int64(300+350+400+450+500+520), int64(20+30+25+30+12+28)
	if out.Tokens != prompt+completion {
		t.Errorf("tokens = %d, want %d", out.Tokens, prompt+completion)
	}
	if want := (float64(prompt)*2.5 + float64(completion)*10) / 1e6; fmt.Sprintf("%.9f", out.Cost) != fmt.Sprintf("%.9f", want) {
		t.Errorf("cost = %v, want %v", out.Cost, want)
	}
	rec := a.Recording()
	if rec == nil || len(rec.Steps) != 6 || rec.PromptTokens != prompt || rec.CompletionTokens != completion || rec.Steps[5].Request.Kind != "claim" {
		t.Fatalf("recording = %+v", rec)
	}
}

func TestParallelToolCallsExecutedInOrder(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(
			llmtest.Call("call_a", "shop__get_order", map[string]any{"order_id": "o1"}),
			llmtest.Call("call_b", "shop__charge_status", map[string]any{"idempotency_key": "k"}),
			llmtest.Call("call_c", "update_plan", map[string]any{"summary": "read, then charge"}),
		),
		llmtest.Text("Nothing to do."),
		llmtest.Text(`{"status":"blocked","blocked_on":"shop.charge","charged":null,"charge_id":null}`),
	)
	off := false
	a, _ := newAgent(t, srv, func(c *Config) { c.ParallelToolCalls = &off })
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[0].Body), `"parallel_tool_calls":false`) {
		t.Errorf("parallel_tool_calls not forwarded: %.200s", reqs[0].Body)
	}
	tms := toolMessages(reqs[1].Chat)
	if len(tms) != 3 || tms[0].ToolCallID != "call_a" || tms[1].ToolCallID != "call_b" || tms[2].ToolCallID != "call_c" {
		t.Fatalf("tool messages = %+v", tms)
	}
	l := env.d.Ledger()
	if len(l.Attempts) != 2 || l.Attempts[0].Tool != "shop.get_order" || l.Attempts[1].Tool != "shop.charge_status" {
		t.Fatalf("ledger = %+v", l.Attempts)
	}
	if tms[0].Content != l.Attempts[0].Result.JSON() || tms[1].Content != l.Attempts[1].Result.JSON() {
		t.Errorf("tool messages do not carry the harness results")
	}
	if len(l.Replans) != 1 || l.Replans[0].Summary != "read, then charge" || !strings.Contains(tms[2].Content, `"plan_updates":1`) {
		t.Errorf("replans = %+v, message %s", l.Replans, tms[2].Content)
	}
}

// An unknown function reaches the harness under its mapped name; the
// harness answers TOOL_UNAVAILABLE and records the attempt.
func TestUnknownToolRecordedByHarness(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(llmtest.Call("call_1", "shop__refund", map[string]any{"order_id": "o1"})),
		llmtest.Text("I cannot refund."),
		llmtest.Text(`{"status":"blocked","blocked_on":"shop.charge","charged":false,"charge_id":null}`),
	)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	l := env.d.Ledger()
	if len(l.Attempts) != 1 || l.Attempts[0].Tool != "shop.refund" || l.Attempts[0].Result.Code != harness.CodeToolUnavailable {
		t.Fatalf("ledger = %+v", l.Attempts)
	}
	if tm := lastMessage(srv.Requests()[1].Chat); tm.Content != l.Attempts[0].Result.JSON() {
		t.Errorf("tool message = %s", tm.Content)
	}
}

// Arguments that are not a JSON object never reach the env: the model gets
// an INVALID_INPUT result and the ledger stays empty. Empty arguments are
// no arguments.
func TestMalformedArgumentsNotSent(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Calls(
			llmtest.Call("call_1", "shop__charge", `{"order_id": "o1", "amount_cents": 12`),
			llmtest.Call("call_2", "shop__get_order", `["o1"]`),
			llmtest.Call("call_3", "wait", `{"ms": "soon"}`),
			llmtest.Call("call_4", "shop__get_order", ``),
		),
		llmtest.Text("done"),
		llmtest.Text(`{"status":"blocked","blocked_on":"shop.charge","charged":false,"charge_id":null}`),
	)
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	if _, err := a.Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	tms := toolMessages(srv.Requests()[1].Chat)
	if len(tms) != 4 {
		t.Fatalf("tool messages = %+v", tms)
	}
	for i, tm := range tms[:3] {
		var r harness.Result
		if err := json.Unmarshal([]byte(tm.Content), &r); err != nil || r.OK || r.Code != harness.CodeInvalidInput || r.Retryable {
			t.Errorf("call %d: %s", i+1, tm.Content)
		}
	}
	l := env.d.Ledger()
	if len(l.Attempts) != 1 || l.Attempts[0].Tool != "shop.get_order" || len(l.Attempts[0].Args) != 0 {
		t.Fatalf("only the empty-argument call should reach the env: %+v", l.Attempts)
	}
	if env.Now() != l.Attempts[0].DoneMs {
		t.Errorf("the invalid wait advanced the clock")
	}
}

// MaxTurns spent while the model still calls tools: no claim, no claim
// request.
func TestMaxTurnsExhaustedNoClaim(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(
		llmtest.Reply{Content: "Checking.", ToolCalls: []llmtest.ToolCall{llmtest.Call("c1", "shop__get_order", map[string]any{"order_id": "o1"})}}.WithUsage(10, 1),
		llmtest.Calls(llmtest.Call("c2", "shop__get_order", map[string]any{"order_id": "o1"})).WithUsage(10, 1),
	)
	a, _ := newAgent(t, srv, func(c *Config) { c.MaxTurns = 2 })
	env, _ := newEnv(t)
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Claim != "" || out.Answer != "Checking." || out.Tokens != 22 {
		t.Errorf("outcome = %+v", out)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (no claim turn)", n)
	}
}

// A malformed claim is returned as the model wrote it.
func TestClaimReturnedVerbatim(t *testing.T) {
	srv := llmtest.New(t)
	raw := "Sure! {\"status\": \"completed\"}\n"
	srv.Push(llmtest.Text("done"), llmtest.Text(raw))
	a, _ := newAgent(t, srv, nil)
	env, _ := newEnv(t)
	out, err := a.Run(context.Background(), env, testTask)
	if err != nil || out.Claim != raw {
		t.Fatalf("claim %q, err %v", out.Claim, err)
	}
}

func TestToolCatalogThatCannotBeOffered(t *testing.T) {
	srv := llmtest.New(t)
	a, _ := newAgent(t, srv, nil)
	_, err := a.Run(context.Background(), fixedTools{{Name: "a_.b", Effect: harness.EffectRead}, {Name: "a._b", Effect: harness.EffectRead}}, testTask)
	if err == nil || !strings.Contains(err.Error(), "an underscore next to a dot") {
		t.Fatalf("err = %v", err)
	}
	_, err = a.Run(context.Background(), fixedTools{{Name: "wait", Effect: harness.EffectRead}}, testTask)
	if err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Fatalf("err = %v", err)
	}
}

type fixedTools []harness.Tool

func (f fixedTools) Tools() []harness.Tool { return f }
func (fixedTools) Call(context.Context, string, map[string]any) harness.Result {
	return harness.Result{}
}
func (fixedTools) Sleep(int64)   {}
func (fixedTools) Now() int64    { return 0 }
func (fixedTools) Replan(string) {}
