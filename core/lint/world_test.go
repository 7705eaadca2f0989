package lint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A declared world's file is linted on its own, and through every
// scenario that names it; its problems are located in it, at
// file:line:column.
func TestDeclaredWorlds(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "worlds"), 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(dir, "worlds", "w.yaml")
	src := "name: w\nstate:\n  items: {type: map, values: {n: integer}}\ntools:\n  - name: w.get\n    effect: read\n    args: {id: {type: string, required: true}}\n    reads: {item: \"items.{id}\"}\n    preconditions: [{exists: item}]\n    returns: {n: \"{item.m}\"}\n"
	if err := os.WriteFile(world, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("name: s\nworld: ./worlds/w.yaml\ngoal: g\ntools: [w.get, w.put]\npermissions: []\nbudget: {tool_calls: 4}\nplan:\n  - {id: r, tool: w.get, args: {id: a}}\nclaim: {fields: []}\nvariants:\n  - {name: v, recoverable: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "../../examples/scenarios/worlds/payments.yaml"
	res, err := Files(context.Background(), []string{good, world, scen})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 3 || !res.Files[0].OK || res.Files[0].Kind != "world" || res.Files[1].OK || res.Files[1].Kind != "world" || res.Files[2].OK {
		t.Fatalf("%+v", res)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ok    " + good + "\n",
		world + `:10:18: tools[0].returns.n: "{item.m}": {item.m}: item has no field "m" (fields: n)`,
		scen + ":2:1: world: the declared world " + world + " has 1 problem(s)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	// Fixed, the scenario's tool names are checked against the world.
	if err := os.WriteFile(world, []byte(strings.Replace(src, "item.m", "item.n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Files(context.Background(), []string{scen})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	_ = res.WriteText(&text)
	if !strings.Contains(text.String(), scen+`:4:16: tools[1]: tool "w.put" is not in the catalog of world "./worlds/w.yaml" (known: w.get)`) {
		t.Errorf("unknown tool of a declared world:\n%s", text.String())
	}
}

// A declared world's refusal of a scenario's initial state is located at
// the field of initial: it names.
func TestDeclaredInitialLocated(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	src, err := os.ReadFile("../../examples/scenarios/ship-label-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../examples/scenarios/worlds/shipping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "world: ./worlds/shipping.yaml", "world: "+abs, 1)
	bad = strings.Replace(bad, "weight_grams: 2400}", "weight_grams: heavy}", 1)
	if err := os.WriteFile(scen, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Files(context.Background(), []string{scen})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = res.WriteText(&text)
	want := scen + `:17:43: initial.orders.O-318.weight_grams: world shipping refuses the initial state: expected an integer, got the string "heavy"`
	if !strings.Contains(text.String(), want) {
		t.Errorf("want %s, got:\n%s", want, text.String())
	}
}
