package trial

import (
	"context"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
)

// What an upstream world costs per trial: the same shape of scenario (read
// a file, then write it) on the built-in files world, on the official
// filesystem server started per trial unsealed, and sealed, and reused
// (one sealed process, emptied between trials). Run:
//
//	go test -run '^$' -bench UpstreamTrial -benchtime 20x ./core/trial/
//
// and compare ns/op within one run (a trial starts the server twice: the
// trial's world and the path probe's, once per variant and seed).
func BenchmarkUpstreamTrial(b *testing.B) {
	devstacktest.ReferenceServers(b)
	careful, err := agent.NewScripted("careful")
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, sc *scenario.Scenario) {
		ctx := context.Background()
		v := sc.Variants[0]
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// A new seed each time: the path probe is cached per seed only
			// when the variant is thinned, so every trial pays for it as a
			// new case would.
			clearPaths()
			if _, err := Run(ctx, Spec{SweepID: "bench", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "careful", Agent: "careful"}, Seed: uint64(i)}, careful); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
	}
	files, err := scenario.LoadScenario("../../examples/scenarios/files-config-update.yaml", world.Catalog)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("builtin-files", func(b *testing.B) { run(b, files) })
	up, err := scenario.LoadScenario(upstreamExample, world.Catalog)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("upstream-sealed", func(b *testing.B) { run(b, up) })
	unsealed := *up
	u := *up.Upstream
	u.Sandbox = "none"
	unsealed.Upstream = &u
	b.Run("upstream-unsealed", func(b *testing.B) { run(b, &unsealed) })
	reused := *up
	r := *up.Upstream
	r.Reuse = true
	reused.Upstream = &r
	b.Run("upstream-sealed-reused", func(b *testing.B) { run(b, &reused) })
}

func clearPaths() {
	paths.mu.Lock()
	paths.m = map[string]pathEntry{}
	paths.mu.Unlock()
}
