package llm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rebound/core/scenario"
	"rebound/core/world"
)

// Every declared example world's catalog is offered to a model as it is
// over MCP: function names, descriptions and argument schemas built from
// the declared metadata (the argument schema's types, required arguments
// and enums).
func TestDeclaredWorldsAreOffered(t *testing.T) {
	files, err := filepath.Glob("../../../examples/scenarios/worlds/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("declared worlds: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tools, err := world.ToolsOf(scenario.WorldRef{Name: f, File: f, Source: string(data)})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		m, err := newNameMap(names)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		defs, err := toolDefinitions(tools, m)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(defs) != len(tools)+2 {
			t.Errorf("%s: %d definitions for %d tools", f, len(defs), len(tools))
		}
		for i, tl := range tools {
			var schema struct {
				Properties map[string]struct {
					Type string   `json:"type"`
					Enum []string `json:"enum"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(defs[i].Function.Parameters.(json.RawMessage), &schema); err != nil {
				t.Fatalf("%s %s: %v", f, tl.Name, err)
			}
			for _, p := range tl.Params {
				got := schema.Properties[p.Name]
				if got.Type != p.Type || strings.Join(got.Enum, ",") != strings.Join(p.Enum, ",") {
					t.Errorf("%s %s.%s offered as %+v, declared %+v", f, tl.Name, p.Name, got, p)
				}
				if p.Required != strings.Contains(","+strings.Join(schema.Required, ",")+",", ","+p.Name+",") {
					t.Errorf("%s %s.%s: required %v, offered %v", f, tl.Name, p.Name, p.Required, schema.Required)
				}
			}
			if defs[i].Function.Description == "" {
				t.Errorf("%s %s: no description", f, tl.Name)
			}
		}
	}
}
