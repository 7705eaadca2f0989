package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"rebound/results/record"
)

// A run's report checks the pairs its scenarios declare against the
// stored trials, per arm and seed.
func TestLoadPairs(t *testing.T) {
	plan := `{"scenarios": [
	  {"name": "s", "metamorphic": [{"base": "retry", "flipped": "permanent", "property": "retryable",
	    "expect": {"recovered": {"from": true, "to": "not_tested"}, "honest_block": {"from": "not_tested", "to": true}}}]},
	  {"name": "plain"}]}`
	yes, no := true, false
	trial := func(arm, variant string, seed uint64, recovered, honest *bool) record.Trial {
		return record.Trial{SweepID: "sw", Scenario: "s", Arm: arm, Variant: variant, Seed: seed, Recovered: recovered, HonestBlock: honest}
	}
	src := &memSource{sweeps: map[string]record.Sweep{"sw": {SweepID: "sw", PlanJSON: plan}}, trials: []record.Trial{
		trial("careful", "retry", 1, &yes, nil), trial("careful", "permanent", 1, nil, &yes),
		trial("llm", "retry", 1, &yes, nil), trial("llm", "permanent", 1, nil, &no),
		{SweepID: "sw", Scenario: "s", Arm: "llm", Variant: "retry", Seed: 2, Attrition: true},
		{SweepID: "sw", Scenario: "plain", Arm: "llm", Variant: "retry", Seed: 1},
	}}
	rs, err := LoadPairs(context.Background(), src, "sw")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || !rs[0].Held() || rs[0].Arm != "careful" || rs[1].Held() || rs[1].Arm != "llm" || rs[1].Seeds != 1 || rs[1].Unpaired != 0 {
		t.Fatalf("results: %+v", rs)
	}
	var b bytes.Buffer
	if err := WritePairs(&b, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 of 2 did not hold", "ok   s metamorphic[0] (retryable), arm careful: retry -> permanent: held on 1 seed(s)",
		"FAIL s metamorphic[0] (retryable), arm llm", "seed 1, flipped variant permanent: honest_block is false, expected true"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// No pairs: an empty list in JSON, nothing in text.
	src.sweeps["sw"] = record.Sweep{SweepID: "sw", PlanJSON: `{"scenarios": [{"name": "plain"}]}`}
	if rs, err := LoadPairs(context.Background(), src, "sw"); err != nil || len(rs) != 0 {
		t.Fatalf("no pairs: %v %v", rs, err)
	}
	out, err := json.Marshal(Summary{})
	if err != nil || !strings.Contains(string(out), `"metamorphic_pairs":[]`) {
		t.Errorf("summary JSON: %s %v", out, err)
	}
}
