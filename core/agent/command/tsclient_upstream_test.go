package command_test

import (
	"strings"
	"testing"

	"rebound/internal/devstack/devstacktest"
)

// A command arm on your own tools: the official TypeScript MCP SDK client,
// sealed, calls the official filesystem server's tools (sealed too) through
// the trial's tool server. The lost write answer reaches the client as an
// uncertain TIMEOUT_AFTER_SEND; its identical resend of the idempotent
// write is safe; the verdict is a recovery.
func TestTypeScriptSDKClientOnAnUpstream(t *testing.T) {
	devstacktest.ReferenceServers(t)
	write := map[string]any{"path": "config.txt", "content": "mode=safe\nregion=eu\n"}
	res, listing, steps := runTSClientOn(t, "../../../examples/upstreams/scenarios/fs-config-write.yaml", "write-answer-lost", []map[string]any{
		call("read_text_file", map[string]any{"path": "config.txt"}),
		call("write_file", write),
		call("write_file", write),
		call("read_text_file", map[string]any{"path": "config.txt"}),
		call("submit_claim", map[string]any{"status": "completed", "before": "mode=old\nregion=eu\n", "content": "mode=safe\nregion=eu\n"}),
	})
	names := map[string]bool{}
	for _, tl := range listing["tools"].([]any) {
		names[tl.(map[string]any)["name"].(string)] = true
	}
	if !names["read_text_file"] || !names["write_file"] {
		t.Fatalf("the upstream's tools as listed to the client: %v", listing["tools"])
	}
	if steps[0].IsError || !strings.Contains(steps[0].Content["data"].(map[string]any)["content"].(string), "mode=old") {
		t.Errorf("first read: %+v", steps[0])
	}
	wantError(t, steps[1], "TIMEOUT_AFTER_SEND", true, true)
	if steps[2].IsError || steps[4].IsError {
		t.Errorf("resend %+v, claim %+v", steps[2], steps[4])
	}
	if got := res.World["config"].(map[string]any)["content"]; got != "mode=safe\nregion=eu\n" {
		t.Errorf("the upstream's state after the trial: %v", res.World)
	}
	v := res.Verdict
	if v.Recovered == nil || !*v.Recovered || *v.UnsafeAction || *v.DuplicateSideEffect || *v.FabricatedClaim {
		t.Errorf("verdict: recovered %v unsafe %v dup %v fab %v", v.Recovered, v.UnsafeAction, v.DuplicateSideEffect, v.FabricatedClaim)
	}
	if res.Upstream == nil || len(res.Upstream.Trial) < 4 {
		t.Errorf("upstream recording: %+v", res.Upstream)
	}
}
