package runner

import (
	"context"
	"testing"

	"rebound/core/scenario"
	"rebound/core/world"
)

// Shards are sized from the measured cost of the plan's own trials when the
// plan sets no shard_size; a plan's explicit size stands; model and process
// arms get small shards.
func TestSizeShards(t *testing.T) {
	explicit := &scenario.Resolved{ShardSize: 10, Arms: []scenario.Arm{{Name: "c", Agent: "careful"}}}
	sz, err := SizeShards(context.Background(), explicit)
	if err != nil || sz.ShardSize != 10 || explicit.ShardSize != 10 || sz.Reason != "set by the plan" {
		t.Fatalf("explicit size changed: %+v (%v)", sz, err)
	}

	// The shipped plans set neither: nobody should have to tune them.
	for _, f := range []string{"quickstart", "library"} {
		p, err := scenario.LoadPlan("../../examples/plans/"+f+".yaml", world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		if !p.ShardSizeAuto || !p.ConcurrencyAuto {
			t.Fatalf("%s.yaml sets shard_size or concurrency (auto %v %v)", f, p.ShardSizeAuto, p.ConcurrencyAuto)
		}
	}
	plan, err := scenario.LoadPlan("../../examples/plans/library.yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	sz, err = SizeShards(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	// Scripted trials cost well under a millisecond of work each: a 1.5 s
	// activity holds hundreds of them.
	if sz.PerTrial <= 0 || sz.ShardSize < minShardSize || sz.ShardSize > maxShardSize || plan.ShardSize != sz.ShardSize {
		t.Fatalf("sizing = %+v, plan shard size %d", sz, plan.ShardSize)
	}
	if want := int(ShardTarget / sz.PerTrial); want >= minShardSize && want <= maxShardSize && sz.ShardSize != want {
		t.Fatalf("shard size %d, want target/cost = %d", sz.ShardSize, want)
	}
	if plan.Concurrency < 4 {
		t.Fatalf("concurrency %d", plan.Concurrency)
	}

	llm := &scenario.Resolved{ShardSize: 25, ShardSizeAuto: true, Arms: []scenario.Arm{{Name: "m", Agent: scenario.AgentLLM}}}
	if sz, _ := SizeShards(context.Background(), llm); sz.ShardSize != slowShardSize || llm.ShardSize != slowShardSize {
		t.Fatalf("llm sizing = %+v", sz)
	}
	cmd := &scenario.Resolved{ShardSize: 1, ShardSizeAuto: true, Arms: []scenario.Arm{{Name: "m", Agent: scenario.AgentLLM}, {Name: "c", Agent: scenario.AgentCommand}}}
	if sz, _ := SizeShards(context.Background(), cmd); sz.ShardSize != processShardLen {
		t.Fatalf("command sizing = %+v", sz)
	}
}
