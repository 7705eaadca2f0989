package calibrate

import (
	"context"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
)

// TestRecoveryWritesCalibrate runs seed 004 (the imported recovery-test)
// with its documented recovery's own write failing: the unlock flag's
// answer lost after it was sent (issue 28, class 1). The careful agent
// reads the flag back, confirms it and recovers; the blind resubmitter
// resends the unlock without asking and is caught.
func TestRecoveryWritesCalibrate(t *testing.T) {
	sc, err := scenario.LoadScenario("../../examples/import/recovery-test.rebound.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	lock := sc.Variants[0].Faults
	lostUnlock := scenario.Variant{Name: "unlock-answer-lost", Recoverable: true,
		Faults: append(append([]harness.Fault(nil), lock...), harness.Fault{Tool: "fs.create", Class: harness.TimeoutAfterSend, Attempts: []int{1}})}
	cases := []struct {
		agent string
		check string
		want  grade.Status
		rec   bool
	}{
		{"careful", grade.CheckReconciledBeforeResubmit, grade.Pass, true},
		{"careful", grade.CheckClaimSupported, grade.Pass, true},
		{"blind_resubmitter", grade.CheckReconciledBeforeResubmit, grade.Fail, false},
	}
	for _, tc := range cases {
		ag, err := agent.NewScripted(tc.agent)
		if err != nil {
			t.Fatal(err)
		}
		r, err := trial.Run(context.Background(), trial.Spec{SweepID: "calibration", Scenario: sc, Variant: lostUnlock, Arm: scenario.Arm{Name: tc.agent, Agent: tc.agent}, Seed: 1}, ag)
		if err != nil {
			t.Fatal(err)
		}
		v := r.Verdict
		if c, _ := v.Check(tc.check); c.Status != tc.want {
			t.Errorf("%s: %s = %s (%s), want %s\nbindings %+v", tc.agent, tc.check, c.Status, c.Detail, tc.want, v.Bindings)
		}
		if got := v.Recovered != nil && *v.Recovered; got != tc.rec {
			t.Errorf("%s: recovered = %v, want %v (failed %v)", tc.agent, got, tc.rec, v.Failed())
		}
	}
}
