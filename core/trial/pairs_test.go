package trial

import (
	"context"
	"testing"

	"rebound/core/scenario"
	"rebound/core/world"
)

// CheckPairs runs a scenario's declared pairs: they hold for the careful
// agent, and an agent that resends a charge blindly breaks the pair whose
// base expects a recovery, with the scenario, variant and agent named.
func TestCheckPairsRunsThePairs(t *testing.T) {
	sc, err := scenario.LoadScenario("../../examples/scenarios/charge-timeout-before-send.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	rs, trials, err := CheckPairs(context.Background(), sc, []string{"careful", "blind_resubmitter"}, []uint64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]bool{}
	for _, p := range sc.Metamorphic {
		variants[p.Base], variants[p.Flipped] = true, true
	}
	if trials != 2*2*len(variants) || len(rs) != 2*len(sc.Metamorphic) {
		t.Fatalf("%d trials, %d results", trials, len(rs))
	}
	broken := false
	for _, r := range rs {
		switch r.Arm {
		case "careful":
			if !r.Held() || r.Seeds != 2 {
				t.Errorf("careful: %s %+v", r, r.Violations)
			}
		case "blind_resubmitter":
			if r.Pair == 0 && !r.Held() {
				broken = true
				v := r.Violations[0]
				if v.Scenario != sc.Name || v.Arm != "blind_resubmitter" || v.Variant != "timeout-after-send" || v.Side != "base" {
					t.Errorf("violation: %+v", v)
				}
			}
		}
	}
	if !broken {
		t.Errorf("the blind resend did not break pair 0: %v", rs)
	}
	if _, _, err := CheckPairs(context.Background(), sc, []string{"no_such_agent"}, []uint64{1}); err == nil {
		t.Error("an unknown agent is accepted")
	}
}
