package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"
)

// The checkpoint under each trial order (core/scenario's TrialOrder). The
// trials table is ordered by (sweep_id, arm, scenario, variant, seed): a
// shard numbered scenario by scenario holds, per arm, one run of adjacent
// keys; a shard numbered seed by seed holds one seed of many cases, a key
// every `seeds` rows. A shard none of whose trials are stored (every first
// attempt of a new sweep) reads next to nothing either way: migration 10's
// bloom filter skips the granules that hold none of its ids. A shard whose
// trials are stored (a retry after a crash between a write and its
// heartbeat; every finished shard a resumed sweep runs again) reads the
// granules that hold them: under the seed order those span its cases
// times every seed, so the read grows with the sweep's seeds.

const synthCases = synthScenarios * synthVariants

// synthSeedMajorSQL inserts the synthetic trials [from, to) numbered seed
// by seed (seed, then the cases, then arm), with the ids trial.ID derives.
func synthSeedMajorSQL(sweep string, from, to int) string {
	return fmt.Sprintf(`INSERT INTO {{db}}.trials (sweep_id, trial_id, scenario, variant, arm, agent, seed, attrition, verdicts, evidence, written_at)
SELECT '%[1]s',
       lower(hex(substring(SHA256(concat('%[1]s', '\0', sc, '\0', v, '\0', arm, '\0', toString(seed), '\0')), 1, 12))),
       sc, v, arm, arm, seed, toUInt8(number %% 7 = 0),
       repeat(concat(hex(number), ' '), 265), repeat(concat(hex(number), ' '), 240), now64(3)
FROM
(
    SELECT number,
           concat('arm-', toString(number %% %[2]d)) AS arm,
           intDiv(number, %[2]d * %[3]d) + 1 AS seed,
           concat('v', toString(intDiv(number, %[2]d) %% %[3]d %% %[4]d)) AS v,
           concat('scenario-', toString(intDiv(intDiv(number, %[2]d) %% %[3]d, %[4]d))) AS sc
    FROM numbers(%[5]d, %[6]d)
)`, sweep, synthArms, synthCases, synthVariants, from, to-from)
}

// synthSeedMajorKey is synthetic trial i of the seed order.
func synthSeedMajorKey(sweep string, i int) TrialKey {
	arm := "arm-" + strconv.Itoa(i%synthArms)
	c := i / synthArms % synthCases
	seed := i/(synthArms*synthCases) + 1
	v := "v" + strconv.Itoa(c%synthVariants)
	sc := "scenario-" + strconv.Itoa(c/synthVariants)
	h := sha256.New()
	for _, part := range []string{sweep, sc, v, arm, strconv.Itoa(seed)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return TrialKey{Arm: arm, Scenario: sc, Variant: v, Seed: uint64(seed), TrialID: hex.EncodeToString(h.Sum(nil)[:12])}
}

// The seed order's synthetic rows are the ids its keys name.
func TestSynthSeedMajorKeysMatchRows(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	const sweep, n = "seed-major", 3 * synthArms * synthCases
	if err := st.t.Exec(ctx, Stmt{SQL: st.sql(synthSeedMajorSQL(sweep, 0, n))}); err != nil {
		t.Fatal(err)
	}
	keys := make([]TrialKey, n)
	for i := range keys {
		keys[i] = synthSeedMajorKey(sweep, i)
	}
	got, err := st.StoredTrials(ctx, sweep, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d of %d synthetic keys found", len(got), n)
	}
	if k := keys[synthArms*synthCases]; k.Seed != 2 || k.Scenario != "scenario-0" || k.Variant != "v0" || k.Arm != "arm-0" {
		t.Fatalf("the first trial of the second seed is %+v", k)
	}
}

// BenchmarkCheckpointByTrialOrder: a shard's checkpoint (StoredTrials,
// 1,000 trials) on sweeps of 60,720 and 242,880 stored trials numbered
// scenario by scenario and seed by seed: the next shard, none of it
// stored (fresh), and the last stored shard again (resumed). rows/op is
// what the engine's indexes select (EXPLAIN ESTIMATE), cpu-ms/op the
// process's CPU per query.
//
//	go test -run '^$' -bench CheckpointByTrialOrder -benchtime 5x ./storage/
func BenchmarkCheckpointByTrialOrder(b *testing.B) {
	for _, order := range []string{"scenario_major", "seed_major"} {
		st := openTestStore(b)
		rc := &readCounter{chdbTransport: st.t.(*chdbTransport)}
		counted := *st
		counted.t = rc
		ctx := context.Background()
		const sweep = "order-bench"
		sizes := []int{60720, 242880}
		seeds := (sizes[len(sizes)-1] + synthArms*synthCases - 1) / (synthArms * synthCases)
		key := func(i int) TrialKey {
			if order == "seed_major" {
				return synthSeedMajorKey(sweep, i)
			}
			return synthKey(sweep, seeds, i)
		}
		stored := 0
		for _, n := range sizes {
			for ; stored < n; stored += 10000 {
				q := synthTrialsSQL(sweep, seeds, stored, min(stored+10000, n))
				if order == "seed_major" {
					q = synthSeedMajorSQL(sweep, stored, min(stored+10000, n))
				}
				if err := st.t.Exec(ctx, Stmt{SQL: st.sql(q)}); err != nil {
					b.Fatal(err)
				}
			}
			stored = n
			// Merged into one part, as the engine merges a sweep that
			// stopped a while ago: the counts do not depend on when it
			// merged (a shard just written sits in a part of its own,
			// whose ids the older parts' bloom filters rule out).
			if err := st.t.Exec(ctx, Stmt{SQL: st.sql("OPTIMIZE TABLE {{db}}.trials FINAL")}); err != nil {
				b.Fatal(err)
			}
			for _, shard := range []struct {
				name     string
				from     int
				inStore  int
				ofShards int
			}{{"fresh", n, 0, synthShard}, {"resumed", n - synthShard, synthShard, synthShard}} {
				keys := make([]TrialKey, 0, shard.ofShards)
				for i := shard.from; i < shard.from+shard.ofShards; i++ {
					keys = append(keys, key(i))
				}
				b.Run(fmt.Sprintf("%s/%s/stored=%d", order, shard.name, n), func(b *testing.B) {
					var rows uint64
					cpu0 := cpuTime()
					for i := 0; i < b.N; i++ {
						rows += rc.read(b, func() error {
							got, err := counted.StoredTrials(ctx, sweep, keys)
							if err == nil && len(got) != shard.inStore {
								err = fmt.Errorf("%d trials stored, want %d", len(got), shard.inStore)
							}
							return err
						})
					}
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
				})
			}
		}
	}
}
