package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"rebound/core/harness"
)

// Plan arguments are checked against a tool's own input schema (an
// upstream's), at their place; corrected arguments as corrected.
func TestArgSchemas(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)
	catalog := map[string]harness.Tool{
		"write_file": {Name: "write_file", Effect: harness.EffectIdempotent, Schema: schema},
		"plain":      {Name: "plain", Effect: harness.EffectRead}, // no schema: not checked
	}
	s := &Scenario{
		Plan: []Step{
			{ID: "ok", Tool: "write_file", Args: map[string]any{"path": "a", "content": "b"}},
			{ID: "missing", Tool: "write_file", Args: map[string]any{"path": "a"}},
			{ID: "typed", Tool: "write_file", Args: map[string]any{"path": "a", "content": 3}},
			{ID: "corrected", Tool: "write_file", Args: map[string]any{"path": "/abs"}, Corrected: map[string]any{"content": "x"}},
			{ID: "extra", Tool: "write_file", Args: map[string]any{"path": "a", "content": "b", "mode": 1}},
			{ID: "plain", Tool: "plain", Args: map[string]any{"anything": true}},
		},
		Upstream: &Upstream{Probes: []UpstreamProbe{{Name: "p", Tool: "write_file", Args: map[string]any{}}}},
	}
	errs := s.validateArgSchemas(catalog)
	got := map[string]bool{}
	for _, e := range errs {
		got[e.path] = true
		if !strings.Contains(e.msg, "write_file's input schema") {
			t.Errorf("%s: %s", e.path, e.msg)
		}
	}
	for _, want := range []string{"plan[1].args", "plan[2].args", "plan[4].args", "upstream.probes[0].args"} {
		if !got[want] {
			t.Errorf("no error at %s (got %v)", want, errs)
		}
	}
	for _, not := range []string{"plan[0].args", "plan[3].args", "plan[5].args"} {
		if got[not] {
			t.Errorf("an error at %s", not)
		}
	}
}
