package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

// Redaction takes nothing grading reads: every example scenario's variants,
// run by every scripted agent, regrade from their stored (redacted)
// evidence to the verdict they were stored with, and the identifiers in
// that evidence (argument keys, keyed hashes of idempotency keys) are
// stored as they are.
func TestRedactedEvidenceRegradesTheSame(t *testing.T) {
	files, err := filepath.Glob("../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("example scenarios: %v %v", files, err)
	}
	red, err := redact.NewWith(redact.Options{HashKey: []byte("rows-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	trials := 0
	for _, f := range files {
		sc, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		stored := regradePlan(sc, red)
		for _, v := range sc.Variants {
			for _, name := range agent.ScriptedNames() {
				ag, err := agent.NewScripted(name)
				if err != nil {
					t.Fatal(err)
				}
				spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: name, Agent: name}, Seed: 1}
				r, err := trial.Run(ctx, spec, ag)
				if err != nil {
					t.Fatal(err)
				}
				trials++
				ev := EvidenceJSON(r.Evidence(), red)
				again, err := trial.Regrade(ctx, stored, v, 1, ev)
				if err != nil {
					t.Fatalf("%s/%s %s: %v", sc.Name, v.Name, name, err)
				}
				if got, want := outcomes(again), outcomes(r.Verdict); got != want {
					t.Errorf("%s/%s %s: regraded %s, stored %s", sc.Name, v.Name, name, got, want)
				}
				var back trial.Evidence
				if err := json.Unmarshal([]byte(ev), &back); err != nil {
					t.Fatal(err)
				}
				for i, a := range back.Ledger.Attempts {
					if a.ArgsKey != r.Ledger.Attempts[i].ArgsKey {
						t.Errorf("%s/%s %s: args_key %q stored as %q", sc.Name, v.Name, name, r.Ledger.Attempts[i].ArgsKey, a.ArgsKey)
					}
					for k, x := range a.Args {
						if s, ok := x.(string); ok && strings.HasPrefix(k, "idempotency") && !strings.HasPrefix(s, "hmac:") {
							t.Errorf("%s/%s %s: %s stored as %q", sc.Name, v.Name, name, k, s)
						}
					}
				}
			}
		}
	}
	if trials < 500 {
		t.Fatalf("only %d trials", trials)
	}
}

// regradePlan is the scenario as regrade compares it with stored evidence
// (results/regrade: the plan's arguments redacted by the sweep's redactor).
func regradePlan(sc *scenario.Scenario, red *redact.Redactor) *scenario.Scenario {
	cp := *sc
	cp.Plan = make([]scenario.Step, len(sc.Plan))
	args := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		r, _ := red.Value(m).(map[string]any)
		return r
	}
	for i, st := range sc.Plan {
		st.Args, st.Corrected = args(st.Args), args(st.Corrected)
		st.Fallbacks = append([]scenario.Fallback(nil), st.Fallbacks...)
		for j := range st.Fallbacks {
			st.Fallbacks[j].Args = args(st.Fallbacks[j].Args)
		}
		st.Recover = append([]scenario.Fallback(nil), st.Recover...)
		for j := range st.Recover {
			st.Recover[j].Args = args(st.Recover[j].Args)
		}
		cp.Plan[i] = st
	}
	return &cp
}

func outcomes(v grade.Verdict) string {
	var b strings.Builder
	for _, m := range outcome.Stored {
		if p := v.Metric(m); p == nil {
			fmt.Fprintf(&b, "%s=- ", m)
		} else {
			fmt.Fprintf(&b, "%s=%v ", m, *p)
		}
	}
	return b.String()
}
