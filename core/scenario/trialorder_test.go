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
	// Shards of 1 trial to more than the plan: blocks of 1 seed to all.
	r.ShardSize = 1 + rng.IntN(2*len(r.Seeds)*len(r.Arms)+1)
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
	case SeedBlocks:
		// Blocks of max(1, shard size / arms) seeds, the last one short.
		block := 1
		if r.ShardSize > len(r.Arms) {
			block = r.ShardSize / len(r.Arms)
		}
		for from := 0; from < len(r.Seeds); from += block {
			for _, s := range r.Scenarios {
				for _, v := range s.Variants {
					for _, seed := range r.Seeds[from:min(from+block, len(r.Seeds))] {
						for _, a := range r.Arms {
							out = append(out, keyID(TrialKey{Scenario: s, Variant: v, Seed: seed, Arm: a}))
						}
					}
				}
			}
		}
	}
	return out
}

// Both orders number the same set of trials, each exactly once, as the
// nested loops of the oracle do; the arms of one (case, seed) are
// neighbours in arm order; and under SeedBlocks the first k seeds' worth of
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
		for _, order := range []TrialOrder{ScenarioMajor, SeedBlocks} {
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
		if len(sets[ScenarioMajor]) != len(sets[SeedBlocks]) {
			t.Fatalf("plan %d: the orders number %d and %d trials", n, len(sets[ScenarioMajor]), len(sets[SeedBlocks]))
		}
		for id := range sets[ScenarioMajor] {
			if !sets[SeedBlocks][id] {
				t.Fatalf("plan %d: %s is numbered scenario-major only", n, id)
			}
		}
		// Every prefix of a sweep in blocks covers every case at its first
		// seeds: after k whole blocks, each case holds their seeds.
		r.TrialOrder = SeedBlocks
		block := r.SeedBlock()
		for k := 1; (k-1)*block < len(r.Seeds); k++ {
			seeds := min(k*block, len(r.Seeds))
			seen := map[string]int{}
			for i := range seeds * cases * len(r.Arms) {
				key, _ := r.Trial(i)
				if at := indexOfSeed(r.Seeds, key.Seed); at >= seeds {
					t.Fatalf("plan %d: trial %d has the %d-th seed, within the first %d blocks of %d seeds", n, i, at, k, block)
				}
				seen[key.Scenario.Name+"/"+key.Variant.Name]++
			}
			if len(seen) != cases {
				t.Fatalf("plan %d: the first %d blocks' trials cover %d of %d cases", n, k, len(seen), cases)
			}
			for c, got := range seen {
				if got != seeds*len(r.Arms) {
					t.Fatalf("plan %d: case %s has %d trials in the first %d blocks, want %d", n, c, got, k, seeds*len(r.Arms))
				}
			}
		}
		// A shard holds one case's run of seeds per arm when it is a
		// block's worth: its trials of an arm are one case's adjacent seeds.
		if r.ShardSize%len(r.Arms) == 0 && block < len(r.Seeds) {
			for from := 0; from+r.ShardSize <= cases*block*len(r.Arms); from += r.ShardSize {
				first, _ := r.Trial(from)
				for i := from; i < from+r.ShardSize; i++ {
					if key, _ := r.Trial(i); key.Scenario != first.Scenario || key.Variant.Name != first.Variant.Name {
						t.Fatalf("plan %d: shard [%d, %d) of a block's size holds two cases", n, from, from+r.ShardSize)
					}
				}
			}
		}
	}
}

func indexOfSeed(seeds []uint64, s uint64) int {
	for i, x := range seeds {
		if x == s {
			return i
		}
	}
	return -1
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

// A new plan numbers in blocks of seeds; its hash, which trend, compare and gate
// match sweeps by, does not depend on the order (the same trials are
// measured either way).
func TestLoadPlanNumbersSeedBlocks(t *testing.T) {
	r, err := LoadPlanWith(writePlan(t, "  - {name: a, agent: careful}\n  - {name: b, agent: naive_retrier}\n"), noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if r.TrialOrder != SeedBlocks {
		t.Fatalf("a loaded plan's order is %q, want %q", r.TrialOrder, SeedBlocks)
	}
	hash := r.Hash
	r.TrialOrder = ScenarioMajor
	if got := r.computeHash(); got != hash {
		t.Fatalf("the plan hash moved with the order: %s -> %s", hash, got)
	}
}

// A stored plan keeps its order through the store: one stored before
// orders existed (no trial_order) opens scenario-major and numbers its
// trials as it did; one stored in blocks of seeds keeps them, sealed or not;
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
		for _, order := range []TrialOrder{ScenarioMajor, SeedBlocks} {
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
