package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

// A generated variant's faults strike first the step it names: a fault on
// a tool an earlier step calls is fixed to start after those calls (when
// that does not change what the variant means) or the variant is dropped.
func TestGeneratedVariantsAimAtTheirStep(t *testing.T) {
	t.Run("reconcile_unknown whose status tool is the first read starts after it", func(t *testing.T) {
		s := genScenario()
		s.Plan[0].Tool = "t.status" // the plan's first read is the write's status tool
		vs, adj := GenerateChecked(s, testCatalog())
		v, ok := find(vs, "gen/t.write/reconcile_unknown")
		if !ok {
			t.Fatalf("variant dropped; adjusted %+v", adj)
		}
		b, _ := json.Marshal(v.Faults)
		if !strings.Contains(string(b), `"tool":"t.status","from":2`) || strings.Contains(string(b), `"always"`) {
			t.Errorf("faults %s: the status tool must fail from its second attempt", b)
		}
		if len(adj) != 1 || adj[0].Dropped || adj[0].Variant != v.Name || !strings.Contains(adj[0].Msg, "would strike step evidence") {
			t.Errorf("adjusted = %+v", adj)
		}
		if v.Recoverable {
			t.Error("reconcile_unknown stays unrecoverable")
		}
	})
	t.Run("a denial that reaches an earlier step's tool is dropped", func(t *testing.T) {
		s := genScenario()
		// Step evidence reads t.same; the write's status step t.read has
		// t.same as its fallback under the same permission: denying
		// t.read's permission also denies t.same, the earlier step's tool.
		s.Plan = []Step{
			{ID: "first", Tool: "t.same"},
			{ID: "second", Tool: "t.read", Fallbacks: []Fallback{{Tool: "t.same"}}},
		}
		vs, adj := GenerateChecked(s, testCatalog())
		if _, ok := find(vs, "gen/t.read/permanent"); ok {
			t.Fatal("the permanent variant of t.read strikes step first and must be dropped")
		}
		found := false
		for _, a := range adj {
			if a.Variant == "gen/t.read/permanent" && a.Dropped && strings.Contains(a.Msg, "would strike step first") {
				found = true
			}
		}
		if !found {
			t.Errorf("adjusted = %+v", adj)
		}
	})
	t.Run("the unadjusted plan is left alone", func(t *testing.T) {
		vs, adj := GenerateChecked(genScenario(), testCatalog())
		if len(adj) != 0 || len(vs) != len(Generate(genScenario(), testCatalog())) {
			t.Errorf("adjusted %+v", adj)
		}
	})
}

// Lint says what the generator did, at the scenario's generate field.
func TestGeneratedVariantAdjustmentIsNoted(t *testing.T) {
	src := `name: aim
world: test
goal: g
tools: [t.status, t.write]
permissions: [t.read, t.write]
plan:
  - {id: check, tool: t.status}
  - {id: write, tool: t.write, args: {key: k-1}}
generate: [reconcile_unknown]
budget: {tool_calls: 10}
`
	var notes []FieldError
	s, err := ParseScenarioWith("aim.yaml", []byte(src), LoadOptions{Catalog: testCatalogFunc, Note: func(e FieldError) { notes = append(notes, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Variant("gen/t.write/reconcile_unknown"); !ok {
		t.Fatal("variant missing")
	}
	if len(notes) != 1 || notes[0].Line != 9 || notes[0].File != "aim.yaml" || !strings.Contains(notes[0].Msg, "gen/t.write/reconcile_unknown") || !strings.Contains(notes[0].Msg, "starts at attempt 2 of t.status") {
		t.Fatalf("notes = %+v", notes)
	}
}
