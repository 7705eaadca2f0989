package declared

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// schema/world.schema.json lists exactly the fields the compiler reads,
// object by object, so editors complete what lint accepts.
func TestSchemaListsTheLanguage(t *testing.T) {
	b, err := os.ReadFile("../../../schema/world.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(l []string) []string {
		out := slices.Clone(l)
		slices.Sort(out)
		return out
	}
	var defaults []string
	for k := range s.Properties["defaults"].(map[string]any)["properties"].(map[string]any) {
		defaults = append(defaults, k)
	}
	for _, c := range []struct {
		what             string
		schema, compiler []string
	}{
		{"the top level", keys(s.Properties), topKeys},
		{"defaults", sorted(defaults), defaultKeys},
		{"a tool", keys(s.Defs["tool"].Properties), toolKeys},
		{"a case", keys(s.Defs["case"].Properties), append([]string{"when"}, bodyKeys...)},
		{"a type", keys(s.Defs["type_spec"].Properties), typeKeys},
		{"a condition", keys(s.Defs["condition"].Properties), condKeys},
		{"a precondition", keys(s.Defs["precondition"].Properties), preconditionKeys},
		{"a change", keys(s.Defs["change"].Properties), changeKeys},
		{"a commit", keys(s.Defs["commit"].Properties), []string{"kind", "intent", "object"}},
		{"a status block", keys(s.Defs["status"].Properties), []string{"of", "key", "landed", "returns"}},
	} {
		if want := sorted(c.compiler); !slices.Equal(c.schema, want) {
			t.Errorf("%s: the schema lists %v, the compiler reads %v", c.what, c.schema, want)
		}
	}
}
