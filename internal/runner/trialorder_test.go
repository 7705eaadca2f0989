package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/activities"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/workflows"
)

// A sweep stopped early by its max_usd has measured every case of its
// plan, on its first seeds: a new sweep numbers its trials in blocks of
// seeds (of one seed here: shards of one trial), so what it stored is a
// prefix of that order, and such a prefix holds every scenario. Scenario by scenario (the order of sweeps stored before),
// the same number of trials would have held none of the plan's last
// scenario; the test checks that too, so it cannot pass on the old order.
func TestStoppedSweepCoversEveryScenario(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every model request costs $1 (1,000 prompt tokens at $1,000/M): a
	// trial is two requests (its answer, then its claim).
	model := llmtest.New(t)
	model.Always(llmtest.Text(`{"status":"completed"}`).WithUsage(1000, 0))

	dir := t.TempDir()
	var scenarios []string
	for _, name := range []string{"inventory-timeout-once", "charge-502-twice", "refund-timeout-after-send"} {
		abs, err := filepath.Abs("../../examples/scenarios/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, fmt.Sprintf("%q", abs))
	}
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("Recover from tool failures carefully.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := func(maxUSD float64) string {
		body := fmt.Sprintf(`name: stopped-early
scenarios: [%s]
seeds: 4
shard_size: 1
concurrency: 1
max_usd: %g
arms:
  - name: model
    agent: llm
    llm: {base_url: %q, model: order-model, prompt: prompt.md, input_usd_per_mtok: 1000, output_usd_per_mtok: 1000}
`, strings.Join(scenarios, ", "), maxUSD, model.BaseURL())
		path := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plan, err := scenario.LoadPlan(planFile(1), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	cases := plan.TrialCount() / len(plan.Seeds)
	// The cap is reached during the first seed's last case ($2 a trial).
	plan, err = scenario.LoadPlan(planFile(float64(2*cases-1)), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	if plan.TrialOrder != scenario.SeedBlocks {
		t.Fatalf("a new plan's trial order is %q", plan.TrialOrder)
	}

	store, c := openStack(t, ctx, srv, lib, "runner_order")
	queue := startWorker(t, c, "runner-order", &activities.Activities{Store: store, RedactionKey: testRedactionKey})
	sweepID, final := runSweep(t, ctx, c, queue, plan)
	if final.Status != workflows.StatusMaxUSD {
		t.Fatalf("final progress = %+v, want the sweep stopped by max_usd", final)
	}
	trials, err := store.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	n := len(trials)
	if n < cases || n >= plan.TrialCount() {
		t.Fatalf("%d of %d trials stored; want the first seed's %d at least, and not all", n, plan.TrialCount(), cases)
	}
	// What it stored is the first n trials of its order: every case on the
	// first seed.
	stored := map[string]bool{}
	for _, tr := range trials {
		stored[fmt.Sprintf("%s/%s/%d/%s", tr.Scenario, tr.Variant, tr.Seed, tr.Arm)] = true
	}
	covered := map[string]bool{}
	for i := range n {
		k, err := plan.Trial(i)
		if err != nil {
			t.Fatal(err)
		}
		if !stored[keyOf(k)] {
			t.Errorf("trial %d (%s) of the sweep's order is not stored, but %d trials are", i, keyOf(k), n)
		}
		covered[k.Scenario.Name] = true
	}
	for _, s := range plan.Scenarios {
		if !covered[s.Name] {
			t.Errorf("scenario %s has no stored trial", s.Name)
		}
	}
	// Scenario by scenario, the first n trials leave the last scenario out.
	last := plan.Scenarios[len(plan.Scenarios)-1].Name
	for i := range n {
		if k, _ := plan.TrialIn(scenario.ScenarioMajor, i); k.Scenario.Name == last {
			t.Fatalf("the test cannot tell the orders apart: scenario by scenario, trial %d of the first %d is already of %s", i, n, last)
		}
	}
}

func keyOf(k scenario.TrialKey) string {
	return fmt.Sprintf("%s/%s/%d/%s", k.Scenario.Name, k.Variant.Name, k.Seed, k.Arm.Name)
}
