package oracle

import (
	"context"
	"flag"
	"io"
	"slices"
	"testing"

	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world"
)

var flagAimN = flag.Int("aim-n", 600, "generated scenarios whose generated variants' aim is checked (shrunk to 150 with -short)")

// TestGeneratedVariantsStrikeTheirStep (issue 28, class 8): every variant
// the generator makes from tool metadata (scenario.GenerateChecked) must
// first strike the plan step it names. The oracle checks it on its own
// generated scenarios, end to end: its base policy follows the plan through
// the real harness and world under the variant's faults, and the first
// call a fault fires on must be one the policy made for the named step
// (never an earlier step's call). The variants the generator fixed or
// dropped are the class's mutant: as first generated, each must strike
// earlier (the check would have caught it), and as fixed, it must not.
//
// The long run: go test ./core/oracle/ -run StrikeTheirStep -v -args -aim-n 20000
func TestGeneratedVariantsStrikeTheirStep(t *testing.T) {
	n := *flagAimN
	if testing.Short() && n > 150 {
		n = 150
	}
	var variants, checked, adjusted, dropped, caught int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		sc := c.Scenario
		if len(sc.Plan) < 2 {
			continue
		}
		clean, err := follow(sc, nil, seed)
		if err != nil {
			t.Fatal(err)
		}
		vs, adj := scenario.GenerateChecked(sc, catalogOf(sc.World))
		variants += len(vs)
		for _, v := range vs {
			target := slices.IndexFunc(sc.Plan, func(st scenario.Step) bool { return st.ID == v.Generated.Step })
			if !reaches(clean, target) {
				continue // the plan does not reach the step without faults: nothing to aim at
			}
			r, err := follow(sc, v.Faults, seed)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if at, step := firstStrike(r); at > 0 && step != target {
				t.Errorf("seed %d, variant %s (step %s): its first fault fired at call %d, made for step %d\n%s",
					seed, v.Name, v.Generated.Step, at, step, YAML(sc))
			}
		}
		for _, a := range adj {
			target := slices.IndexFunc(sc.Plan, func(st scenario.Step) bool { return st.ID == a.Original.Generated.Step })
			if !reaches(clean, target) {
				continue
			}
			adjusted++
			if a.Dropped {
				dropped++
			}
			r, err := follow(sc, a.Original.Faults, seed)
			if err != nil {
				t.Fatal(err)
			}
			switch at, step := firstStrike(r); {
			case at > 0 && step != target:
				caught++ // as first generated, it struck an earlier step
			case a.Dropped && at > 0 && struckTwice(r, at):
				caught++ // it struck its step, then the recovery it counts on
			default:
				t.Errorf("seed %d: %s was adjusted (%s), but as generated it first struck call %d, made for step %d, its own", seed, a.Variant, a.Msg, at, step)
			}
		}
	}
	t.Logf("aim: %d scenarios, %d generated variants, %d run against the plan; %d adjusted by the generator (%d dropped, %d fixed), %d of them caught striking early as first generated",
		n, variants, checked, adjusted, dropped, adjusted-dropped, caught)
	if adjusted == 0 || caught != adjusted {
		t.Errorf("the generator adjusted %d variants; %d were caught striking early as first generated", adjusted, caught)
	}
}

// followed is one run of the oracle's base policy.
type followed struct {
	ledger *harness.Ledger
	served []Served
}

// follow runs the oracle's base policy on sc under faults in a fresh world.
func follow(sc *scenario.Scenario, faults []harness.Fault, seed uint64) (followed, error) {
	w, _, err := world.Open(sc.WorldRef(), sc.Initial)
	if err != nil {
		return followed{}, err
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	sched, err := harness.NewSchedule(faults, seed)
	if err != nil {
		return followed{}, err
	}
	d, err := harness.NewDispatcher(harness.Config{World: w, Offered: sc.Tools, Permissions: sc.Permissions, Schedule: sched, Budget: sc.Budget})
	if err != nil {
		return followed{}, err
	}
	ag := &Agent{Seed: seed}
	if _, err := ag.Run(context.Background(), env{d}, task(sc)); err != nil {
		return followed{}, err
	}
	return followed{ledger: d.Ledger(), served: ag.Served}, nil
}

// reaches: the run made a clean call for the step.
func reaches(r followed, step int) bool {
	for i, a := range r.ledger.Attempts {
		if i < len(r.served) && r.served[i].Step == step && a.Result.OK {
			return true
		}
	}
	return false
}

// struckTwice: the call after the first struck one was struck too (the
// recovery a variant counts on).
func struckTwice(r followed, at int) bool {
	return at < len(r.ledger.Attempts) && r.ledger.Attempts[at].Fault != nil
}

// firstStrike returns the first call an injected fault fired on and the
// step the policy made it for (0, -1: none fired).
func firstStrike(r followed) (int, int) {
	for i, a := range r.ledger.Attempts {
		if a.Fault != nil {
			step := -1
			if i < len(r.served) {
				step = r.served[i].Step
			}
			return a.Index, step
		}
	}
	return 0, -1
}
