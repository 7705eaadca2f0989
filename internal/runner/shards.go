package runner

import (
	"context"
	"fmt"
	"runtime"
	"time"

	armpkg "rebound/core/agent/arm"
	"rebound/core/scenario"
	"rebound/core/trial"
)

// Shard sizing. A shard is one activity: large enough that Temporal's
// per-activity cost is noise beside the trials, small enough that a lost
// worker costs little and progress moves. For scripted arms the runner
// measures what a trial of this plan costs and aims at ShardTarget per
// activity; an arm that calls a model or a process spends seconds per trial,
// so its shards hold a few trials (each is stored as it finishes).
//
// A scripted shard is written in one insert (activities' flushRows), and
// every insert makes a part of each table that the embedded engine merges
// again as the sweep grows: at most 2,000 trials per shard halves the
// parts, activities and checkpoint queries of 1,000. Measured on the
// library plan at 60,760 trials (perf of a whole `rebound run`, runs
// alternated, load 2.3-2.7): 29-30K samples with 1,000, 23-26K with 2,000
// (the merges' share 17% -> 12%), 23K with 4,000; the sweep 14.8-17.2 s
// -> 11.3-13.0 s. The checkpoint's IN set of 2,000 keys still reads only
// the granules that can hold them (storage.StoredTrials).
const (
	ShardTarget     = 1500 * time.Millisecond
	sampleTrials    = 64
	maxShardSize    = 2000
	minShardSize    = 25
	slowShardSize   = 2 // LLM arms
	processShardLen = 1 // command arms
)

// Sizing is what SizeShards decided and why.
type Sizing struct {
	ShardSize   int
	Concurrency int
	PerTrial    time.Duration // measured (scripted plans)
	Reason      string
}

// SizeShards sets the shard size of a plan that did not set one, from the
// measured cost of its trials, and a concurrency that keeps every core of a
// worker busy when the plan did not set one either. It runs a sample of the
// plan's trials in-process (scripted arms only; nothing is stored).
func SizeShards(ctx context.Context, plan *scenario.Resolved) (Sizing, error) {
	sz := Sizing{ShardSize: plan.ShardSize, Concurrency: plan.Concurrency, Reason: "set by the plan"}
	if !plan.ShardSizeAuto {
		return sz, nil
	}
	for _, a := range plan.Arms {
		switch a.Agent {
		case scenario.AgentCommand:
			sz.ShardSize, sz.Reason = processShardLen, "a command arm runs one process per trial"
		case scenario.AgentLLM:
			if sz.ShardSize != processShardLen {
				sz.ShardSize, sz.Reason = slowShardSize, "LLM arms spend seconds per trial"
			}
		}
	}
	if sz.Reason != "set by the plan" {
		plan.ShardSize = sz.ShardSize
		return sz, nil
	}
	total := plan.TrialCount()
	n := min(sampleTrials, total)
	if n == 0 {
		return sz, nil
	}
	step := max(total/n, 1)
	start := time.Now()
	ran := 0
	// The sample strides over the scenarios in the plan's order, whatever
	// order the sweep will run them in: in blocks of one seed, a stride
	// that is a multiple of one seed's trials would measure a single case.
	for i := 0; i < total && ran < n; i += step {
		key, err := plan.TrialIn(scenario.ScenarioMajor, i)
		if err != nil {
			return sz, err
		}
		ag, err := armpkg.Resolve(key.Arm)
		if err != nil {
			return sz, err
		}
		if _, err := trial.Run(ctx, trial.Spec{SweepID: "sizing", Scenario: key.Scenario, Variant: key.Variant, Arm: key.Arm, Seed: key.Seed}, ag); err != nil {
			return sz, fmt.Errorf("sizing shards: %w", err)
		}
		ran++
	}
	sz.PerTrial = time.Since(start) / time.Duration(ran)
	size := int(ShardTarget / max(sz.PerTrial, time.Microsecond))
	sz.ShardSize = min(max(size, minShardSize), maxShardSize)
	// Enough shards in flight to keep a worker's cores busy, and to spread
	// a small sweep over them.
	if plan.ConcurrencyAuto {
		sz.Concurrency = max(4, 2*runtime.NumCPU())
		plan.Concurrency = sz.Concurrency
	}
	sz.Reason = fmt.Sprintf("a trial took %s here: %d trials make a ~%s activity", sz.PerTrial.Round(time.Microsecond), sz.ShardSize, ShardTarget)
	plan.ShardSize = sz.ShardSize
	return sz, nil
}
