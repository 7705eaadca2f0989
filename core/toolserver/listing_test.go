package toolserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/scenario"
	"rebound/core/toolserver"
	"rebound/core/trial"
)

// One rule for names, over MCP and plain HTTP alike: the dotted spelling of
// an offered tool is that tool, and a name that is not offered is a call
// to a missing tool, recorded (TOOL_UNAVAILABLE, a call of the budget), as
// for the LLM agent (through the stdio bridge too). The HTTP listing uses
// MCP's field names.
func TestUnlistedNamesAndListingAlikeOverMCPAndHTTP(t *testing.T) {
	for _, bridged := range []bool{false, true} {
		unlistedNames(t, bridged)
	}
}

func unlistedNames(t *testing.T, bridged bool) {
	sc := load(t, "charge-502-twice")
	v := variant(t, sc, "502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	charge := map[string]any{"order_id": "A-4417", "amount_cents": 15000, "idempotency_key": "charge-A-4417"}
	drive := func(ctx context.Context, sess *mcp.ClientSession, run *toolserver.Running) error {
		res, body := callText(t, ctx, sess, "payments.charge", charge) // dotted over MCP: the tool (502)
		if !res.IsError || body["code"] != "BAD_GATEWAY" {
			t.Errorf("payments.charge over MCP: %v", body)
		}
		res, body = callText(t, ctx, sess, "warehouse__runSql", map[string]any{"sql": "select 1"})
		if !res.IsError || body["code"] != "TOOL_UNAVAILABLE" {
			t.Errorf("an unknown tool over MCP: want a recorded TOOL_UNAVAILABLE tool error, got %v", body)
		}
		if code, _, b := post(t, run.ToolsURL+"/warehouse__runSql", `{"sql":"select 1"}`); code != http.StatusNotFound || !strings.Contains(b, "TOOL_UNAVAILABLE") {
			t.Errorf("an unknown tool over HTTP: %d %s", code, b)
		}
		resp, err := http.Get(run.ToolsURL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var listing struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&listing); err != nil {
			return err
		}
		for _, tl := range listing.Tools {
			var name string
			_ = json.Unmarshal(tl["name"], &name)
			if tl["inputSchema"] == nil || tl["input_schema"] != nil || tl["rebound/tool"] != nil {
				t.Errorf("listed %s: fields %v, want MCP's (inputSchema, _meta)", name, keys(tl))
			}
			if name == "payments__charge" && (tl["_meta"] == nil || !strings.Contains(string(tl["_meta"]), `"rebound/tool":{`) || tl["annotations"] == nil) {
				t.Errorf("listed payments__charge: %v", keys(tl))
			}
		}
		return nil
	}
	res, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive, bridged: bridged})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, a := range res.Ledger.Attempts {
		tools = append(tools, a.Tool)
	}
	if got := strings.Join(tools, " "); got != "payments.charge warehouse.runSql warehouse.runSql" {
		t.Errorf("bridged=%v: ledger %q: every call recorded, under its dotted name", bridged, got)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A streamable HTTP request without a session (and that is no initialize)
// is refused with a standard JSON-RPC error code.
func TestRequestWithoutSessionGetsAStandardCode(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: variant(t, sc, "502-twice"), Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	drive := func(ctx context.Context, _ *mcp.ClientSession, run *toolserver.Running) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, run.MCPURL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			ID    any `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &body); err != nil || body.Error == nil {
			t.Fatalf("status %d body %q: not a JSON-RPC error (%v)", resp.StatusCode, raw, err)
		}
		if c := body.Error.Code; c != -32600 || resp.StatusCode != http.StatusBadRequest || string(mustJSON(t, body.ID)) != "7" {
			t.Errorf("status %d, id %v, error code %d (%s): want 400, id 7, -32600", resp.StatusCode, body.ID, c, body.Error.Message)
		}
		return nil
	}
	if _, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive}); err != nil {
		t.Fatal(err)
	}
}

// The server negotiates every protocol version the Go SDK serves with the
// initialize handshake (2024-11-05 to 2025-11-25): a client asking for one
// gets it.
func TestProtocolVersionsNegotiated(t *testing.T) {
	sc := load(t, "charge-502-twice")
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: variant(t, sc, "502-twice"), Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
	want := []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
	drive := func(ctx context.Context, _ *mcp.ClientSession, run *toolserver.Running) error {
		for _, v := range want {
			init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, run.MCPURL, strings.NewReader(init))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text := string(raw)
			if i := strings.Index(text, "data: "); i >= 0 { // an event stream
				text, _, _ = strings.Cut(text[i+len("data: "):], "\n")
			}
			var body struct {
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(text), &body); err != nil || body.Result.ProtocolVersion != v {
				t.Errorf("initialize %s: %d %q (%v)", v, resp.StatusCode, raw, err)
			}
		}
		return nil
	}
	if _, err := trial.Run(context.Background(), spec, overMCP{inner: nopAgent{}, drive: drive}); err != nil {
		t.Fatal(err)
	}
}
