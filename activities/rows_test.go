package activities

import (
	"context"
	"errors"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

func refundTrial(t *testing.T, agentName string) (*trial.Result, trial.Spec) {
	t.Helper()
	sc, err := scenario.LoadScenario("../examples/scenarios/refund-timeout-after-send.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := agent.NewScripted(agentName)
	if err != nil {
		t.Fatal(err)
	}
	spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: agentName, Agent: agentName}, Seed: 3}
	r, err := trial.Run(context.Background(), spec, ag)
	if err != nil {
		t.Fatal(err)
	}
	return r, spec
}

// Rows carry every outcome (NULL where not tested), one row per call, and
// nothing secret: idempotency keys become keyed hashes, secret shapes go.
func TestRowsRedactAndMapOutcomes(t *testing.T) {
	r, _ := refundTrial(t, "blind_resubmitter")
	r.Outcome.Answer = "done; used key sk-live-0123456789abcdefghij"
	red, err := redact.New(nil, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	tr, calls := Rows(r, red)
	if tr.TrialID != r.TrialID || tr.Scenario != "refund-timeout-after-send" || tr.Seed != 3 || tr.Weight != 10 {
		t.Fatalf("trial row = %+v", tr)
	}
	if tr.DuplicateSideEffect == nil || !*tr.DuplicateSideEffect || tr.HonestBlock != nil || tr.Recovered == nil || *tr.Recovered {
		t.Fatalf("outcomes: dup=%v honest=%v recovered=%v", tr.DuplicateSideEffect, tr.HonestBlock, tr.Recovered)
	}
	if strings.Contains(tr.Answer, "sk-live") || !strings.Contains(tr.Answer, "[REDACTED]") {
		t.Fatalf("answer not redacted: %q", tr.Answer)
	}
	if len(calls) != len(r.Ledger.Attempts) {
		t.Fatalf("%d call rows for %d attempts", len(calls), len(r.Ledger.Attempts))
	}
	committed := 0
	for _, c := range calls {
		if strings.Contains(c.Args, "refund-case-771") {
			t.Fatalf("idempotency key stored in clear: %s", c.Args)
		}
		if c.Committed {
			committed++
		}
	}
	if committed != 2 || calls[1].FaultClass != "timeout_after_send" || !strings.Contains(calls[1].Args, "hmac:") {
		t.Fatalf("calls = %+v", calls)
	}
	if strings.Join(tr.FaultClasses, ",") != "timeout_after_send" {
		t.Fatalf("fault classes = %v", tr.FaultClasses)
	}
}

// An attrition row is stored but never graded: every outcome is NULL.
func TestAttritionRowIsUngraded(t *testing.T) {
	_, spec := refundTrial(t, "careful")
	red, _ := redact.New(nil, []byte("k"))
	row := AttritionRow(spec, "llm:m", errors.New("provider kept answering 429 (Bearer abcdefghijklmnopqrstu)"), red)
	if !row.Attrition || row.TrialID != spec.ID() || strings.Contains(row.Error, "abcdefghijklmnopqrstu") {
		t.Fatalf("row = %+v", row)
	}
	for _, m := range outcome.Stored {
		if row.Outcome(m) != nil {
			t.Fatalf("attrition row graded %s", m)
		}
	}
}

// A command arm's process record is stored with its output redacted; an
// attrition exit keeps its record on the attrition row.
func TestRowsKeepTheProcessRecord(t *testing.T) {
	r, _ := refundTrial(t, "careful")
	r.Outcome.Process = &agent.Process{Command: []string{"node", "a.js"}, ExitCode: 2, Stdout: "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", Stderr: "boom"}
	red, err := redact.New(nil, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := Rows(r, red)
	if !strings.Contains(tr.Process, `"exit_code":2`) || !strings.Contains(tr.Process, "boom") || strings.Contains(tr.Process, "ghp_") {
		t.Errorf("process column %s", tr.Process)
	}
	if tr, _ := Rows(&trial.Result{TrialID: "x"}, red); tr.Process != "" {
		t.Errorf("an arm without a process stores %q", tr.Process)
	}
}

// A command arm's env_from values are secrets the worker knows: redacted by
// value from every column.
func TestKnownSecretsIncludeCommandArmEnvFrom(t *testing.T) {
	t.Setenv("ROWS_TEST_AGENT_KEY", "plainvalue-without-a-shape-42")
	plan := &scenario.Resolved{Arms: []scenario.Arm{{Name: "ext", Agent: scenario.AgentCommand, Command: []string{"x"},
		EnvFrom: map[string]string{"OPENAI_API_KEY": "ROWS_TEST_AGENT_KEY"}}}}
	got := KnownSecrets(plan)
	if len(got) != 1 || got[0] != "plainvalue-without-a-shape-42" {
		t.Fatalf("known secrets %v", got)
	}
}
