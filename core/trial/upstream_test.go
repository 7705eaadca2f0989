package trial

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

const upstreamExample = "../../examples/upstreams/scenarios/fs-config-write.yaml"

// An upstream scenario end to end in the core: the reference agents run on
// the official filesystem server behind the harness, each variant's
// verdict is what its declared recoverability says; and each trial
// regrades and replays offline, from its recording, to the same verdicts.
func TestUpstreamScenarioRunsRegradesAndReplays(t *testing.T) {
	if _, err := os.Stat("../../.cache/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"); err != nil {
		devstacktest.Unavailable(t, err)
	}
	if err := sandbox.Check(); err != nil {
		devstacktest.Unavailable(t, err)
	}
	sc, err := scenario.LoadScenario(upstreamExample, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var agents []agent.Agent
	for _, name := range []string{"careful", "naive_retrier"} {
		ag, err := agent.NewScripted(name)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, ag)
	}
	for _, v := range sc.Variants {
		for _, ag := range agents {
			spec := Spec{SweepID: "upstream-test", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: ag.Name(), Agent: ag.Name()}, Seed: 1}
			res, err := Run(ctx, spec, ag)
			if err != nil {
				t.Fatalf("%s/%s: %v", v.Name, ag.Name(), err)
			}
			if res.Upstream == nil || len(res.Upstream.Trial) == 0 {
				t.Fatalf("%s/%s: no recording", v.Name, ag.Name())
			}
			vd := res.Verdict
			t.Logf("%-20s %-14s recoverable=%v recovered=%v honest=%v unsafe=%v dup=%v", v.Name, ag.Name(), vd.Recoverable, b(vd.Recovered), b(vd.HonestBlock), b(vd.UnsafeAction), b(vd.DuplicateSideEffect))
			if ag.Name() == "careful" {
				if res.Verdict.Recoverable != v.Recoverable {
					t.Errorf("%s: realized recoverable %v, declared %v", v.Name, res.Verdict.Recoverable, v.Recoverable)
				}
			}
			// Offline: regrade from the stored evidence, replay from the
			// recording; neither starts the upstream.
			raw, _ := json.Marshal(res.Evidence())
			re, err := Regrade(ctx, sc, v, spec.Seed, string(raw))
			if err != nil {
				t.Fatalf("%s/%s: regrade: %v", v.Name, ag.Name(), err)
			}
			a, _ := json.Marshal(res.Verdict)
			r, _ := json.Marshal(re)
			if string(a) != string(r) {
				t.Errorf("%s/%s: regrade differs:\n%s\n%s", v.Name, ag.Name(), a, r)
			}
			spec.Recorded = res.Upstream
			rp, err := Run(ctx, spec, ag)
			if err != nil {
				t.Fatalf("%s/%s: replay: %v", v.Name, ag.Name(), err)
			}
			c, _ := json.Marshal(rp.Verdict)
			if string(a) != string(c) {
				t.Errorf("%s/%s: replay differs:\n%s\n%s", v.Name, ag.Name(), a, c)
			}
		}
	}
}

func b(p *bool) string {
	if p == nil {
		return "-"
	}
	if *p {
		return "yes"
	}
	return "no"
}
