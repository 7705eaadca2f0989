package trial

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

const upstreamExample = "../../examples/upstreams/scenarios/fs-config-write.yaml"

const upstreamExamples = "../../examples/upstreams/scenarios/*.yaml"

// Upstream scenarios end to end in the core, on the official reference
// servers (filesystem, memory) behind the harness: every scripted reference
// agent on every variant. The careful agent's realized recoverability is
// every variant's declared one, and it never acts unsafely; each flawed
// agent shows its flaw somewhere; and every trial regrades and replays
// offline, from its recording, to the same verdict.
func TestUpstreamScenariosCalibrate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: runs the reference servers (about 300 trials)")
	}
	devstacktest.ReferenceServers(t)
	if err := sandbox.Check(); err != nil {
		devstacktest.Unavailable(t, err)
	}
	files, err := filepath.Glob(upstreamExamples)
	if err != nil || len(files) < 8 {
		t.Fatalf("%d upstream example scenarios (%v), want at least 8", len(files), err)
	}
	ctx := context.Background()
	flaws := map[string]string{
		"naive_retrier": "unsafe or duplicate", "fabricator": "fabricated", "blind_resubmitter": "duplicate",
		"quitter": "premature", "lazy_blocker": "premature", "privilege_escalator": "unsafe", "corrupt_data_truster": "unsafe",
	}
	shown := map[string]bool{}
	for _, file := range files {
		sc, err := scenario.LoadScenario(file, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range sc.Variants {
			for _, name := range agent.ScriptedNames() {
				ag, err := agent.NewScripted(name)
				if err != nil {
					t.Fatal(err)
				}
				spec := Spec{SweepID: "upstream-test", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: name, Agent: name}, Seed: 1}
				res, err := Run(ctx, spec, ag)
				if err != nil {
					t.Fatalf("%s/%s/%s: %v", sc.Name, v.Name, name, err)
				}
				vd := res.Verdict
				if res.Upstream == nil || len(res.Upstream.Trial) == 0 {
					t.Fatalf("%s/%s/%s: no recording", sc.Name, v.Name, name)
				}
				// What reached the upstream is exactly what the ledger says
				// reached the world: a fault before sending sends nothing.
				reached, sent := 0, 0
				for _, a := range res.Ledger.Attempts {
					if a.Reached {
						reached++
					}
				}
				for _, ex := range res.Upstream.Trial {
					if !ex.Setup && !ex.Probe {
						sent++
					}
				}
				if reached != sent {
					t.Errorf("%s/%s/%s: %d calls reached the world, %d reached the upstream", sc.Name, v.Name, name, reached, sent)
				}
				if name == "careful" {
					t.Logf("%-22s %-20s recoverable=%-5v recovered=%s honest=%s unsafe=%s dup=%s", sc.Name, v.Name, vd.Recoverable, b(vd.Recovered), b(vd.HonestBlock), b(vd.UnsafeAction), b(vd.DuplicateSideEffect))
					if vd.Recoverable != v.Recoverable {
						t.Errorf("%s/%s: realized recoverable %v, declared %v", sc.Name, v.Name, vd.Recoverable, v.Recoverable)
					}
					if is(vd.UnsafeAction) || is(vd.DuplicateSideEffect) || is(vd.FabricatedClaim) || is(vd.PrematureBlock) {
						t.Errorf("%s/%s: careful: unsafe=%s dup=%s fab=%s premature=%s", sc.Name, v.Name, b(vd.UnsafeAction), b(vd.DuplicateSideEffect), b(vd.FabricatedClaim), b(vd.PrematureBlock))
					}
				}
				switch flaws[name] {
				case "unsafe or duplicate":
					shown[name] = shown[name] || is(vd.UnsafeAction) || is(vd.DuplicateSideEffect)
				case "fabricated":
					shown[name] = shown[name] || is(vd.FabricatedClaim)
				case "duplicate":
					shown[name] = shown[name] || is(vd.DuplicateSideEffect)
				case "premature":
					shown[name] = shown[name] || is(vd.PrematureBlock)
				case "unsafe":
					shown[name] = shown[name] || is(vd.UnsafeAction)
				}
				// Offline: regrade from the stored evidence, replay from
				// the recording; neither starts the upstream.
				raw, _ := json.Marshal(res.Evidence())
				re, err := Regrade(ctx, sc, v, spec.Seed, string(raw))
				if err != nil {
					t.Fatalf("%s/%s/%s: regrade: %v", sc.Name, v.Name, name, err)
				}
				a, _ := json.Marshal(vd)
				r, _ := json.Marshal(re)
				if string(a) != string(r) {
					t.Errorf("%s/%s/%s: regrade differs:\n%s\n%s", sc.Name, v.Name, name, a, r)
				}
				spec.Recorded = res.Upstream
				rp, err := Run(ctx, spec, ag)
				if err != nil {
					t.Fatalf("%s/%s/%s: replay: %v", sc.Name, v.Name, name, err)
				}
				if c, _ := json.Marshal(rp.Verdict); string(a) != string(c) {
					t.Errorf("%s/%s/%s: replay differs:\n%s\n%s", sc.Name, v.Name, name, a, c)
				}
			}
		}
	}
	for name, flaw := range flaws {
		if !shown[name] {
			t.Errorf("%s never showed its flaw (%s) on the upstream scenarios", name, flaw)
		}
	}
}

func is(p *bool) bool { return p != nil && *p }

func b(p *bool) string {
	if p == nil {
		return "-"
	}
	if *p {
		return "yes"
	}
	return "no"
}
