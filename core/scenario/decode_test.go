package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The linear decoder gives exactly what yaml.v3's strict decoder gives, on
// every example scenario and plan.
func TestLinearDecodeMatchesYAML(t *testing.T) {
	files, _ := filepath.Glob("../../examples/scenarios/*.yaml")
	plans, _ := filepath.Glob("../../examples/plans/*.yaml")
	if len(files) < 10 || len(plans) == 0 {
		t.Fatalf("examples not found: %d scenarios, %d plans", len(files), len(plans))
	}
	check := func(f string, fresh func() any) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, got := fresh(), fresh()
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(want); err != nil {
			t.Fatalf("%s: yaml.v3: %v", f, err)
		}
		if _, errs := decodeStrict(f, data, got); len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: linear decode differs from yaml.v3:\n got %+v\nwant %+v", f, got, want)
		}
	}
	for _, f := range files {
		check(f, func() any { return &Scenario{} })
	}
	for _, f := range plans {
		check(f, func() any { return &Plan{} })
	}
}

// Duplicate keys (anywhere), unknown fields and wrong types are all
// reported, located, in one pass.
func TestLinearDecodeReportsEveryProblem(t *testing.T) {
	src := `name: x
world: payments
gaol: typo
goal: g
initial:
  orders:
    A: {amount_cents: 1}
    A: {amount_cents: 2}
budget: {tool_calls: lots}
plan:
  - {id: s, tool: t, args: {k: 1, k: 2}, bogus: 1}
weight: 1
weight: 2
`
	var s Scenario
	_, errs := decodeStrict("f.yaml", []byte(src), &s)
	got := errs.Error()
	for _, want := range []string{
		"f.yaml:3:1: gaol: unknown field",
		`f.yaml:8:5: A: mapping key "A" already defined at line 7`,
		`f.yaml:11:35: k: mapping key "k" already defined at line 11`,
		"f.yaml:11:42: bogus: unknown field",
		`f.yaml:13:1: weight: mapping key "weight" already defined at line 12`,
		"f.yaml:9:9: budget: expected an integer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if s.Goal != "g" || s.Initial["orders"].(map[string]any)["A"] == nil {
		t.Errorf("the rest did not decode: %+v", s)
	}
}

func bigInitial(keys int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nworld: payments\ngoal: g\ntools: [payments.charge]\npermissions: [payments.write]\nbudget: {tool_calls: 5}\ninitial:\n  orders:\n")
	for i := range keys {
		fmt.Fprintf(&b, "    K%d: {amount_cents: %d}\n", i, i)
	}
	b.WriteString("plan:\n  - {id: c, tool: payments.charge, args: {order_id: K1, amount_cents: 1, idempotency_key: k}}\nclaim: {fields: []}\nvariants:\n  - {name: v, recoverable: true}\n")
	return []byte(b.String())
}

// Issue 10: 50,000 keys under initial took 27.6 s (quadratic duplicate-key
// checks in yaml.v3). Parsing now grows linearly: eight times the keys
// take about eight times as long, not sixty-four.
func TestLoadTimeIsLinear(t *testing.T) {
	timeOf := func(keys int) time.Duration {
		data := bigInitial(keys)
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			s, err := ParseScenarioWith("big.yaml", data, LoadOptions{NoCatalog: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.Initial["orders"].(map[string]any)); n != keys {
				t.Fatalf("%d orders decoded, want %d", n, keys)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := timeOf(6_250), timeOf(50_000)
	t.Logf("6,250 keys: %v; 50,000 keys: %v (ratio %.1f)", small, large, float64(large)/float64(small))
	if float64(large) > 24*float64(small) {
		t.Errorf("8x the keys took %.1fx the time: not linear", float64(large)/float64(small))
	}
}

// Ctrl-C while loading: a cancelled context stops the loader before the
// next file.
func TestLoadHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LoadPlanWith("../../examples/plans/library.yaml", LoadOptions{NoCatalog: true, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := LoadScenarioWith("../../examples/scenarios/charge-502-twice.yaml", LoadOptions{NoCatalog: true, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A document with aliases or merge keys is decoded by the same linear
// walker as any other (strictyaml expands it first): 20,000 keys beside an
// alias or a merge key decode, quickly, where yaml.v3 alone took quadratic
// time (and was refused above 2,000 keys before issue 25).
func TestAliasesAndMergeKeysStayLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: x\ninitial:\n  base: &b {a: 1}\n  orders:\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "    K%d: 1\n", i)
	}
	b.WriteString("  copy: *b\n")
	merge := strings.Replace(b.String(), "  copy: *b\n", "  m: {<<: {a: 1}, b: 2}\n", 1)
	merge = strings.Replace(merge, "  base: &b {a: 1}\n", "", 1)
	for name, src := range map[string]string{"alias": b.String(), "merge key": merge} {
		start := time.Now()
		var s Scenario
		_, errs := decodeStrict("f.yaml", []byte(src), &s)
		if len(errs) > 0 || len(s.Initial["orders"].(map[string]any)) != 20_000 || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v", name, errs, time.Since(start))
		}
	}
	var s Scenario
	if _, errs := decodeStrict("f.yaml", []byte(b.String()), &s); s.Initial["copy"].(map[string]any)["a"] != 1 {
		t.Errorf("alias: copy = %v (%v)", s.Initial["copy"], errs)
	}
	// A non-string key inside a free-form value would make the plan
	// unstorable as JSON: reported, as is a key that is a list.
	for src, want := range map[string]string{
		"initial:\n  orders:\n    1: {amount_cents: 5}\n": "f.yaml:3:5: 1: mapping key 1 is not a string (int); quote it",
		"initial:\n  orders:\n    ? [a, b]\n    : 1\n":    "f.yaml:3:7: a mapping key must be a string, not a list",
	} {
		var s Scenario
		if _, errs := decodeStrict("f.yaml", []byte(src), &s); len(errs) != 1 || !strings.Contains(errs.Error(), want) {
			t.Errorf("%q: %v, want %q", src, errs, want)
		}
	}
}
