package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
)

// declaredPayments is the built-in payments world re-expressed as a
// declared world, relative to the example scenarios.
const declaredPayments = "./worlds/payments.yaml"

var worldLine = regexp.MustCompile(`(?m)^world:[ \t]*payments[ \t]*(#.*)?$`)

// paymentsPairs loads every library scenario of the payments world twice:
// as written (the built-in world) and with world: naming the declared
// payments world, everything else byte for byte the same.
func paymentsPairs(t testing.TB) (builtin, declared []*scenario.Scenario) {
	t.Helper()
	files, err := filepath.Glob("../../examples/scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !worldLine.Match(data) {
			continue
		}
		b, err := scenario.ParseScenario(f, data, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		redone := worldLine.ReplaceAll(data, []byte("world: "+declaredPayments))
		d, err := scenario.ParseScenario(f, redone, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		if b.World != "payments" || d.WorldFile == "" || len(b.Variants) != len(d.Variants) {
			t.Fatalf("%s: the pair is not a payments scenario and its declared twin", f)
		}
		builtin, declared = append(builtin, b), append(declared, d)
	}
	if len(builtin) < 10 {
		t.Fatalf("only %d payments scenarios in the library", len(builtin))
	}
	return builtin, declared
}

// equivalenceSeeds are the seeds the equivalence runs every trial with.
func equivalenceSeeds(t testing.TB) []uint64 {
	n := 50
	if testing.Short() {
		n = 3
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// comparable is what must be identical between a trial on the built-in
// world and on its declared twin: the verdict (every check, every
// outcome, the claim, the bindings), the ledger (every call, its result,
// every commit), the final world state and the realized path.
func comparable(t testing.TB, r *trial.Result) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Verdict     grade.Verdict
		Ledger      any
		World       map[string]any
		EndMs       int64
		ToolCostUSD float64
		Claim       string
		Recoverable bool
	}{r.Verdict, r.Ledger, r.World, r.EndMs, r.ToolCostUSD, r.Outcome.Claim, r.Recoverable})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The library's payments scenarios give identical verdicts, trial by
// trial, on the built-in payments world and on the same world declared in
// YAML: every variant (generated ones included), all eight reference
// agents, every seed. It compares the verdict and everything it rests on
// (ledger, final state, claim), byte for byte as JSON.
func TestDeclaredPaymentsEquivalence(t *testing.T) {
	builtin, declared := paymentsPairs(t)
	seeds := equivalenceSeeds(t)
	ctx := context.Background()
	trials, mismatches := 0, 0
	for i := range builtin {
		b, d := builtin[i], declared[i]
		for vi := range b.Variants {
			for _, name := range agent.ScriptedNames() {
				for _, seed := range seeds {
					run := func(sc *scenario.Scenario) *trial.Result {
						ag, err := agent.NewScripted(name)
						if err != nil {
							t.Fatal(err)
						}
						r, err := trial.Run(ctx, trial.Spec{SweepID: "equivalence", Scenario: sc, Variant: sc.Variants[vi], Arm: scenario.Arm{Name: name, Agent: name}, Seed: seed}, ag)
						if err != nil {
							t.Fatal(err)
						}
						return r
					}
					rb, rd := run(b), run(d)
					trials++
					if cb, cd := comparable(t, rb), comparable(t, rd); !bytes.Equal(cb, cd) {
						mismatches++
						if mismatches <= 3 {
							t.Errorf("%s/%s %s seed %d differs:\nbuilt-in %s\ndeclared %s", b.Name, b.Variants[vi].Name, name, seed, cb, cd)
						}
					}
				}
			}
		}
	}
	t.Logf("%d payments scenarios, %d trials on each world, %d mismatches", len(builtin), trials, mismatches)
	if mismatches > 0 {
		t.Errorf("%d of %d trials differ between the built-in and the declared payments world", mismatches, trials)
	}
}

// BenchmarkDeclaredPayments runs the library's payments scenarios (every
// variant, every reference agent, seed 1) on the built-in payments world
// and on its declared twin: one op is one pass over every trial. Compare
// the two us/trial:
//
//	go test -run '^$' -bench DeclaredPayments -benchtime 20x ./core/calibrate/
func BenchmarkDeclaredPayments(b *testing.B) {
	builtin, declared := paymentsPairs(b)
	for _, w := range []struct {
		name      string
		scenarios []*scenario.Scenario
	}{{"builtin", builtin}, {"declared", declared}} {
		b.Run(w.name, func(b *testing.B) {
			ctx := context.Background()
			agents := agent.ScriptedNames()
			trials := 0
			for _, sc := range w.scenarios {
				trials += len(sc.Variants) * len(agents)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := Run(ctx, w.scenarios, agents, grade.Checks); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(trials), "trials")
			if b.Elapsed() > 0 && b.N > 0 {
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(trials), "us/trial")
			}
		})
	}
}
