package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

func runTrial(t *testing.T, file, agentName string) (*trial.Result, *scenario.Scenario) {
	t.Helper()
	sc, err := scenario.LoadScenario("../../examples/scenarios/"+file, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := agent.NewScripted(agentName)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trial.Run(context.Background(), trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: agentName}, Seed: 1}, ag)
	if err != nil {
		t.Fatal(err)
	}
	return r, sc
}

func TestPivotOfABlindResubmission(t *testing.T) {
	r, sc := runTrial(t, "refund-timeout-after-send.yaml", "blind_resubmitter")
	red, _ := redact.New(nil, []byte("k"))
	a := FromResult(r, sc, red)
	// The blind resend succeeded, but it is no recovery: it committed the
	// refund a second time.
	if a.Pivot.Failed != 2 || a.Pivot.Recovery != 0 {
		t.Fatalf("pivot = %+v", a.Pivot)
	}
	if len(a.Pivot.Unsafe) != 1 || a.Pivot.Unsafe[0].Call != 3 || strings.Join(a.Pivot.Unsafe[0].Labels, ",") != "blind resend,duplicate side effect" {
		t.Fatalf("unsafe calls = %+v", a.Pivot.Unsafe)
	}
	for _, want := range []string{"at_most_one_commit_per_intent", "reconciled_before_resubmit"} {
		if !strings.Contains(strings.Join(a.Pivot.Broken, ","), want) {
			t.Errorf("pivot.broken = %v, want %s", a.Pivot.Broken, want)
		}
	}
	if a.Pivot.Summary != "call 2 failed; unsafe after it: call 3 (blind resend, duplicate side effect); no later call advanced the goal safely; broken: at_most_one_commit_per_intent, reconciled_before_resubmit; held: calls_within_budget, dependency_order, replans_within_budget" {
		t.Errorf("summary = %q", a.Pivot.Summary)
	}
	var buf bytes.Buffer
	if err := a.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// Idempotency keys are stored as keyed hashes: equal across the retry
	// of the same key, never the key itself.
	if strings.Contains(out, "refund-case-771") || !strings.Contains(out, "hmac:") {
		t.Errorf("artifact leaks or loses the idempotency key:\n%s", out)
	}
	for _, want := range []string{"goal: Refund invoice inv-900", "timeout_after_send", "<- failed", "<- unsafe: blind resend, duplicate side effect", "failed checks:", "committed"} {
		if !strings.Contains(out, want) {
			t.Errorf("artifact text lacks %q:\n%s", want, out)
		}
	}
	if _, err := json.Marshal(a); err != nil {
		t.Fatal(err)
	}
}

func TestPivotOfACleanRecovery(t *testing.T) {
	r, sc := runTrial(t, "charge-502-twice.yaml", "careful")
	red, _ := redact.New(nil, []byte("k"))
	a := FromResult(r, sc, red)
	if a.Pivot.Failed != 1 || a.Pivot.Recovery != 3 || len(a.FailedChecks) != 0 || len(a.Pivot.Broken) != 0 {
		t.Fatalf("artifact = %+v", a.Pivot)
	}
	if got := *a.Outcomes["recovered"]; !got {
		t.Fatal("careful did not recover")
	}
}

func TestProcessIsPrinted(t *testing.T) {
	r, sc := runTrial(t, "charge-502-twice.yaml", "quitter")
	r.Outcome.Process = &agent.Process{Command: []string{"node", "agent.js"}, ExitCode: 1, TimedOut: true, Signal: "terminated", WallMs: 300000,
		Stdout: "calling payments__charge\nkey sk-abcdefghijklmnopqrstuvwx\n", Stderr: ""}
	red, _ := redact.New(nil, []byte("k"))
	a := FromResult(r, sc, red)
	var b bytes.Buffer
	if err := a.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"process: timed out (terminated) after 300000ms: node agent.js", "    | calling payments__charge", "stderr: (empty)", "[REDACTED]"} {
		if !strings.Contains(out, want) {
			t.Errorf("artifact lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-abcdef") {
		t.Errorf("secret printed:\n%s", out)
	}
}
