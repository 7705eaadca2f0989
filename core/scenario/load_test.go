package scenario

import (
	"strings"
	"testing"
)

const good = `name: s
world: payments
goal: charge it
tools: [payments.charge]
permissions: [payments.write]
plan:
  - id: charge
    tool: payments.charge
    args: {order_id: A}
    sets: {charged: true}
claim:
  fields:
    - {name: charged, type: boolean, truth: orders.A.captured}
variants:
  - name: v
    recoverable: true
    faults:
      - {tool: payments.charge, class: transient, attempts: [1]}
`

// noCatalog loads without checking tool names against a world: the
// package's own tests cannot import world (world imports scenario); those
// that need the real catalog live in world_test.go.
var noCatalog = LoadOptions{NoCatalog: true}

func TestParseScenarioGood(t *testing.T) {
	s, err := ParseScenarioWith("good.yaml", []byte(good), noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hash == "" || s.EffectiveWeight() != 1 || s.EffectiveRetryLimit() != 3 || len(s.Variants[0].Faults) != 1 {
		t.Fatalf("scenario = %+v", s)
	}
}

// Every error names file:line:column and the field.
func TestParseScenarioErrorsAreLocated(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"unknown field", strings.Replace(good, "goal: charge it", "goal: charge it\ngaol: typo", 1), "bad.yaml:4:1: gaol: unknown field"},
		{"wrong type", strings.Replace(good, "recoverable: true", "recoverable: maybe", 1), "bad.yaml:16:18: recoverable: expected true or false, got str \"maybe\""},
		{"bad class", strings.Replace(good, "class: transient", "class: explode", 1), `bad.yaml:18:33: variants[0].faults[0].class: unknown fault class "explode"`},
		{"tool not offered", strings.Replace(good, "tool: payments.charge\n    args", "tool: payments.refund\n    args", 1), `bad.yaml:8:5: plan[0].tool: tool "payments.refund" is not offered`},
		{"undeclared claim field", strings.Replace(good, "sets: {charged: true}", "sets: {refunded: true}", 1), `plan[0].sets.refunded: "refunded" is not a declared claim field`},
		{"missing goal", strings.Replace(good, "goal: charge it\n", "", 1), "bad.yaml:1:1: goal: required"},
		{"bad yaml", good + "  - [unclosed\n", ": invalid YAML: did not find expected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenarioWith("bad.yaml", []byte(tc.edit), noCatalog)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant containing %q", err, tc.want)
			}
		})
	}
}

// Plan files: every error is located too, including the custom seeds field.
func TestParsePlanErrorsAreLocated(t *testing.T) {
	const plan = "name: p\nscenarios: [a.yaml]\narms:\n  - {name: a, agent: careful}\nseeds: 3\nshard_size: 10\n"
	if p, err := ParsePlan("p.yaml", []byte(plan)); err != nil || len(p.Seeds) != 3 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	cases := []struct{ name, old, new, want string }{
		{"seeds not a count", "seeds: 3", "seeds: many", "p.yaml:5:8: seeds: expected a count or a list of seeds"},
		{"seeds out of range", "seeds: 3", "seeds: 0", "p.yaml:5:8: seeds: count must be between 1 and 100000, got 0"},
		{"seeds list of strings", "seeds: 3", "seeds: [1, x]", "p.yaml:5:8: seeds: expected a count or a list of non-negative integers"},
		{"seeds error with another", "seeds: 3\nshard_size: 10", "seeds: many\nshard_size: lots", `p.yaml:6:13: shard_size: expected an integer, got str "lots"`},
		{"unknown field in an arm", "{name: a, agent: careful}", "{name: a, agnet: careful}", "p.yaml:4:15: agnet: unknown field"},
		{"arm without agent", "{name: a, agent: careful}", "{name: a}", "p.yaml:4:5: arms[0].agent: required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlan("p.yaml", []byte(strings.Replace(plan, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant containing %q", err, tc.want)
			}
		})
	}
}

// validateClaim, one stage of Scenario.validate, on its own: every problem
// of the claim's fields, by path.
func TestValidateClaimStage(t *testing.T) {
	cases := []struct {
		name  string
		field ClaimField
		want  string // "" for none
	}{
		{"good", ClaimField{Name: "charged", Type: "boolean", Truth: "orders.A.captured", Goal: true}, ""},
		{"reserved", ClaimField{Name: ClaimStatus, Type: "string"}, `claim.fields[0].name: "status" is reserved`},
		{"bad type", ClaimField{Name: "n", Type: "float"}, `claim.fields[0].type: must be boolean, integer, number or string, got "float"`},
		{"goal without truth", ClaimField{Name: "n", Type: "integer", Goal: true}, "claim.fields[0].truth: a goal field needs a truth path"},
		{"exists is boolean", ClaimField{Name: "n", Type: "integer", Truth: "exists(orders.A)"}, "claim.fields[0].truth: exists() is a boolean; the field is integer"},
		{"count is a number", ClaimField{Name: "n", Type: "string", Truth: "count(orders)"}, "claim.fields[0].truth: count() is an integer; the field is string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var errs problems
			s := &Scenario{Claim: ClaimSpec{Fields: []ClaimField{tc.field}}}
			fields := s.validateClaim(&errs)
			if !fields[tc.field.Name] {
				t.Errorf("fields %v lack %q", fields, tc.field.Name)
			}
			got := ""
			if len(errs) > 0 {
				got = errs[0].path + ": " + errs[0].msg
			}
			if len(errs) > 1 || (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}
