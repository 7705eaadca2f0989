package scenario

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"rebound/internal/redact"
)

// keyID names a trial key by value (scenario, variant, seed, arm).
func keyID(k TrialKey) string {
	return fmt.Sprintf("%s/%s/%d/%s", k.Scenario.Name, k.Variant.Name, k.Seed, k.Arm.Name)
}

// randomPlan builds a resolved plan of random shape: 1-6 scenarios of 1-4
// variants each, 1-5 distinct seeds in no particular order, 1-3 arms.
func randomPlan(rng *rand.Rand) *Resolved {
	r := &Resolved{Name: "generated"}
	for s := range 1 + rng.IntN(6) {
		sc := &Scenario{Name: fmt.Sprintf("s%d", s)}
		for v := range 1 + rng.IntN(4) {
			sc.Variants = append(sc.Variants, Variant{Name: fmt.Sprintf("v%d", v)})
		}
		r.Scenarios = append(r.Scenarios, sc)
	}
	for _, seed := range rng.Perm(20)[:1+rng.IntN(5)] {
		r.Seeds = append(r.Seeds, uint64(seed)+1)
	}
	for a := range 1 + rng.IntN(3) {
		r.Arms = append(r.Arms, Arm{Name: fmt.Sprintf("a%d", a), Agent: "careful"})
	}
	return r
}

// oracleOrder enumerates a plan's trials with nested loops, outermost
// first: the orders as the documentation states them.
func oracleOrder(r *Resolved, order TrialOrder) []string {
	var out []string
	switch order {
	case ScenarioMajor:
		for _, s := range r.Scenarios {
			for _, v := range s.Variants {
				for _, seed := range r.Seeds {
					for _, a := range r.Arms {
						out = append(out, keyID(TrialKey{Scenario: s, Variant: v, Seed: seed, Arm: a}))
					}
				}
			}
		}
	case SeedMajor:
		for _, seed := range r.Seeds {
			for _, s := range r.Scenarios {
				for _, v := range s.Variants {
					for _, a := range r.Arms {
						out = append(out, keyID(TrialKey{Scenario: s, Variant: v, Seed: seed, Arm: a}))
					}
				}
			}
		}
	}
	return out
}

// Both orders number the same set of trials, each exactly once, as the
// nested loops of the oracle do; the arms of one (case, seed) are
// neighbours in arm order; and under SeedMajor the first k seeds' worth of
// trials are every case at the first k seeds.
func TestTrialOrdersAreBijectionsOntoTheSameTrials(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	for n := range 300 {
		r := randomPlan(rng)
		cases := 0
		for _, s := range r.Scenarios {
			cases += len(s.Variants)
		}
		total := cases * len(r.Seeds) * len(r.Arms)
		if r.TrialCount() != total {
			t.Fatalf("plan %d: TrialCount %d, want %d", n, r.TrialCount(), total)
		}
		sets := map[TrialOrder]map[string]bool{}
		for _, order := range []TrialOrder{ScenarioMajor, SeedMajor} {
			r.TrialOrder = order
			want := oracleOrder(r, order)
			got := make([]string, total)
			index := map[string]int{}
			for i := range total {
				k, err := r.Trial(i)
				if err != nil {
					t.Fatalf("plan %d, order %q: trial %d: %v", n, order, i, err)
				}
				got[i] = keyID(k)
				if j, dup := index[got[i]]; dup {
					t.Fatalf("plan %d, order %q: trials %d and %d are both %s", n, order, j, i, got[i])
				}
				index[got[i]] = i
				if got[i] != want[i] {
					t.Fatalf("plan %d, order %q: trial %d is %s, the oracle's is %s", n, order, i, got[i], want[i])
				}
			}
			sets[order] = map[string]bool{}
			for _, id := range got {
				sets[order][id] = true
			}
			// Matched pairs: the arms of each (case, seed) are adjacent.
			for _, s := range r.Scenarios {
				for _, v := range s.Variants {
					for _, seed := range r.Seeds {
						first := index[keyID(TrialKey{Scenario: s, Variant: v, Seed: seed, Arm: r.Arms[0]})]
						for a, arm := range r.Arms {
							if i := index[keyID(TrialKey{Scenario: s, Variant: v, Seed: seed, Arm: arm})]; i != first+a {
								t.Fatalf("plan %d, order %q: %s/%s seed %d arm %s is trial %d, want %d", n, order, s.Name, v.Name, seed, arm.Name, i, first+a)
							}
						}
					}
				}
			}
			if _, err := r.Trial(total); err == nil {
				t.Fatalf("plan %d, order %q: trial %d of %d was accepted", n, order, total, total)
			}
			if _, err := r.Trial(-1); err == nil {
				t.Fatalf("plan %d, order %q: trial -1 was accepted", n, order)
			}
		}
		if len(sets[ScenarioMajor]) != len(sets[SeedMajor]) {
			t.Fatalf("plan %d: the orders number %d and %d trials", n, len(sets[ScenarioMajor]), len(sets[SeedMajor]))
		}
		for id := range sets[ScenarioMajor] {
			if !sets[SeedMajor][id] {
				t.Fatalf("plan %d: %s is numbered scenario-major only", n, id)
			}
		}
		// Every prefix of a seed-major sweep covers every case at its
		// first seeds: after k whole seeds, each case holds k of them.
		r.TrialOrder = SeedMajor
		perSeed := cases * len(r.Arms)
		for k := 1; k <= len(r.Seeds); k++ {
			seen := map[string]int{}
			for i := range k * perSeed {
				key, _ := r.Trial(i)
				if key.Seed != r.Seeds[i/perSeed] {
					t.Fatalf("plan %d: trial %d has seed %d, want the %d-th seed %d", n, i, key.Seed, i/perSeed, r.Seeds[i/perSeed])
				}
				seen[key.Scenario.Name+"/"+key.Variant.Name]++
			}
			if len(seen) != cases {
				t.Fatalf("plan %d: the first %d seeds' trials cover %d of %d cases", n, k, len(seen), cases)
			}
			for c, got := range seen {
				if got != k*len(r.Arms) {
					t.Fatalf("plan %d: case %s has %d trials in the first %d seeds, want %d", n, c, got, k, k*len(r.Arms))
				}
			}
		}
	}
}

// An order this binary does not know is an error wherever a trial is
// read, never another order's trials.
func TestUnknownTrialOrderIsAnError(t *testing.T) {
	r := randomPlan(rand.New(rand.NewPCG(1, 2)))
	r.TrialOrder = "shuffled"
	if _, err := r.Trial(0); err == nil || !strings.Contains(err.Error(), `trial_order "shuffled"`) {
		t.Fatalf("Trial of an unknown order: %v", err)
	}
	if _, err := r.TrialIn("case_major", 0); err == nil {
		t.Fatal("TrialIn of an unknown order was accepted")
	}
}

// A new plan numbers seed by seed; its hash, which trend, compare and gate
// match sweeps by, does not depend on the order (the same trials are
// measured either way).
func TestLoadPlanNumbersSeedMajor(t *testing.T) {
	r, err := LoadPlanWith(writePlan(t, "  - {name: a, agent: careful}\n  - {name: b, agent: naive_retrier}\n"), noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if r.TrialOrder != SeedMajor {
		t.Fatalf("a loaded plan's order is %q, want %q", r.TrialOrder, SeedMajor)
	}
	hash := r.Hash
	r.TrialOrder = ScenarioMajor
	if got := r.computeHash(); got != hash {
		t.Fatalf("the plan hash moved with the order: %s -> %s", hash, got)
	}
}

// A stored plan keeps its order through the store: one stored before
// orders existed (no trial_order) opens scenario-major and numbers its
// trials as it did; one stored seed-major stays seed-major, sealed or not;
// an unknown order is refused with the field named.
func TestStoredPlanKeepsItsTrialOrder(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	red, err := redact.New(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := redact.NewSealer(key, PlanSealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for n := range 20 {
		for _, order := range []TrialOrder{ScenarioMajor, SeedMajor} {
			r := randomPlan(rng)
			r.TrialOrder = order
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), `"trial_order"`); has != (order != ScenarioMajor) {
				t.Fatalf("order %q: trial_order in the JSON = %v:\n%s", order, has, b)
			}
			sealed, err := redact.SealDocument(red, sealer, string(b))
			if err != nil {
				t.Fatal(err)
			}
			for name, stored := range map[string]string{"sealed": sealed, "plain": string(b)} {
				back, err := OpenStoredPlan(stored, key)
				if err != nil {
					t.Fatalf("plan %d, order %q, %s: %v", n, order, name, err)
				}
				if back.TrialOrder != order {
					t.Fatalf("plan %d, %s: stored %q, opened %q", n, name, order, back.TrialOrder)
				}
				want := oracleOrder(r, order)
				for i := range back.TrialCount() {
					k, err := back.Trial(i)
					if err != nil || keyID(k) != want[i] {
						t.Fatalf("plan %d, order %q, %s: trial %d reopened is %v (%v), want %s", n, order, name, i, k, err, want[i])
					}
				}
			}
		}
	}
	// A plan as stored before orders existed: its JSON has no such field.
	legacy := `{"name":"old","hash":"h","scenarios":[{"name":"a","variants":[{"name":"v"}]},{"name":"b","variants":[{"name":"v"}]}],` +
		`"arms":[{"name":"x","agent":"careful"}],"seeds":[1,2],"shard_size":1,"concurrency":1}`
	old, err := OpenStoredPlan(legacy, key)
	if err != nil {
		t.Fatal(err)
	}
	if old.TrialOrder != ScenarioMajor {
		t.Fatalf("a legacy plan opened %q", old.TrialOrder)
	}
	if k, err := old.Trial(1); err != nil || k.Scenario.Name != "a" || k.Seed != 2 {
		t.Fatalf("a legacy plan's trial 1 is %v (%v), want scenario a seed 2", k, err)
	}
	unknown := strings.Replace(legacy, `"seeds"`, `"trial_order":"shuffled","seeds"`, 1)
	if _, err := OpenStoredPlan(unknown, key); err == nil || !strings.Contains(err.Error(), `trial_order "shuffled"`) {
		t.Fatalf("a stored plan of unknown order: %v", err)
	}
}
