package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// A shard maps its trial numbers through the order stored with its sweep,
// on the worker's own path (RegisterSweep seals the plan into the store,
// RunShard opens it): a sweep stored before orders existed (no
// trial_order in its plan) keeps numbering scenario by scenario, so the
// shard ranges its workflow recorded still name the same trials; a new
// one numbers in blocks of seeds. A stored order this worker does not know is a
// permanent error, never another order's trials.
func TestShardsKeepTheStoredTrialOrder(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "activities_order"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st, RedactionKey: []byte("trial-order-test-redaction-key-0123456789")}
	plan, err := scenario.LoadPlan("../examples/plans/quickstart.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of two seeds (shards of two seeds per arm), so that the
	// orders differ on the quickstart's seeds.
	plan.ShardSize = 2 * len(plan.Arms)
	const from, to = 7, 31 // across scenarios (old order) and seeds (new)
	differ := false
	for i := from; i < to; i++ {
		old, _ := plan.TrialIn(scenario.ScenarioMajor, i)
		seedBlocks, _ := plan.TrialIn(scenario.SeedBlocks, i)
		differ = differ || old.Scenario != seedBlocks.Scenario || old.Seed != seedBlocks.Seed
	}
	if !differ {
		t.Fatalf("trials [%d, %d) are the same in both orders: the test cannot tell them apart", from, to)
	}
	for _, order := range []scenario.TrialOrder{scenario.ScenarioMajor, scenario.SeedBlocks} {
		plan.TrialOrder = order
		planJSON, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		if legacy := !strings.Contains(string(planJSON), `"trial_order"`); legacy != (order == scenario.ScenarioMajor) {
			t.Fatalf("order %q: the plan's JSON holds trial_order = %v", order, !legacy)
		}
		sweepID := fmt.Sprintf("order-%s-20261206-000000-abcdef", strings.ReplaceAll(string(order)+"legacy", "_", "-"))
		if err := a.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: sweepID, PlanJSON: string(planJSON), Trials: plan.TrialCount()}); err != nil {
			t.Fatal(err)
		}
		res, err := a.RunShard(ctx, workflows.ShardInput{SweepID: sweepID, Shard: 1, From: from, To: to})
		if err != nil || res.Trials != to-from {
			t.Fatalf("order %q: shard [%d, %d): %+v, %v", order, from, to, res, err)
		}
		trials, err := st.Trials(ctx, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tr := range trials {
			got[fmt.Sprintf("%s/%s/%d/%s", tr.Scenario, tr.Variant, tr.Seed, tr.Arm)] = true
		}
		want := map[string]bool{}
		for i := from; i < to; i++ {
			k, err := plan.TrialIn(order, i)
			if err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprintf("%s/%s/%d/%s", k.Scenario.Name, k.Variant.Name, k.Seed, k.Arm.Name)] = true
		}
		if len(got) != len(want) {
			t.Fatalf("order %q: %d trials stored, want %d", order, len(got), len(want))
		}
		for k := range want {
			if !got[k] {
				t.Errorf("order %q: trial %s of shard [%d, %d) is not stored", order, k, from, to)
			}
		}
	}

	// Registering a plan of an unknown order is refused for good.
	plan.TrialOrder = "shuffled"
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var ae *temporal.ApplicationError
	err = a.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: "order-unknown-20261206-000000-abcdef", PlanJSON: string(planJSON), Trials: plan.TrialCount()})
	if !errors.As(err, &ae) || !ae.NonRetryable() || !strings.Contains(err.Error(), `trial_order "shuffled"`) {
		t.Fatalf("registering a plan of unknown order: %v", err)
	}
	// A stored plan of an unknown order (a newer rebound registered it)
	// runs no trial here.
	const stored = "order-newer-20261206-000000-abcdef"
	if err := st.PutSweep(ctx, record.Sweep{SweepID: stored, Name: plan.Name, PlanHash: plan.Hash, PlanJSON: string(planJSON),
		TrialsPlanned: uint64(plan.TrialCount()), Arms: []string{"careful"}, Status: sweepstatus.Running}); err != nil {
		t.Fatal(err)
	}
	_, err = a.RunShard(ctx, workflows.ShardInput{SweepID: stored, From: 0, To: 3})
	if !errors.As(err, &ae) || !ae.NonRetryable() || !strings.Contains(err.Error(), `trial_order "shuffled"`) {
		t.Fatalf("a shard of a stored plan of unknown order: %v", err)
	}
	if trials, err := st.Trials(ctx, stored); err != nil || len(trials) != 0 {
		t.Fatalf("a plan of unknown order stored %d trials (%v)", len(trials), err)
	}
}
