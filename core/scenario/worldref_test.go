package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rebound/core/harness"
)

func TestIsWorldFile(t *testing.T) {
	for name, want := range map[string]bool{
		"payments": false, "mcp": false, "./worlds/desk.yaml": true, "desk.yaml": true,
		"desk.YML": true, "../w/desk": true, `w\desk.yaml`: true,
	} {
		if got := IsWorldFile(name); got != want {
			t.Errorf("IsWorldFile(%q) = %v, want %v", name, got, want)
		}
	}
}

const declaredScenario = `name: d
world: ./worlds/w.yaml
goal: g
tools: [t.read]
permissions: [t.read]
budget: {tool_calls: 5}
plan:
  - {id: r, tool: t.read}
claim: {fields: []}
variants:
  - {name: v, recoverable: true}
`

// A declared world's file is read relative to the scenario's directory,
// carried by the scenario (WorldFile, WorldSource) and given to the
// catalog; the scenario's hash covers it.
func TestDeclaredWorldIsCarried(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "worlds"), 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(dir, "worlds", "w.yaml")
	var got WorldRef
	cat := func(ref WorldRef) (map[string]harness.Tool, error) {
		got = ref
		return map[string]harness.Tool{"t.read": {Name: "t.read", Effect: harness.EffectRead, Permission: "t.read"}}, nil
	}
	hashes := map[string]bool{}
	for _, content := range []string{"one\n", "two\n"} {
		if err := os.WriteFile(world, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ParseScenario(filepath.Join(dir, "s.yaml"), []byte(declaredScenario), cat)
		if err != nil {
			t.Fatal(err)
		}
		if s.WorldFile != world || s.WorldSource != content || got != s.WorldRef() || got.Name != "./worlds/w.yaml" {
			t.Errorf("carried %q %q, catalog got %+v", s.WorldFile, s.WorldSource, got)
		}
		hashes[s.Hash] = true
	}
	if len(hashes) != 2 {
		t.Error("the scenario's hash does not cover its declared world's content")
	}

	// A missing file is a located error at world:; the catalog's own
	// located errors (the world file's) are passed through.
	_, err := ParseScenario(filepath.Join(dir, "missing", "s.yaml"), []byte(declaredScenario), cat)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Field != "world" || es[0].Line != 2 {
		t.Errorf("missing world file: %v", err)
	}
	bad := func(WorldRef) (map[string]harness.Tool, error) {
		return nil, Errors{{File: world, Line: 3, Col: 5, Field: "tools[0].effect", Msg: "unknown effect"}}
	}
	_, err = ParseScenario(filepath.Join(dir, "s.yaml"), []byte(declaredScenario), bad)
	if !errors.As(err, &es) || len(es) != 2 || es[1].File != world || es[1].Line != 3 || !strings.Contains(es[0].Msg, "1 problem") {
		t.Errorf("the world file's problems: %v", err)
	}
}
