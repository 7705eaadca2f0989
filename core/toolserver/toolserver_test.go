package toolserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/agent"
	"rebound/core/agent/llm"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/toolserver"
	"rebound/core/trial"
	"rebound/core/world"
)

// overMCP runs an agent written against agent.Env with its env replaced by
// a Go SDK MCP client session of the trial's own tool server, and submits
// the agent's claim through submit_claim: every call crosses the protocol.
type overMCP struct {
	inner agent.Agent
	// drive, when set, replaces inner: it gets the session directly.
	drive func(ctx context.Context, sess *mcp.ClientSession, run *toolserver.Running) error
	// bridged connects through toolserver.Bridge (what `rebound
	// mcp-stdio` runs) over an in-memory transport instead of HTTP.
	bridged bool
}

func (o overMCP) Name() string { return "mcp:" + o.inner.Name() }

func (o overMCP) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	srv, err := toolserver.New(env, task)
	if err != nil {
		return agent.Outcome{}, err
	}
	run, err := srv.Start()
	if err != nil {
		return agent.Outcome{}, err
	}
	defer run.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "rebound-test", Version: "1"}, nil)
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: run.MCPURL, DisableStandaloneSSE: true}
	if o.bridged {
		near, far := mcp.NewInMemoryTransports()
		bctx, stop := context.WithCancel(ctx)
		bridged := make(chan error, 1)
		go func() { bridged <- toolserver.Bridge(bctx, run.MCPURL, far) }()
		defer func() { stop(); <-bridged }()
		transport = near
	}
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return agent.Outcome{}, err
	}
	defer sess.Close()
	if o.drive != nil {
		if err := o.drive(ctx, sess, run); err != nil {
			return agent.Outcome{}, err
		}
	} else {
		cenv, err := toolserver.NewClientEnv(ctx, sess)
		if err != nil {
			return agent.Outcome{}, err
		}
		out, err := o.inner.Run(ctx, cenv, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		if out.Claim != "" {
			if r := cenv.SubmitClaim(ctx, out.Claim); !r.OK {
				return agent.Outcome{}, fmt.Errorf("submit_claim refused %s: %s", out.Claim, r.JSON())
			}
		}
		if err := cenv.Err(); err != nil {
			return agent.Outcome{}, err
		}
	}
	claim, _ := srv.Claim()
	return agent.Outcome{Claim: claim}, nil
}

func examples(t *testing.T) []*scenario.Scenario {
	t.Helper()
	files, err := filepath.Glob("../../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example scenarios: %v", err)
	}
	var out []*scenario.Scenario
	for _, f := range files {
		s, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, s)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The careful agent's calls, made over MCP with the official Go SDK client,
// give the same ledger, claim and verdicts as the built-in careful agent on
// every variant of every example scenario.
func TestCarefulOverMCPMatchesBuiltIn(t *testing.T) { carefulMatches(t, false) }

// The same through the stdio bridge: an agent that starts `rebound
// mcp-stdio` as its MCP server meets the same trial.
func TestCarefulThroughBridgeMatchesBuiltIn(t *testing.T) { carefulMatches(t, true) }

func carefulMatches(t *testing.T, bridged bool) {
	careful, err := agent.NewScripted("careful")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, seen := 0, 0
	for _, sc := range examples(t) {
		for _, v := range sc.Variants {
			if testing.Short() && n >= 20 {
				return
			}
			seen++
			if bridged && seen%4 != 1 {
				continue // the bridge forwards; a quarter of the variants prove it
			}
			spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "careful"}, Seed: 3}
			want, err := trial.Run(ctx, spec, careful)
			if err != nil {
				t.Fatal(err)
			}
			got, err := trial.Run(ctx, spec, overMCP{inner: careful, bridged: bridged})
			if err != nil {
				t.Fatalf("%s/%s over MCP: %v", sc.Name, v.Name, err)
			}
			name := sc.Name + "/" + v.Name
			if g, w := got.Outcome.Claim, want.Outcome.Claim; g != w {
				t.Errorf("%s: claim over MCP %s, built-in %s", name, g, w)
			}
			if g, w := mustJSON(t, got.Ledger), mustJSON(t, want.Ledger); g != w {
				t.Errorf("%s: ledger over MCP differs:\n got %s\nwant %s", name, g, w)
			}
			if g, w := mustJSON(t, got.Verdict), mustJSON(t, want.Verdict); g != w {
				t.Errorf("%s: verdict over MCP differs:\n got %s\nwant %s", name, g, w)
			}
			if got.EndMs != want.EndMs {
				t.Errorf("%s: simulated end %d ms over MCP, %d built-in", name, got.EndMs, want.EndMs)
			}
			n++
		}
	}
	if (!bridged && n < 30) || n < 8 {
		t.Fatalf("compared only %d variants", n)
	}
}

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadScenario(filepath.Join("../../examples/scenarios", name+".yaml"), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func variant(t *testing.T, sc *scenario.Scenario, name string) scenario.Variant {
	t.Helper()
	for _, v := range sc.Variants {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("%s has no variant %s", sc.Name, name)
	return scenario.Variant{}
}

func callText(t *testing.T, ctx context.Context, sess *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body); err != nil {
		t.Fatalf("%s: content is not JSON: %v", name, err)
	}
	return res, body
}

// What a client sees: tools with schemas, annotations and metadata; a
// fault as an MCP tool error carrying code, retryable, retry_after_ms and
// uncertain; wait on the simulated clock; submit_claim validated.
func TestMCPProtocolSurface(t *testing.T) {
	sc := load(t, "charge-502-twice")
	v := variant(t, sc, "502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	drive := func(ctx context.Context, sess *mcp.ClientSession, run *toolserver.Running) error {
		init := sess.InitializeResult()
		if !strings.Contains(init.Instructions, sc.Goal) {
			t.Errorf("instructions %q lack the goal", init.Instructions)
		}
		list, err := sess.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		byName := map[string]*mcp.Tool{}
		for _, tl := range list.Tools {
			byName[tl.Name] = tl
		}
		for _, want := range []string{"payments__charge", "payments__charge_status", "wait", "update_plan", "submit_claim"} {
			if byName[want] == nil {
				t.Fatalf("tools/list lacks %s (has %v)", want, list.Tools)
			}
		}
		charge := byName["payments__charge"]
		if charge.Title != "payments.charge" || charge.Annotations == nil || charge.Annotations.ReadOnlyHint {
			t.Errorf("payments__charge: title %q annotations %+v", charge.Title, charge.Annotations)
		}
		if status := byName["payments__charge_status"]; status.Annotations == nil || !status.Annotations.ReadOnlyHint {
			t.Errorf("charge_status is a read: annotations %+v", status.Annotations)
		}
		meta, _ := charge.Meta[toolserver.MetaKey].(map[string]any)
		if meta["effect"] != "conditional" || meta["idempotency_key_param"] != "idempotency_key" {
			t.Errorf("payments__charge metadata %v", meta)
		}
		schema, _ := charge.InputSchema.(map[string]any)
		if props, _ := schema["properties"].(map[string]any); props["order_id"] == nil {
			t.Errorf("payments__charge input schema %v lacks order_id", schema)
		}

		args := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
		res, body := callText(t, ctx, sess, "payments__charge", args)
		if !res.IsError {
			t.Fatalf("first charge: want a tool error, got %v", body)
		}
		for _, k := range []string{"code", "retryable", "retry_after_ms", "uncertain"} {
			if _, ok := body[k]; !ok {
				t.Errorf("error content lacks %s: %v", k, body)
			}
		}
		if body["code"] != "BAD_GATEWAY" || body["retryable"] != true || body["uncertain"] != false {
			t.Errorf("first charge: %v", body)
		}
		if sc, _ := res.StructuredContent.(map[string]any); sc["code"] != "BAD_GATEWAY" {
			t.Errorf("structured content %v", res.StructuredContent)
		}
		_, w1 := callText(t, ctx, sess, "wait", map[string]any{"ms": 0})
		_, w2 := callText(t, ctx, sess, "wait", map[string]any{"ms": 1500})
		t1 := w1["data"].(map[string]any)["now_ms"].(float64)
		t2 := w2["data"].(map[string]any)["now_ms"].(float64)
		if t2-t1 != 1500 {
			t.Errorf("wait(1500) moved the clock from %v to %v", t1, t2)
		}
		if res, body := callText(t, ctx, sess, "wait", map[string]any{"ms": -5}); !res.IsError || body["code"] != "INVALID_INPUT" {
			t.Errorf("wait(-5): %v", body)
		}
		callText(t, ctx, sess, "payments__charge", args)
		res, body = callText(t, ctx, sess, "payments__charge", args)
		if res.IsError || body["ok"] != true {
			t.Fatalf("third charge: %v", body)
		}
		// A claim that breaks the schema is refused and not recorded.
		if res, body := callText(t, ctx, sess, "submit_claim", map[string]any{"status": "done"}); !res.IsError || body["code"] != "INVALID_INPUT" {
			t.Errorf("bad claim accepted: %v", body)
		}
		if res, body := callText(t, ctx, sess, "submit_claim", map[string]any{"status": "completed", "charged": true, "surprise": 1}); !res.IsError {
			t.Errorf("claim with an undeclared field accepted: %v", body)
		}
		if res, body := callText(t, ctx, sess, "submit_claim", map[string]any{"status": "completed", "charged": true}); res.IsError {
			t.Errorf("good claim refused: %v", body)
		}
		return nil
	}
	res, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Outcome.Claim; got != `{"charged":true,"status":"completed"}` {
		t.Errorf("claim %s", got)
	}
	if n := len(res.Ledger.Attempts); n != 3 {
		t.Errorf("ledger has %d attempts, want 3 (wait and submit_claim are not tool calls)", n)
	}
	if len(res.Ledger.Commits) != 1 {
		t.Errorf("commits %+v", res.Ledger.Commits)
	}
	if r := res.Verdict.Metric("recovered"); r == nil || !*r {
		t.Errorf("recovered = %v; verdict %+v", r, res.Verdict)
	}
}

type nopAgent struct{}

func (nopAgent) Name() string { return "nop" }
func (nopAgent) Run(context.Context, agent.Env, agent.Task) (agent.Outcome, error) {
	return agent.Outcome{}, nil
}

// Plain HTTP: the same dispatcher, provider status codes, Retry-After, the
// four fields in every failure, either spelling of a tool name.
func TestPlainHTTP(t *testing.T) {
	sc := load(t, "refund-timeout-after-send")
	var v scenario.Variant
	for _, x := range sc.Variants {
		for _, f := range x.Faults {
			if f.Class == harness.TimeoutAfterSend {
				v = x
			}
		}
	}
	if v.Name == "" {
		t.Fatal("no timeout-after-send variant")
	}
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	careful, _ := agent.NewScripted("careful")
	want, err := trial.Run(context.Background(), spec, careful)
	if err != nil {
		t.Fatal(err)
	}
	// Replay the built-in careful agent's calls over HTTP, in order.
	drive := func(ctx context.Context, _ *mcp.ClientSession, run *toolserver.Running) error {
		// The URLs are capabilities: the same port without the prefix
		// reaches nothing.
		guessed := run.ToolsURL[:strings.Index(run.ToolsURL[len("http://"):], "/")+len("http://")] + "/tools"
		if resp, err := http.Get(guessed); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without the trial's prefix: %v %v", guessed, resp, err)
		} else {
			resp.Body.Close()
		}
		resp, err := http.Get(run.ToolsURL)
		if err != nil {
			return err
		}
		var listing struct {
			Goal  string `json:"goal"`
			Tools []toolserver.Listed
		}
		err = json.NewDecoder(resp.Body).Decode(&listing)
		resp.Body.Close()
		if err != nil || listing.Goal != sc.Goal || len(listing.Tools) != len(sc.Tools)+4 { // the four built-ins
			t.Errorf("listing %+v: %v", listing, err)
		}
		replans := func(at int) {
			for _, r := range want.Ledger.Replans {
				if r.AtCall == at {
					if code, _, body := post(t, run.ToolsURL+"/update_plan", mustJSON(t, map[string]any{"summary": r.Summary})); code != 200 {
						t.Errorf("update_plan: %d %s", code, body)
					}
				}
			}
		}
		for i, a := range want.Ledger.Attempts {
			replans(i)
			name := a.Tool
			if i%2 == 1 {
				name = strings.ReplaceAll(name, ".", "__") // either spelling
			}
			if i > 0 && want.Ledger.Attempts[i-1].AtMs < a.AtMs {
				gap := a.AtMs - want.Ledger.Attempts[i-1].DoneMs
				if gap > 0 {
					post(t, run.ToolsURL+"/wait", fmt.Sprintf(`{"ms":%d}`, gap))
				}
			}
			code, hdr, body := post(t, run.ToolsURL+"/"+name, mustJSON(t, a.Args))
			if code != toolserver.HTTPStatus(a.Result) {
				t.Errorf("call %d %s: status %d, want %d (%s)", a.Index, a.Tool, code, toolserver.HTTPStatus(a.Result), body)
			}
			if !a.Result.OK {
				var f map[string]any
				_ = json.Unmarshal([]byte(body), &f)
				for _, k := range []string{"code", "retryable", "retry_after_ms", "uncertain"} {
					if _, ok := f[k]; !ok {
						t.Errorf("call %d: body lacks %s: %s", a.Index, k, body)
					}
				}
				if f["uncertain"] != a.Result.Uncertain || f["code"] != a.Result.Code {
					t.Errorf("call %d: body %s, want %s", a.Index, body, a.Result.JSON())
				}
				if a.Result.RetryAfterMs > 0 && hdr.Get("Retry-After") == "" {
					t.Errorf("call %d: no Retry-After", a.Index)
				}
			}
		}
		replans(len(want.Ledger.Attempts))
		if code, _, body := post(t, run.ToolsURL+"/submit_claim", want.Outcome.Claim); code != 200 {
			t.Errorf("submit_claim: %d %s", code, body)
		}
		if code, _, body := post(t, run.ToolsURL+"/payments.refund", `[1,2]`); code != 400 || !strings.Contains(body, "INVALID_INPUT") {
			t.Errorf("array body: %d %s", code, body)
		}
		return nil
	}
	got, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got.Ledger), mustJSON(t, want.Ledger); g != w {
		t.Errorf("ledger over HTTP differs:\n got %s\nwant %s", g, w)
	}
	if g, w := mustJSON(t, got.Verdict), mustJSON(t, want.Verdict); g != w {
		t.Errorf("verdict over HTTP differs:\n got %s\nwant %s", g, w)
	}
}

func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// After the trial, the server answers TRIAL_OVER and records nothing.
func TestClosedServerRecordsNothing(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	var late *toolserver.Server
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		s.Close()
		late = s
		return agent.Outcome{}, nil
	})
	res, err := trial.Run(context.Background(), spec, ag)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ledger.Attempts) != 0 {
		t.Fatalf("ledger %+v", res.Ledger)
	}
	rec := httptestPost(late.Handler(), "/tools/payments.charge", `{}`)
	if rec.code != http.StatusConflict || !strings.Contains(rec.body, toolserver.CodeTrialOver) {
		t.Errorf("late call: %d %s", rec.code, rec.body)
	}
}

type agentFunc func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error)

func (agentFunc) Name() string { return "func" }
func (f agentFunc) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	return f(ctx, env, task)
}

type recorded struct {
	code int
	body string
}

func httptestPost(h http.Handler, path, body string) recorded {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return recorded{rec.Code, rec.Body.String()}
}

// haltingEnv panics on every call, the way a dispatcher halts a trial whose
// agent will not stop calling.
type haltingEnv struct{ agent.Env }

func (haltingEnv) Call(context.Context, string, map[string]any) harness.Result {
	panic("harness: trial halted: too many calls after the budget")
}

// A panic of the harness in a call is answered as a refusal, never crashes
// the server, and is signalled on Halted so the caller can stop the agent.
func TestHaltedTrialIsSignalled(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(haltingEnv{env}, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		select {
		case <-s.Halted():
			t.Fatal("halted before any call")
		default:
		}
		rec := httptestPost(s.Handler(), "/tools/payments__charge", `{"order_id":"A-4417"}`)
		if !strings.Contains(rec.body, harness.CodeBudgetExhausted) {
			t.Errorf("halted call answered %d %s", rec.code, rec.body)
		}
		select {
		case <-s.Halted():
		default:
			t.Error("Halted not closed after the harness stopped the trial")
		}
		if !strings.Contains(s.HaltCause(), "trial halted") {
			t.Errorf("halt cause %q", s.HaltCause())
		}
		return agent.Outcome{}, nil
	})
	if _, err := trial.Run(context.Background(), spec, ag); err != nil {
		t.Fatal(err)
	}
}

// A claim is bounded: one that fits the schema but not the size limit is
// refused and not recorded.
func TestClaimSizeIsBounded(t *testing.T) {
	sc := load(t, "customer-refund-ticket")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		huge := httptestPost(s.Handler(), "/tools/submit_claim", `{"status":"completed","ticket_id":"`+strings.Repeat("x", 70<<10)+`"}`)
		if huge.code != http.StatusBadRequest || !strings.Contains(huge.body, "at most 65536 are accepted") {
			t.Errorf("huge claim: %d %.200s", huge.code, huge.body)
		}
		if _, ok := s.Claim(); ok {
			t.Error("the huge claim was recorded")
		}
		if ok := httptestPost(s.Handler(), "/tools/submit_claim", `{"status":"completed","ticket_id":"T-1"}`); ok.code != http.StatusOK {
			t.Errorf("claim: %d %s", ok.code, ok.body)
		}
		claim, _ := s.Claim()
		return agent.Outcome{Claim: claim}, nil
	})
	res, err := trial.Run(context.Background(), spec, ag)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Claim != `{"status":"completed","ticket_id":"T-1"}` {
		t.Errorf("claim %s", res.Outcome.Claim)
	}
}

// wait is bounded: at most the deadline's remaining time plus
// llm.WaitBeyondDeadlineMs (llm.MaxWaitNoDeadlineMs without a deadline);
// a longer wait is INVALID_INPUT and the clock does not move.
func TestWaitIsBounded(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	deadline := sc.Budget.DeadlineMs
	if deadline <= 0 {
		t.Fatal("charge-502-twice has no deadline")
	}
	wait := func(h http.Handler, ms int64) (int, float64) {
		t.Helper()
		rec := httptestPost(h, "/tools/wait", fmt.Sprintf(`{"ms":%d}`, ms))
		var body struct {
			Code string `json:"code"`
			Data struct {
				NowMs float64 `json:"now_ms"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(rec.body), &body)
		if rec.code != http.StatusOK && body.Code != harness.CodeInvalidInput {
			t.Errorf("wait(%d): %d %s", ms, rec.code, rec.body)
		}
		return rec.code, body.Data.NowMs
	}
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		h := s.Handler()
		for _, ms := range []int64{1 << 53, math.MaxInt64 / 4, deadline + llm.WaitBeyondDeadlineMs + 1} {
			if code, _ := wait(h, ms); code != http.StatusBadRequest {
				t.Errorf("wait(%d) at 0 ms answered %d, want 400", ms, code)
			}
		}
		if env.Now() != 0 {
			t.Fatalf("refused waits moved the clock to %d", env.Now())
		}
		if code, now := wait(h, deadline+llm.WaitBeyondDeadlineMs); code != http.StatusOK || int64(now) != deadline+llm.WaitBeyondDeadlineMs {
			t.Errorf("the longest allowed wait: %d, now %v", code, now)
		}
		// Past the deadline, one more WaitBeyondDeadlineMs at most.
		if code, _ := wait(h, llm.WaitBeyondDeadlineMs+1); code != http.StatusBadRequest {
			t.Errorf("wait past the deadline answered %d", code)
		}
		if code, _ := wait(h, llm.WaitBeyondDeadlineMs); code != http.StatusOK {
			t.Errorf("wait of WaitBeyondDeadlineMs past the deadline answered %d", code)
		}

		// Without a deadline, one wait lasts at most MaxWaitNoDeadlineMs.
		open := task
		open.Budget.DeadlineMs = 0
		s2, err := toolserver.New(env, open)
		if err != nil {
			return agent.Outcome{}, err
		}
		h2 := s2.Handler()
		start := env.Now()
		if code, _ := wait(h2, llm.MaxWaitNoDeadlineMs+1); code != http.StatusBadRequest {
			t.Errorf("wait beyond %d ms without a deadline answered %d", llm.MaxWaitNoDeadlineMs, code)
		}
		if code, now := wait(h2, llm.MaxWaitNoDeadlineMs); code != http.StatusOK || int64(now) != start+llm.MaxWaitNoDeadlineMs {
			t.Errorf("wait of %d ms without a deadline: %d, now %v", llm.MaxWaitNoDeadlineMs, code, now)
		}
		return agent.Outcome{}, nil
	})
	if _, err := trial.Run(context.Background(), spec, ag); err != nil {
		t.Fatal(err)
	}
}

// The bound is in wait's description, over MCP and HTTP.
func TestWaitDescriptionStatesTheBound(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	drive := func(ctx context.Context, sess *mcp.ClientSession, _ *toolserver.Running) error {
		list, err := sess.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		for _, tl := range list.Tools {
			if tl.Name == toolserver.ToolWait {
				if want := fmt.Sprintf("at most %d ms past the task's %d ms deadline", llm.WaitBeyondDeadlineMs, sc.Budget.DeadlineMs); !strings.Contains(tl.Description, want) {
					t.Errorf("wait's description %q lacks %q", tl.Description, want)
				}
				return nil
			}
		}
		t.Error("no wait tool")
		return nil
	}
	if _, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive}); err != nil {
		t.Fatal(err)
	}
}

// request sends one request with the given Host (when not empty) and Origin
// (when not empty) and returns its status and body.
func request(t *testing.T, method, url, host, origin, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// guarded runs f against a started server (s.Start(), or start when given)
// of a trial of charge-502-twice whose ledger must stay empty.
func guarded(t *testing.T, f func(env agent.Env, run *toolserver.Running), start ...func(*toolserver.Server) (*toolserver.Running, error)) {
	t.Helper()
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		startIt := func(s *toolserver.Server) (*toolserver.Running, error) { return s.Start() }
		if len(start) > 0 {
			startIt = start[0]
		}
		run, err := startIt(s)
		if err != nil {
			return agent.Outcome{}, err
		}
		defer run.Close()
		f(env, run)
		return agent.Outcome{}, nil
	})
	res, err := trial.Run(context.Background(), spec, ag)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Ledger.Attempts); n != 0 {
		t.Errorf("refused requests reached the harness: %d attempts", n)
	}
}

// DNS-rebinding protection: a foreign Origin or a Host that is not the
// listener's own address is refused with 403 on MCP and plain HTTP alike,
// and reaches nothing; loopback origins, localhost:PORT and clients that
// send no Origin are served.
func TestForeignOriginAndHostRefused(t *testing.T) {
	guarded(t, func(env agent.Env, run *toolserver.Running) {
		addr := strings.TrimPrefix(run.MCPURL, "http://")
		addr = addr[:strings.Index(addr, "/")]
		_, port, _ := strings.Cut(addr, ":")
		wait := `{"ms":1000}`
		for _, c := range []struct{ name, host, origin string }{
			{"foreign origin", "", "http://evil.example"},
			{"foreign origin on the same port", "", "http://evil.example:" + port},
			{"https foreign origin", "", "https://attacker.test"},
			{"null origin", "", "null"},
			{"rebound host name", "evil.example:" + port, ""},
			{"rebound host name, loopback origin", "evil.example:" + port, "http://localhost:" + port},
			{"loopback host, other port", "127.0.0.1:1", ""},
			{"localhost, other port", "localhost:1", ""},
			{"no port", "127.0.0.1", ""},
			{"another loopback address", "127.0.0.2:" + port, ""},
		} {
			if code, body := request(t, http.MethodPost, run.ToolsURL+"/wait", c.host, c.origin, wait); code != http.StatusForbidden {
				t.Errorf("plain HTTP, %s: %d %s", c.name, code, body)
			}
			if code, body := request(t, http.MethodPost, run.MCPURL, c.host, c.origin, mcpInitialize); code != http.StatusForbidden {
				t.Errorf("MCP, %s: %d %.200s", c.name, code, body)
			}
		}
		if env.Now() != 0 {
			t.Errorf("a refused wait moved the clock to %d", env.Now())
		}
		for _, c := range []struct{ name, host, origin string }{
			{"no Origin", "", ""},
			{"localhost:PORT", "localhost:" + port, ""},
			{"LOCALHOST:PORT", "LOCALHOST:" + port, ""},
			{"loopback origin", "", "http://127.0.0.1:5173"},
			{"localhost origin", "localhost:" + port, "http://localhost:" + port},
			{"IPv6 loopback origin", "", "http://[::1]:8080"},
		} {
			if code, body := request(t, http.MethodPost, run.ToolsURL+"/wait", c.host, c.origin, `{"ms":0}`); code != http.StatusOK {
				t.Errorf("plain HTTP, %s: %d %s", c.name, code, body)
			}
			if code, body := request(t, http.MethodPost, run.MCPURL, c.host, c.origin, mcpInitialize); code != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
				t.Errorf("MCP, %s: %d %.200s", c.name, code, body)
			}
		}
	})
}

// A caller's listener: the URLs name it, Host must be its address (or an
// address AllowHosts adds), and a loopback Host of another port is refused.
func TestStartOnListenerAllowsItsOwnAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	guarded(t, func(env agent.Env, run *toolserver.Running) {
		if !strings.HasPrefix(run.MCPURL, "http://"+addr+"/") || !strings.HasPrefix(run.ToolsURL, "http://"+addr+"/") {
			t.Errorf("URLs %s %s do not name the listener %s", run.MCPURL, run.ToolsURL, addr)
		}
		for host, want := range map[string]int{
			"":                 http.StatusOK,
			"10.0.2.2:4711":    http.StatusOK, // added
			"10.0.2.2:4712":    http.StatusForbidden,
			"127.0.0.1:4711":   http.StatusForbidden,
			"attacker.example": http.StatusForbidden,
		} {
			if code, body := request(t, http.MethodPost, run.ToolsURL+"/wait", host, "", `{"ms":0}`); code != want {
				t.Errorf("Host %q: %d, want %d (%s)", host, code, want, body)
			}
			if code, _ := request(t, http.MethodPost, run.MCPURL, host, "", mcpInitialize); code != want {
				t.Errorf("MCP, Host %q: %d, want %d", host, code, want)
			}
		}
	}, func(s *toolserver.Server) (*toolserver.Running, error) {
		return s.Start(toolserver.OnListener(ln), toolserver.AllowHosts("10.0.2.2:4711"))
	})
	// Running.Close closed the caller's listener.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("the listener %s still accepts after Close", addr)
	}

	// A listener on every address is refused: no one Host names it.
	wide, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	defer wide.Close()
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	ag := agentFunc(func(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
		s, err := toolserver.New(env, task)
		if err != nil {
			return agent.Outcome{}, err
		}
		if run, err := s.Start(toolserver.OnListener(wide)); err == nil {
			run.Close()
			t.Error("Start served on 0.0.0.0")
		}
		return agent.Outcome{}, nil
	})
	if _, err := trial.Run(context.Background(), spec, ag); err != nil {
		t.Fatal(err)
	}
}

// stdioSession runs Bridge over a LineTransport on pipes, against a
// started server of a trial of charge-502-twice, and hands f the agent's
// end: send writes one line, next reads one answer.
func stdioSession(t *testing.T, maxLine int, f func(send func(string), next func() map[string]any)) {
	t.Helper()
	guarded(t, func(env agent.Env, run *toolserver.Running) {
		// OS pipes, buffered as stdin and stdout are.
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer inR.Close()
		defer outR.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		bridged := make(chan error, 1)
		go func() {
			bridged <- toolserver.Bridge(ctx, run.MCPURL, &toolserver.LineTransport{Reader: inR, Writer: outW, MaxLineLength: maxLine})
			outW.Close()
		}()
		lines := bufio.NewScanner(outR)
		lines.Buffer(nil, 1<<20)
		send := func(line string) {
			t.Helper()
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatalf("writing %.60q: %v", line, err)
			}
		}
		next := func() map[string]any {
			t.Helper()
			if !lines.Scan() {
				t.Fatalf("the bridge ended: %v", lines.Err())
			}
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("answer %q is not JSON: %v", lines.Text(), err)
			}
			return m
		}
		f(send, next)
		inW.Close() // the peer hangs up: Bridge returns
		if err := <-bridged; err != nil && !errors.Is(err, io.EOF) {
			t.Logf("Bridge: %v", err)
		}
	})
}

func rpcError(m map[string]any) (float64, bool) {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, false
	}
	code, _ := e["code"].(float64)
	return code, true
}

// `rebound mcp-stdio` answers a bad frame with a JSON-RPC error (id null)
// and keeps serving: the frames after it are answered as usual.
func TestStdioSurvivesBadFrames(t *testing.T) {
	stdioSession(t, 0, func(send func(string), next func() map[string]any) {
		send("not json")
		if m := next(); m["id"] != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("answer to a non-JSON line: %v", m)
		} else if code, ok := rpcError(m); !ok || code != -32700 {
			t.Errorf("answer to a non-JSON line: %v, want a -32700 parse error", m)
		}
		send(mcpInitialize)
		if m := next(); m["id"] != float64(1) || m["result"] == nil {
			t.Fatalf("initialize after a bad frame: %v", m)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, bad := range []struct {
			line string
			code float64
		}{
			{`{"jsonrpc":"2.0","id":7,"method":"tools/list"`, -32700}, // truncated
			{`{"a":1} {"b":2}`, -32700},
			{`42`, -32600},
			{`"tools/list"`, -32600},
			{`{"id":3,"method":"tools/list"}`, -32600}, // no jsonrpc
			{`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, -32600},
			{`{"jsonrpc":"2.0"}`, -32600},
			{`[]`, -32600},
			{`[{"jsonrpc":"2.0","id":4,"method":"tools/list"},17]`, -32600},
			{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600}, // an id must be a string or a number
			// The SDK's transport would end the session on a batch that
			// repeats a request id.
			{`[{"jsonrpc":"2.0","id":9,"method":"tools/list"},{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, -32600},
		} {
			send(bad.line)
			m := next()
			if code, ok := rpcError(m); !ok || code != bad.code || m["id"] != nil {
				t.Errorf("answer to %s: %v, want error %v with id null", bad.line, m, bad.code)
			}
		}
		send("")
		send("   ")
		send(`{"jsonrpc":"2.0","id":99,"result":{}}`) // a response to nothing: ignored
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		m := next()
		res, _ := m["result"].(map[string]any)
		tools, _ := res["tools"].([]any)
		if m["id"] != float64(2) || len(tools) < 5 {
			t.Fatalf("tools/list after bad frames: %v", m)
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{"ms":250}}}`)
		if m := next(); m["id"] != float64(3) || !strings.Contains(fmt.Sprint(m["result"]), "now_ms") {
			t.Errorf("tools/call wait after bad frames: %v", m)
		}
	})
}

// A frame longer than MaxLineLength is dropped with a parse error, and the
// next frame is served.
func TestStdioLongFrameDropped(t *testing.T) {
	stdioSession(t, 4096, func(send func(string), next func() map[string]any) {
		send(mcpInitialize)
		if m := next(); m["id"] != float64(1) {
			t.Fatalf("initialize: %v", m)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"` + strings.Repeat("y", 10000) + `"}}`)
		if m := next(); m["id"] != nil {
			t.Errorf("answer to a long frame: %v", m)
		} else if code, ok := rpcError(m); !ok || code != -32700 {
			t.Errorf("answer to a long frame: %v", m)
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		if m := next(); m["id"] != float64(3) || m["result"] == nil {
			t.Errorf("tools/list after a long frame: %v", m)
		}
	})
}
