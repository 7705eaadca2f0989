package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"rebound/core/harness"
)

// testCatalog is a small world catalog with every shape of tool metadata
// the generator reads (the real worlds are exercised in world_test.go).
func testCatalog() map[string]harness.Tool {
	tools := []harness.Tool{
		{Name: "t.read", Effect: harness.EffectRead, Permission: "t.read", LatencyMs: 100, DeadlineMs: 2000},
		{Name: "t.open", Effect: harness.EffectRead}, // no permission
		{Name: "t.alt", Effect: harness.EffectRead, Permission: "alt.read", LatencyMs: 50},
		{Name: "t.same", Effect: harness.EffectRead, Permission: "t.read"},
		{Name: "t.write", Effect: harness.EffectConditional, Permission: "t.write", IdempotencyKeyParam: "key",
			ReconciledBy: "t.status", LatencyMs: 300, DeadlineMs: 2000, CostUSD: 0.01},
		{Name: "t.status", Effect: harness.EffectRead, Permission: "t.read"},
		{Name: "t.raw", Effect: harness.EffectWrite, Permission: "t.write"},
		{Name: "t.rawrec", Effect: harness.EffectWrite, Permission: "t.write", ReconciledBy: "t.status"},
		{Name: "t.notify", Effect: harness.EffectIdempotent, Permission: "t.write"},
	}
	out := map[string]harness.Tool{}
	for _, t := range tools {
		out[t.Name] = t
	}
	return out
}

func testCatalogFunc(ref WorldRef) (map[string]harness.Tool, error) {
	if ref.Name != "test" {
		return nil, fmt.Errorf("unknown world %q (known: test)", ref.Name)
	}
	return testCatalog(), nil
}

// genScenario is a three-step plan: evidence, a keyed write, a
// notification after it.
func genScenario() *Scenario {
	return &Scenario{
		Name: "g", World: "test", Goal: "g",
		Tools:       []string{"t.read", "t.write", "t.status", "t.notify", "t.alt", "t.same", "t.open", "t.raw", "t.rawrec"},
		Permissions: []string{"t.read", "t.write", "alt.read"},
		Plan: []Step{
			{ID: "evidence", Tool: "t.read"},
			{ID: "write", Tool: "t.write", Args: map[string]any{"key": "k-1"}},
			{ID: "notify", Tool: "t.notify"},
		},
	}
}

func find(vs []Variant, name string) (Variant, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

func TestGenerateRules(t *testing.T) {
	cases := []struct {
		name        string
		edit        func(s *Scenario)
		variant     string
		recoverable bool
		reason      string // substring of Generated.Reason
		faults      string // substring of the faults' JSON
	}{
		{"transient once on evidence", nil, "gen/t.read/transient_once", true, "bounded retry", `"attempts":[1]`},
		{"permission gives forbidden", nil, "gen/t.read/permanent", false, "no usable fallback", `"class":"forbidden","tool":"t.read","always":true`},
		{"no permission gives unavailable", func(s *Scenario) { s.Plan[0].Tool = "t.open" }, "gen/t.open/permanent", false, "no usable fallback", `"class":"unavailable"`},
		{"fallback under another permission", func(s *Scenario) { s.Plan[0].Fallbacks = []Fallback{{Tool: "t.alt"}} }, "gen/t.read/permanent", true, "falls back to t.alt", ""},
		{"fallback under the denied permission is denied too", func(s *Scenario) { s.Plan[0].Fallbacks = []Fallback{{Tool: "t.same"}} },
			"gen/t.read/permanent", false, "outside the denied permission", `"class":"forbidden","tool":"t.same","always":true`},
		{"capability absent: same-permission fallback counts", func(s *Scenario) {
			s.Plan[0].Tool = "t.open"
			s.Plan[0].Fallbacks = []Fallback{{Tool: "t.same"}}
		}, "gen/t.open/permanent", true, "falls back to t.same", ""},
		{"unusable fallback (permission not granted)", func(s *Scenario) {
			s.Plan[0].Fallbacks = []Fallback{{Tool: "t.alt"}}
			s.Permissions = []string{"t.read", "t.write"}
		}, "gen/t.read/permanent", false, "no usable fallback", ""},
		{"transient until budget", nil, "gen/t.read/transient_budget", false, "cannot outlast the budget", `"class":"transient","tool":"t.read","always":true`},
		{"transient until budget with a fallback", func(s *Scenario) { s.Plan[0].Fallbacks = []Fallback{{Tool: "t.same"}} }, "gen/t.read/transient_budget", true, "falls back to t.same", ""},
		{"optional step", func(s *Scenario) { s.Plan[2].Optional = true }, "gen/t.notify/permanent", true, "optional", ""},
		{"corrupt output on a read", nil, "gen/t.read/corrupt_output", true, "bounded retry", `"corruption":"malformed"`},
		{"corrupt output on a keyed write", nil, "gen/t.write/corrupt_output", true, "same idempotency key", ""},
		{"corrupt output on a keyless write with a status tool", func(s *Scenario) { s.Plan[1].Tool = "t.rawrec" }, "gen/t.rawrec/corrupt_output", true, "t.status confirms", ""},
		{"corrupt output on a keyless write without a status tool", func(s *Scenario) { s.Plan[1].Tool = "t.raw" }, "gen/t.raw/corrupt_output", false, "may commit twice", ""},
		{"slow", nil, "gen/t.write/slow", true, "bounded retry", `"class":"slow"`},
		{"timeout before send", nil, "gen/t.write/timeout_before_send", true, "bounded retry", ""},
		{"timeout after send, status tool offered", nil, "gen/t.write/timeout_after_send", true, "t.status reconciles", `"class":"timeout_after_send"`},
		{"timeout after send, status tool not offered", func(s *Scenario) { s.Tools = without(s.Tools, "t.status") }, "gen/t.write/timeout_after_send", false, "no usable status tool", ""},
		{"timeout after send, status tool forbidden", func(s *Scenario) { s.Forbidden = []string{"t.status"} }, "gen/t.write/timeout_after_send", false, "no usable status tool", ""},
		{"timeout after send without the key", func(s *Scenario) { s.Plan[1].Args = nil }, "gen/t.write/timeout_after_send", false, "sends no key", ""},
		{"timeout after send on a keyless write", func(s *Scenario) { s.Plan[1].Tool = "t.rawrec" }, "gen/t.rawrec/timeout_after_send", true, "t.status reconciles", ""},
		{"reconciliation unknown", nil, "gen/t.write/reconcile_unknown", false, "block naming the ambiguity", `"class":"unavailable","tool":"t.status","always":true`},
		{"invalid input with corrected arguments", func(s *Scenario) { s.Plan[1].Corrected = map[string]any{"date": "2026-01-01"} }, "gen/t.write/invalid_input", true, "corrected call", ""},
		{"call budget too small for a retry", func(s *Scenario) { s.Budget.ToolCalls = 3 }, "gen/t.read/transient_once", false, "needs 4 tool calls, the budget allows 3", ""},
		{"call budget fits a retry", func(s *Scenario) { s.Budget.ToolCalls = 4 }, "gen/t.read/transient_once", true, "bounded retry", ""},
		{"deadline too short for a slow call", func(s *Scenario) { s.Budget.DeadlineMs = 2499 }, "gen/t.write/slow", false, "takes 2500ms, the deadline is 2499ms", ""},
		{"cost budget too small for a retry", func(s *Scenario) { s.Budget.CostUSD = 0.015 }, "gen/t.write/transient_once", false, "costs $0.0200", ""},
		{"plan not authorized at all", func(s *Scenario) { s.Permissions = []string{"t.read"} }, "gen/t.read/transient_once", false, "not authorized even without faults", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := genScenario()
			if tc.edit != nil {
				tc.edit(s)
			}
			vs := Generate(s, testCatalog())
			v, ok := find(vs, tc.variant)
			if !ok {
				t.Fatalf("no variant %s among %v", tc.variant, names(vs))
			}
			if v.Recoverable != tc.recoverable || !strings.Contains(v.Generated.Reason, tc.reason) {
				t.Errorf("recoverable = %v (%s), want %v (%q)", v.Recoverable, v.Generated.Reason, tc.recoverable, tc.reason)
			}
			if !strings.Contains(v.Description, v.Generated.Reason) {
				t.Errorf("description %q does not give the reason", v.Description)
			}
			b, _ := json.Marshal(v.Faults)
			if !strings.Contains(string(b), tc.faults) {
				t.Errorf("faults %s, want containing %s", b, tc.faults)
			}
			for i, f := range v.Faults {
				if err := f.Validate(); err != nil {
					t.Errorf("faults[%d] invalid: %v", i, err)
				}
			}
		})
	}
}

func without(list []string, x string) []string {
	var out []string
	for _, s := range list {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func names(vs []Variant) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// Which kinds each step gets, in which order, at which plan position.
func TestGenerateCoverage(t *testing.T) {
	vs := Generate(genScenario(), testCatalog())
	want := []string{
		"gen/t.read/permanent", "gen/t.read/transient_once", "gen/t.read/transient_budget", "gen/t.read/corrupt_output", "gen/t.read/slow",
		"gen/t.write/permanent", "gen/t.write/transient_once", "gen/t.write/transient_budget", "gen/t.write/corrupt_output", "gen/t.write/slow",
		"gen/t.write/timeout_before_send", "gen/t.write/timeout_after_send", "gen/t.write/reconcile_unknown",
		"gen/t.notify/permanent", "gen/t.notify/transient_once", "gen/t.notify/transient_budget", "gen/t.notify/corrupt_output", "gen/t.notify/slow",
	}
	if got := names(vs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("generated\n %v\nwant\n %v", got, want)
	}
	positions := map[string]string{"t.read": PositionEvidence, "t.write": PositionEffect, "t.notify": PositionAfter}
	for _, v := range vs {
		if v.Generated.Position != positions[v.Generated.Tool] {
			t.Errorf("%s: position %s, want %s", v.Name, v.Generated.Position, positions[v.Generated.Tool])
		}
		if v.Generated.Kind != GenKind(v.Name[strings.LastIndex(v.Name, "/")+1:]) {
			t.Errorf("%s: kind %s", v.Name, v.Generated.Kind)
		}
	}
	// Deterministic: the same input gives the same variants.
	a, _ := json.Marshal(vs)
	b, _ := json.Marshal(Generate(genScenario(), testCatalog()))
	if string(a) != string(b) {
		t.Fatal("generation is not deterministic")
	}

	// A read-only plan.
	s := genScenario()
	s.Plan = s.Plan[:1]
	for _, v := range Generate(s, testCatalog()) {
		if v.Generated.Position != PositionReadOnly {
			t.Errorf("%s: position %s in a read-only plan", v.Name, v.Generated.Position)
		}
	}
}

// A tool used by two steps: names carry the step, the once-faults hit the
// step's own attempt, and permanent faults are generated once.
func TestGenerateRepeatedTool(t *testing.T) {
	s := genScenario()
	s.Plan = append(s.Plan, Step{ID: "again", Tool: "t.read"})
	vs := Generate(s, testCatalog())
	v, ok := find(vs, "gen/t.read@again/transient_once")
	if !ok {
		t.Fatalf("no per-step name: %v", names(vs))
	}
	if got := v.Faults[0].Attempts; len(got) != 1 || got[0] != 2 {
		t.Errorf("second step's first attempt is attempt 2, got %v", got)
	}
	if _, ok := find(vs, "gen/t.read@again/permanent"); ok {
		t.Error("permanent generated twice for one tool")
	}
	if _, ok := find(vs, "gen/t.read@evidence/permanent"); !ok {
		t.Errorf("permanent missing at the first step: %v", names(vs))
	}
}

func TestGenerateKindsSelection(t *testing.T) {
	s := genScenario()
	s.Generate = GenerateSpec{GenTimeoutAfterSend, GenSlow}
	got := names(Generate(s, testCatalog()))
	want := "gen/t.read/slow,gen/t.write/slow,gen/t.write/timeout_after_send,gen/t.notify/slow"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	// Tools missing from the catalog are skipped (the loader reports them).
	s.Plan[0].Tool = "t.missing"
	if v := names(Generate(s, testCatalog())); v[0] != "gen/t.write/slow" {
		t.Fatalf("got %v", v)
	}
}

// A denied permission reaches every plan step whose tool is a fallback
// sharing it, not only the fallback role.
func TestGenerateDeniedFallbackUsedAsStep(t *testing.T) {
	s := genScenario()
	s.Plan[0].Fallbacks = []Fallback{{Tool: "t.same"}, {Tool: "t.alt"}}
	s.Plan = append(s.Plan, Step{ID: "more", Tool: "t.same"})
	v, ok := find(Generate(s, testCatalog()), "gen/t.read/permanent")
	if !ok {
		t.Fatal("missing")
	}
	if v.Recoverable || !strings.Contains(v.Generated.Reason, "step more is required and has no usable fallback") {
		t.Fatalf("recoverable %v: %s", v.Recoverable, v.Generated.Reason)
	}
}
