package oracle

import (
	"context"
	"flag"
	"testing"

	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/results/artifact"
)

var flagPivotN = flag.Int("pivot-n", 1500, "generated scenarios whose trials' pivots are checked (shrunk to 300 with -short)")

// TestGeneratedPivots holds the failure artifact's causal pivot to the
// oracle's own reading (SafeRecovery) on generated scenarios: the base
// policy and every mutant kind the scenario gives an opportunity to. The
// recovery the artifact names must be the first call after the failure
// that advanced the goal safely. The mutants are the class's mutant: where
// the first success after the failure is one of their unsafe acts (a blind
// resend, an escalation, a forbidden tool, a write before its evidence),
// a pivot that names the next success names it; the artifact must not,
// and must label it unsafe.
//
// The long run: go test ./core/oracle/ -run GeneratedPivots -v -args -pivot-n 20000
func TestGeneratedPivots(t *testing.T) {
	n := *flagPivotN
	if testing.Short() && n > 300 {
		n = 300
	}
	red, err := redact.New(nil, []byte("oracle"))
	if err != nil {
		t.Fatal(err)
	}
	var trials, withFailure, withRecovery, fired, caught, bindingDiffers int
	failures := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		agents := []*Agent{{Seed: seed, Know: c.Know}}
		for _, k := range Kinds {
			if plausible(c, k) {
				agents = append(agents, &Agent{Kind: k, Seed: seed, Know: c.Know})
			}
		}
		for _, ag := range agents {
			sc := c.Scenario
			res, err := trial.Run(context.Background(), trial.Spec{SweepID: "oracle", Scenario: sc, Variant: sc.Variants[0],
				Arm: scenario.Arm{Name: ag.Name(), Agent: ag.Name()}, Seed: seed}, ag)
			if err != nil {
				t.Fatal(err)
			}
			trials++
			want := SafeRecovery(sc, &res.Ledger, ag.Served, ag.Log)
			got := artifact.FromResult(res, sc, red).Pivot
			if want.Failed > 0 {
				withFailure++
			}
			if want.Recovery > 0 {
				withRecovery++
			}
			mutantAct := want.NextOK > 0 && want.Unsafe[want.NextOK]
			if mutantAct {
				fired++
			}
			if got.Failed == want.Failed && got.Recovery == want.Recovery {
				if mutantAct {
					caught++
					if !labelled(got, want.NextOK) {
						t.Errorf("seed %d, %s: call %d is unsafe but the artifact does not label it (unsafe calls %+v)", seed, ag.Name(), want.NextOK, got.Unsafe)
					}
				}
				continue
			}
			if !sameBinding(res, ag.Served) {
				// Which step a call served is the binding check's question
				// (bindingViolations); the pivot follows the grader's.
				bindingDiffers++
				continue
			}
			failures++
			if failures <= 5 {
				t.Errorf("seed %d, %s: the artifact's pivot is failed=%d recovery=%d, the oracle's failed=%d recovery=%d (%s)\n%s",
					seed, ag.Name(), got.Failed, got.Recovery, want.Failed, want.Recovery, got.Summary, Render(c, res, ag.Log, false, "pivot"))
			}
		}
	}
	t.Logf("pivots: %d scenarios, %d trials, %d with a failure, %d with a safe recovery; %d mismatches; %d where the grader's binding differs from the agent's (not compared)",
		n, trials, withFailure, withRecovery, failures, bindingDiffers)
	t.Logf("pivot mutant: %d trials whose first success after the failure was an unsafe act, %d not named the recovery and labelled unsafe", fired, caught)
	if fired == 0 || (failures == 0 && caught != fired) {
		t.Errorf("pivot mutant: caught %d of %d", caught, fired)
	}
}

func labelled(p artifact.Pivot, call int) bool {
	for _, u := range p.Unsafe {
		if u.Call == call && len(u.Labels) > 0 {
			return true
		}
	}
	return false
}

// sameBinding: the grader bound every call to the step the agent made it
// for.
func sameBinding(res *trial.Result, served []Served) bool {
	if len(res.Verdict.Bindings) != len(served) {
		return false
	}
	for i, b := range res.Verdict.Bindings {
		if b.Step != served[i].Step || string(b.Role) != served[i].Role {
			return false
		}
	}
	return true
}
