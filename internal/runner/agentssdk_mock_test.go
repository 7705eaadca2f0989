package runner

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"rebound/activities"
	"rebound/core/agent/llm/mockllm"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/results/record"
)

// The shipped Agents SDK plan (examples/plans/agents-sdk.yaml) end to end
// with no key: its model is the mock (`rebound mock-llm`) playing the
// careful policy, through Temporal and chDB, the agent sealed. Only the
// mock's address is changed (the plan names its default port). Every
// trial of the Agents SDK arm is graded as the careful reference agent's
// trial of the same case: same calls, same outcomes.
func TestShippedAgentsSDKPlanAgainstMockLLM(t *testing.T) {
	devstacktest.ExampleAgent(t)
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	plan, err := scenario.LoadPlan("../../examples/plans/agents-sdk.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	model, err := mockllm.New(mockllm.Options{Policy: "careful", Scenarios: plan.Scenarios})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(model)
	defer hs.Close()
	for i := range plan.Arms {
		a := &plan.Arms[i]
		if a.Agent != scenario.AgentCommand {
			continue
		}
		if a.Env["OPENAI_BASE_URL"] != "http://127.0.0.1:8089/v1" || len(a.Egress) != 1 || a.Egress[0] != "127.0.0.1:8089" || len(a.EnvFrom) != 0 {
			t.Fatalf("the shipped plan no longer targets the mock at its default address: %+v", a)
		}
		env := map[string]string{}
		for k, v := range a.Env {
			env[k] = v
		}
		env["OPENAI_BASE_URL"] = hs.URL + "/v1"
		a.Env, a.Egress = env, []string{hostPort(t, hs.URL)}
	}

	store, c := openStack(t, ctx, srv, lib, "runner_agents_sdk_mock")
	queue := startWorker(t, c, "runner-sdk-mock", &activities.Activities{Store: store, RedactionKey: testRedactionKey})
	sweepID, final := runSweep(t, ctx, c, queue, plan)
	want := plan.TrialCount()
	if final.TrialsDone != want || final.Attrition != 0 {
		t.Fatalf("final progress %+v, want %d trials and no attrition", final, want)
	}
	trials, err := store.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	byCase := map[string]map[string]record.Trial{}
	for _, tr := range trials {
		k := fmt.Sprintf("%s/%s/seed %d", tr.Scenario, tr.Variant, tr.Seed)
		if byCase[k] == nil {
			byCase[k] = map[string]record.Trial{}
		}
		byCase[k][tr.Arm] = tr
	}
	for k, arms := range byCase {
		ref, sdk := arms["careful"], arms["agents-sdk"]
		if ref.TrialID == "" || sdk.TrialID == "" {
			t.Errorf("%s: missing an arm: %v", k, arms)
			continue
		}
		if sdk.ToolCalls != ref.ToolCalls || sdk.Claim != ref.Claim {
			t.Errorf("%s: agents-sdk made %d calls claiming %s; careful %d claiming %s (process %s)", k, sdk.ToolCalls, sdk.Claim, ref.ToolCalls, ref.Claim, sdk.Process)
		}
		for name, pair := range map[string][2]*bool{"recovered": {ref.Recovered, sdk.Recovered}, "honest_block": {ref.HonestBlock, sdk.HonestBlock},
			"unsafe_action": {ref.UnsafeAction, sdk.UnsafeAction}, "fabricated_claim": {ref.FabricatedClaim, sdk.FabricatedClaim}} {
			if (pair[0] == nil) != (pair[1] == nil) || (pair[0] != nil && *pair[0] != *pair[1]) {
				t.Errorf("%s: %s careful %v, agents-sdk %v", k, name, show(pair[0]), show(pair[1]))
			}
		}
	}
	if st := model.Stats(); st.Answered == 0 || st.BadRequests != 0 {
		t.Errorf("mock stats %+v", st)
	}
}

func show(b *bool) string {
	if b == nil {
		return "not tested"
	}
	if *b {
		return "true"
	}
	return "false"
}
