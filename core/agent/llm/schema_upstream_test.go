package llm

import (
	"encoding/json"
	"testing"

	"rebound/core/harness"
)

// A tool with a schema of its own (an upstream MCP server's) is offered
// that schema, nested types included, without its "$schema" member; the
// flat Params only describe it.
func TestOwnSchemaIsOffered(t *testing.T) {
	own := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string"}},"required":["oldText"]}}},"required":["edits"]}`
	tl := harness.Tool{Name: "edit_file", Effect: harness.EffectWrite, Schema: json.RawMessage(own),
		Params: []harness.Param{{Name: "edits", Type: "object", Required: true}}}
	raw, err := ParametersSchema(tl)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["$schema"]; ok {
		t.Errorf("$schema kept: %s", raw)
	}
	edits, _ := got["properties"].(map[string]any)["edits"].(map[string]any)
	if edits["type"] != "array" || edits["items"] == nil {
		t.Errorf("the own schema was not offered: %s", raw)
	}
	if _, err := ParametersSchema(harness.Tool{Name: "bad", Schema: json.RawMessage(`[1]`)}); err == nil {
		t.Error("a schema that is not an object was offered")
	}
}
