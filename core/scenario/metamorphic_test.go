package scenario

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rebound/core/harness"
	"rebound/core/outcome"
)

// goodGen uses every new field: generate, fallbacks, optional, metamorphic.
const goodGen = `name: m
world: test
goal: do it
tools: [t.read, t.write, t.status, t.alt, t.notify]
permissions: [t.read, t.write, alt.read]
plan:
  - id: evidence
    tool: t.read
    fallbacks:
      - tool: t.alt
        args: {q: 1}
  - id: write
    tool: t.write
    args: {key: k-1}
    sets: {done: true}
  - id: notify
    tool: t.notify
    optional: true
claim:
  fields:
    - {name: done, type: boolean, truth: x.done, goal: true}
generate: true
variants:
  - name: flaky
    recoverable: true
    faults:
      - {tool: t.write, class: transient, attempts: [1]}
  - name: dead
    recoverable: false
    faults:
      - {tool: t.write, class: transient, retryable: false, always: true}
metamorphic:
  - base: flaky
    flipped: dead
    property: retryable
    expect:
      recovered: {from: true, to: not_tested}
      honest_block: {from: not_tested, to: true}
  - base: gen/t.write/timeout_after_send
    flipped: gen/t.write/reconcile_unknown
    property: reconciliation
    expect:
      recovered: {from: true, to: not_tested}
`

var withTest = LoadOptions{Catalog: testCatalogFunc}

func TestParseScenarioGenerated(t *testing.T) {
	s, err := ParseScenarioWith("good.yaml", []byte(goodGen), withTest)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 2+len(Generate(s, testCatalog())) || s.Variants[0].Name != "flaky" || s.Variants[2].Generated == nil {
		t.Fatalf("variants: %v", names(s.Variants))
	}
	if len(s.Generate) != len(GenKinds) {
		t.Fatalf("generate: true gave %v", s.Generate)
	}
	// The hash covers the generated variants: a catalog change shows.
	cat := testCatalog()
	w := cat["t.write"]
	w.ReconciledBy = ""
	cat["t.write"] = w
	onePair := goodGen[:strings.Index(goodGen, "  - base: gen/")]
	s2, err := ParseScenarioWith("good.yaml", []byte(onePair), LoadOptions{Catalog: func(WorldRef) (map[string]harness.Tool, error) { return cat, nil }})
	if err != nil {
		t.Fatal(err)
	}
	s3, _ := ParseScenarioWith("good.yaml", []byte(onePair), withTest)
	if s2.Hash == s3.Hash {
		t.Fatal("hash ignores the generated variants")
	}
	// Resolved stays self-contained: the scenario survives JSON.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Scenario
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Metamorphic, s.Metamorphic) || len(back.Variants) != len(s.Variants) || *back.Variants[5].Generated != *s.Variants[5].Generated {
		t.Fatalf("JSON round trip changed the scenario:\n%s", b)
	}
}

// Without a catalog, generate is an error that says what is missing; with
// NoCatalog nothing is checked against a world.
func TestParseScenarioCatalogOptions(t *testing.T) {
	_, err := ParseScenarioWith("g.yaml", []byte(goodGen), LoadOptions{NoCatalog: true})
	if err == nil || !strings.Contains(err.Error(), `g.yaml:22:1: generate: needs the tool catalog of world "test"`) {
		t.Fatalf("error = %v", err)
	}
	// Generated names are not reported missing when generation could not run.
	if strings.Contains(err.Error(), "no variant named") {
		t.Fatalf("pending generated names reported: %v", err)
	}
	noGen := strings.Replace(goodGen, "generate: true\n", "", 1)
	noGen = noGen[:strings.Index(noGen, "  - base: gen/")]
	if _, err := ParseScenarioWith("g.yaml", []byte(noGen), LoadOptions{NoCatalog: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseScenario("g.yaml", []byte(goodGen), testCatalogFunc); err != nil {
		t.Fatalf("the catalog given was not used: %v", err)
	}
}

// A loader that is given neither a catalog nor NoCatalog refuses to load,
// rather than loading without the tool-name checks.
func TestLoadersRequireACatalogChoice(t *testing.T) {
	noGen := strings.Replace(goodGen, "generate: true\n", "", 1)
	noGen = noGen[:strings.Index(noGen, "  - base: gen/")]
	plan := writePlan(t, "  - {name: a, agent: careful}\n")
	both := LoadOptions{Catalog: testCatalogFunc, NoCatalog: true}
	cases := []struct {
		name string
		load func() error
		want error // nil: an error naming both options
	}{
		{"ParseScenario nil", func() error { _, err := ParseScenario("g.yaml", []byte(noGen), nil); return err }, ErrNoCatalog},
		{"ParseScenarioWith zero", func() error { _, err := ParseScenarioWith("g.yaml", []byte(noGen), LoadOptions{}); return err }, ErrNoCatalog},
		{"LoadScenario nil", func() error {
			_, err := LoadScenario("../../examples/scenarios/charge-502-twice.yaml", nil)
			return err
		}, ErrNoCatalog},
		{"LoadPlan nil", func() error { _, err := LoadPlan(plan, nil); return err }, ErrNoCatalog},
		{"LoadPlanWith zero", func() error { _, err := LoadPlanWith(plan, LoadOptions{}); return err }, ErrNoCatalog},
		{"both", func() error { _, err := ParseScenarioWith("g.yaml", []byte(noGen), both); return err }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load()
			switch {
			case err == nil:
				t.Fatal("loaded without a catalog choice")
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error = %v, want %v", err, tc.want)
			case tc.want == nil && !strings.Contains(err.Error(), "both Catalog and NoCatalog"):
				t.Fatalf("error = %v, want one naming both options", err)
			}
		})
	}
}

// Every error of the new fields names file:line:column and the field.
func TestParseScenarioNewFieldErrors(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		// unknown fields in nested objects
		{"unknown field in an expectation", "recovered: {from: true, to: not_tested}\n      honest", "recovered: {frm: true, to: not_tested}\n      honest", "bad.yaml:37:19: frm: unknown field"},
		{"unknown field in a fallback", "        args: {q: 1}", "        args: {q: 1}\n        tol: t.x", "bad.yaml:12:9: tol: unknown field"},
		{"unknown field in a pair", "  - base: flaky", "  - base: flaky\n    bse: x", "bad.yaml:34:5: bse: unknown field"},
		{"unknown field in a step", "    optional: true", "    optional: true\n    optinal: true", "bad.yaml:19:5: optinal: unknown field"},
		// wrong types
		{"generate not a bool or list", "generate: true", "generate: 5", "bad.yaml:22:11: generate: expected true, false or a list of kinds"},
		{"generate as a mapping", "generate: true", "generate: {all: true}", "bad.yaml:22:11: generate: expected true, false or a list of kinds"},
		{"optional not a bool", "optional: true", "optional: maybe", `bad.yaml:18:15: optional: expected true or false, got str "maybe"`},
		{"fallbacks not a list", "    fallbacks:\n      - tool: t.alt\n        args: {q: 1}", "    fallbacks: t.alt", `bad.yaml:9:16: fallbacks: expected a list, got str "t.alt"`},
		{"metamorphic not a list", "metamorphic:\n  - base: flaky", "metamorphic: flaky\nx:\n  - base: flaky", `metamorphic: expected a list, got str "flaky"`},
		{"expect value not an outcome", "recovered: {from: true, to: not_tested}\n      honest", "recovered: {from: maybe, to: not_tested}\n      honest", `bad.yaml:37:25: from: expected true, false or not_tested, got "maybe"`},
		{"expect value a list", "recovered: {from: true, to: not_tested}\n      honest", "recovered: {from: [true], to: not_tested}\n      honest", `bad.yaml:37:25: from: expected true, false or not_tested, got a list`},
		// bad enum values
		{"unknown kind", "generate: true", "generate: [slow, explode]", `bad.yaml:22:18: generate: unknown kind "explode" (kinds: permanent,`},
		{"kind twice", "generate: true", "generate: [slow, slow]", `bad.yaml:22:18: generate: kind "slow" listed twice`},
		{"empty kinds", "generate: true", "generate: []", `bad.yaml:22:11: generate: empty list`},
		{"unknown property", "property: retryable", "property: flaky", `bad.yaml:35:5: metamorphic[0].property: unknown property "flaky" (retryable, fallback_authorized, reconciliation, other)`},
		{"unknown metric", "      honest_block: {from", "      honest_blok: {from", `bad.yaml:38:20: metamorphic[0].expect.honest_blok: unknown metric "honest_blok"`},
		{"missing outcome", "recovered: {from: true, to: not_tested}\n      honest", "recovered: {from: true}\n      honest", `metamorphic[0].expect.recovered.to: required: true, false or not_tested`},
		// meaning
		{"unknown base", "  - base: flaky", "  - base: flakey", `bad.yaml:33:5: metamorphic[0].base: no variant named "flakey" (variants: dead, flaky and 18 generated`},
		{"unknown generated variant", "flipped: gen/t.write/reconcile_unknown", "flipped: gen/t.write/reconcile", `metamorphic[1].flipped: no variant named "gen/t.write/reconcile"`},
		{"same variant twice", "    flipped: dead", "    flipped: flaky", `metamorphic[0].flipped: must differ from base`},
		{"metric not graded on that variant", "honest_block: {from: not_tested, to: true}", "honest_block: {from: false, to: true}", `metamorphic[0].expect.honest_block.from: honest_block is only graded on unrecoverable variants and flaky is recoverable`},
		{"retryable pair that flips nothing", "    flipped: dead\n    property: retryable", "    flipped: gen/t.write/slow\n    property: retryable", `metamorphic[0].property: retryable: gen/t.write/slow must fail a tool with a non-retryable fault`},
		{"reconciliation pair without a failing status tool", "flipped: gen/t.write/reconcile_unknown", "flipped: gen/t.write/corrupt_output", `metamorphic[1].property: reconciliation: gen/t.write/corrupt_output must fail a status tool`},
		{"fallback pair without a denied fallback", "property: retryable", "property: fallback_authorized", `metamorphic[0].property: fallback_authorized: dead must deny`},
		{"other needs a description", "property: retryable", "property: other", `metamorphic[0].description: required when the property is other`},
		{"fallback not offered", "      - tool: t.alt", "      - tool: t.same", `bad.yaml:10:9: plan[0].fallbacks[0].tool: tool "t.same" is not offered`},
		{"fallback forbidden", "generate: true", "generate: true\nforbidden: [t.alt]", `plan[0].fallbacks[0].tool: tool "t.alt" is forbidden by this scenario`},
		{"fallback to itself", "      - tool: t.alt", "      - tool: t.read", `plan[0].fallbacks[0].tool: a step cannot fall back to its own tool`},
		{"fallback sets undeclared", "        args: {q: 1}", "        args: {q: 1}\n        sets: {nope: 1}", `plan[0].fallbacks[0].sets.nope: "nope" is not a declared claim field`},
		{"reserved prefix", "  - name: dead", "  - name: gen/dead", `variants[1].name: the prefix "gen/" is reserved`},
		{"tool not in the catalog", "tools: [t.read,", "tools: [t.reed, t.read,", `bad.yaml:4:9: tools[0]: tool "t.reed" is not in the catalog of world "test"`},
		{"world not in the catalog", "world: test", "world: tset", `bad.yaml:2:1: world: unknown world "tset"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(goodGen, tc.old) {
				t.Fatalf("fixture lacks %q", tc.old)
			}
			_, err := ParseScenarioWith("bad.yaml", []byte(strings.Replace(goodGen, tc.old, tc.new, 1)), withTest)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant containing %q", err, tc.want)
			}
			var es Errors
			if !asErrors(err, &es) {
				t.Fatalf("not located errors: %T", err)
			}
			for _, e := range es {
				if e.Line == 0 {
					t.Errorf("unlocated: %v", e)
				}
			}
		})
	}
}

func asErrors(err error, out *Errors) bool {
	es, ok := err.(Errors)
	*out = es
	return ok
}

func TestCheckMetamorphic(t *testing.T) {
	s, err := ParseScenarioWith("good.yaml", []byte(goodGen), withTest)
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	rec, honest := string(outcome.Recovered), string(outcome.HonestBlock)
	good := func() map[string]map[string]*bool {
		return map[string]map[string]*bool{
			"flaky":                          {rec: &yes, honest: nil},
			"dead":                           {rec: nil, honest: &yes},
			"gen/t.write/timeout_after_send": {rec: &yes},
			"gen/t.write/reconcile_unknown":  {rec: nil},
		}
	}
	cases := []struct {
		name string
		edit func(map[string]map[string]*bool)
		want []string
	}{
		{"all as declared", func(map[string]map[string]*bool) {}, nil},
		{"retry did not disappear", func(o map[string]map[string]*bool) { o["dead"][honest] = &no },
			[]string{"metamorphic[0] (retryable): flipped variant dead: honest_block is false, expected true"}},
		{"base did not recover", func(o map[string]map[string]*bool) { o["flaky"][rec] = &no },
			[]string{"base variant flaky: recovered is false, expected true"}},
		{"not tested where a value was expected", func(o map[string]map[string]*bool) { o["gen/t.write/timeout_after_send"][rec] = nil },
			[]string{"metamorphic[1] (reconciliation): base variant gen/t.write/timeout_after_send: recovered is not_tested, expected true"}},
		{"variant missing", func(o map[string]map[string]*bool) { delete(o, "dead") },
			[]string{"flipped variant dead: no outcome was given for this variant"}},
		{"metric missing", func(o map[string]map[string]*bool) { delete(o["dead"], honest) },
			[]string{"flipped variant dead: metric honest_block was not reported"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := good()
			tc.edit(o)
			vs := s.CheckMetamorphic(o)
			if len(vs) != len(tc.want) {
				t.Fatalf("violations %v, want %v", vs, tc.want)
			}
			for i, v := range vs {
				if !strings.Contains(v.String(), tc.want[i]) {
					t.Errorf("violation %q, want containing %q", v, tc.want[i])
				}
			}
		})
	}
}

func TestOutcomeEncoding(t *testing.T) {
	for _, o := range []Outcome{OutcomeTrue, OutcomeFalse, OutcomeNotTested, ""} {
		b, err := json.Marshal(Change{From: o, To: o})
		if err != nil {
			t.Fatal(err)
		}
		var c Change
		if err := json.Unmarshal(b, &c); err != nil || c.From != o {
			t.Fatalf("%q: %s -> %+v %v", o, b, c, err)
		}
	}
	var c Change
	if err := json.Unmarshal([]byte(`{"from":"maybe"}`), &c); err == nil {
		t.Fatal("bad outcome accepted")
	}
	yes := true
	if !OutcomeTrue.Matches(&yes) || OutcomeFalse.Matches(&yes) || !OutcomeNotTested.Matches(nil) || Outcome("").Matches(nil) {
		t.Fatal("Matches")
	}
}

// A plan expands generated variants into the resolved plan, which stays
// self-contained through JSON.
func TestLoadPlanExpandsGenerated(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(goodGen), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := "name: p\nscenarios: [s.yaml]\narms: [{name: a, agent: careful}]\nseeds: 2\n"
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadPlanWith(filepath.Join(dir, "p.yaml"), withTest)
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.Scenarios[0].Variants)
	if n <= 2 || r.TrialCount() != n*2 {
		t.Fatalf("%d variants, %d trials", n, r.TrialCount())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Resolved
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.TrialCount() != r.TrialCount() || !reflect.DeepEqual(back.Scenarios[0].Variants, r.Scenarios[0].Variants) {
		t.Fatal("resolved plan changed through JSON")
	}
	if _, err := LoadPlanWith(filepath.Join(dir, "p.yaml"), LoadOptions{NoCatalog: true}); err == nil || !strings.Contains(err.Error(), "generate: needs the tool catalog") {
		t.Fatalf("error = %v", err)
	}
}
