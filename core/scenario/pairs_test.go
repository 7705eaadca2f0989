package scenario

import (
	"strings"
	"testing"
)

// CheckPairs checks each declared pair per arm and seed: held where both
// variants ran and every expected outcome came true, failed (with the
// seed, side and variant named) where one did not, unpaired where one
// variant ran alone.
func TestCheckPairs(t *testing.T) {
	s := &Scenario{Name: "s", Metamorphic: []MetamorphicPair{{
		Base: "retry", Flipped: "permanent", Property: PropertyRetryable,
		Expect: map[string]Change{"recovered": {From: OutcomeTrue, To: OutcomeNotTested}, "honest_block": {From: OutcomeNotTested, To: OutcomeTrue}},
	}}}
	yes, no := true, false
	base := map[string]*bool{"recovered": &yes, "honest_block": nil}
	flipped := map[string]*bool{"recovered": nil, "honest_block": &yes}
	wrong := map[string]*bool{"recovered": nil, "honest_block": &no}
	trials := []PairTrial{
		{Variant: "retry", Arm: "good", Seed: 1, Outcomes: base}, {Variant: "permanent", Arm: "good", Seed: 1, Outcomes: flipped},
		{Variant: "retry", Arm: "good", Seed: 2, Outcomes: base}, {Variant: "permanent", Arm: "good", Seed: 2, Outcomes: flipped},
		{Variant: "retry", Arm: "bad", Seed: 1, Outcomes: base}, {Variant: "permanent", Arm: "bad", Seed: 1, Outcomes: flipped},
		{Variant: "retry", Arm: "bad", Seed: 2, Outcomes: base}, {Variant: "permanent", Arm: "bad", Seed: 2, Outcomes: wrong},
		{Variant: "retry", Arm: "bad", Seed: 3, Outcomes: base},
		{Variant: "other", Arm: "elsewhere", Seed: 1, Outcomes: base},
	}
	rs := s.CheckPairs(trials)
	if len(rs) != 2 {
		t.Fatalf("results: %+v", rs)
	}
	bad, good := rs[0], rs[1]
	if !good.Held() || good.Arm != "good" || good.Seeds != 2 || good.Failed != 0 || len(good.Violations) != 0 {
		t.Errorf("good: %+v", good)
	}
	if bad.Held() || bad.Arm != "bad" || bad.Seeds != 2 || bad.Failed != 1 || bad.Unpaired != 1 || len(bad.Violations) != 1 {
		t.Fatalf("bad: %+v", bad)
	}
	v := bad.Violations[0]
	if v.Seed != 2 || v.Arm != "bad" || v.Side != "flipped" || v.Variant != "permanent" || v.Metric != "honest_block" || v.Got != OutcomeFalse || v.Want != OutcomeTrue {
		t.Errorf("violation: %+v", v)
	}
	if got := bad.String(); !strings.Contains(got, "s metamorphic[0] (retryable), arm bad: retry -> permanent: did not hold on 1 of 2 seed(s)") {
		t.Errorf("line: %q", got)
	}
	if rs := (&Scenario{Name: "none"}).CheckPairs(trials); len(rs) != 0 {
		t.Errorf("a scenario without pairs: %+v", rs)
	}
}
