package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rebound/results/record"
)

// A synthetic sweep shaped like the library plan at scale, stored through
// SQL: 8 arms, 23 scenarios × 6 variants, the trials in plan order
// (scenario, variant, seed, arm), verdicts and evidence of the library's
// average length (1.9 and 1.7 KB: they decide how many rows a granule
// holds), written one shard (1,000 trials) per
// INSERT as RunShard writes them, with the ids trial.ID derives.
const (
	synthArms      = 8
	synthScenarios = 23
	synthVariants  = 6
	synthShard     = 1000
)

// synthTrialsSQL inserts the synthetic trials [from, to) of a sweep with
// `seeds` seeds per case; attrition is 1 for every 7th trial.
func synthTrialsSQL(sweep string, seeds, from, to int) string {
	return fmt.Sprintf(`INSERT INTO {{db}}.trials (sweep_id, trial_id, scenario, variant, arm, agent, seed, attrition, verdicts, evidence, written_at)
SELECT '%[1]s',
       lower(hex(substring(SHA256(concat('%[1]s', '\0', sc, '\0', v, '\0', arm, '\0', toString(seed), '\0')), 1, 12))),
       sc, v, arm, arm, seed, toUInt8(number %% 7 = 0),
       repeat(concat(hex(number), ' '), 265), repeat(concat(hex(number), ' '), 240), now64(3)
FROM
(
    SELECT number,
           concat('arm-', toString(number %% %[2]d)) AS arm,
           intDiv(number, %[2]d) %% %[3]d + 1 AS seed,
           concat('v', toString(intDiv(number, %[2]d * %[3]d) %% %[4]d)) AS v,
           concat('scenario-', toString(intDiv(number, %[2]d * %[3]d * %[4]d))) AS sc
    FROM numbers(%[5]d, %[6]d)
)`, sweep, synthArms, seeds, synthVariants, from, to-from)
}

// synthTrialID is trial.ID of synthetic trial i (plan order).
func synthTrialID(sweep string, seeds, i int) string { return synthKey(sweep, seeds, i).TrialID }

// synthKey is synthetic trial i's place in the primary key, and its id.
func synthKey(sweep string, seeds, i int) TrialKey {
	arm := "arm-" + strconv.Itoa(i%synthArms)
	seed := i/synthArms%seeds + 1
	v := "v" + strconv.Itoa(i/(synthArms*seeds)%synthVariants)
	sc := "scenario-" + strconv.Itoa(i/(synthArms*seeds*synthVariants))
	h := sha256.New()
	for _, part := range []string{sweep, sc, v, arm, strconv.Itoa(seed)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return TrialKey{Arm: arm, Scenario: sc, Variant: v, Seed: uint64(seed), TrialID: hex.EncodeToString(h.Sum(nil)[:12])}
}

// storeSynthSweep stores the first n trials of a synthetic sweep, one shard
// per insert.
func storeSynthSweep(tb testing.TB, st *store, sweep string, n int) (seeds int) {
	tb.Helper()
	seeds = (n + synthArms*synthScenarios*synthVariants - 1) / (synthArms * synthScenarios * synthVariants)
	for from := 0; from < n; from += synthShard {
		q := synthTrialsSQL(sweep, seeds, from, min(from+synthShard, n))
		if err := st.t.Exec(context.Background(), Stmt{SQL: st.sql(q)}); err != nil {
			tb.Fatalf("store synthetic trials from %d: %v", from, err)
		}
	}
	return seeds
}

// settle waits until the engine merges no part (the benchmark measures a
// query, not the merges the inserts started).
func settle(tb testing.TB, st *store) {
	tb.Helper()
	type row struct {
		N uint64 `json:"n" ch:"n"`
	}
	for quiet := 0; quiet < 3; {
		var rows []row
		if err := st.t.Select(context.Background(), &rows, Stmt{SQL: "SELECT count() AS n FROM system.merges"}); err != nil {
			tb.Fatal(err)
		}
		if len(rows) == 1 && rows[0].N == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// qStoredTrialsHas is the checkpoint query before issue 35: has() over the
// split list reads every stored row of the sweep and walks the whole list
// per row. Kept as the reference the benchmark and the oracle compare with.
const qStoredTrialsHas = `SELECT trial_id, toUInt8(max(attrition)) AS attrition
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND has(splitByChar(',', {ids:String}), trial_id)
GROUP BY trial_id
ORDER BY trial_id`

// qStoredTrialsIDs is the checkpoint query of issue 35's first change: the
// ids as an IN set, found through migration 10's bloom filter only.
const qStoredTrialsIDs = `SELECT trial_id, toUInt8(max(attrition)) AS attrition
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String}
  AND trial_id IN (SELECT arrayJoin(splitByChar(',', {ids:String})))
GROUP BY trial_id
ORDER BY trial_id`

// Candidates measured for issue 35 (BenchmarkStoredTrials): the old has(),
// the ids as an IN set, the same with an Array(String) parameter, the IN
// set without FINAL (argMax of the version instead), which measured no
// faster, and the primary-key tuples StoredTrials uses.
var storedTrialsCandidates = []struct{ name, sql string }{
	{"has", qStoredTrialsHas},
	{"key_in", qStoredTrials},
	{"in_subquery", qStoredTrialsIDs},
	{"in_array_param", `SELECT trial_id, toUInt8(max(attrition)) AS attrition
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND trial_id IN {idarr:Array(String)}
GROUP BY trial_id
ORDER BY trial_id`},
	{"in_subquery_nofinal", `SELECT trial_id, toUInt8(argMax(attrition, written_at)) AS attrition
FROM {{db}}.trials
WHERE sweep_id = {sweep_id:String} AND trial_id IN (SELECT arrayJoin(splitByChar(',', {ids:String})))
GROUP BY trial_id
ORDER BY trial_id`},
}

// candidateParams binds the parameters every candidate may use.
func candidateParams(tb testing.TB, sweep string, keys []TrialKey) map[string]string {
	ids := make([]string, len(keys))
	tuples := make([][5]any, len(keys))
	for i, k := range keys {
		ids[i] = k.TrialID
		tuples[i] = [5]any{k.Arm, k.Scenario, k.Variant, k.Seed, k.TrialID}
	}
	js, err := json.Marshal(tuples)
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]string{"sweep_id": sweep, "ids": strings.Join(ids, ","), "idarr": arrayParam(ids), "keys": string(js)}
}

func runStoredTrialsSQL(ctx context.Context, st *store, sql string, params map[string]string) ([]storedTrialRow, error) {
	var rows []storedTrialRow
	err := st.t.Select(ctx, &rows, Stmt{SQL: st.sql(sql), Params: params})
	return rows, err
}

// BenchmarkStoredTrials: one shard's checkpoint (1,000 ids, half of them
// stored: the sweep's last shard, retried) on sweeps of 60,720 and 242,880
// stored trials, for each query candidate, on a store at schema 9 (the 1%
// bloom filter only) and at schema 10. cpu-ms/op is the process's CPU
// time per query (the embedded engine runs in it), which a shared machine
// moves less than wall time. Run with -v for the granules each reads.
//
//	go test -run '^$' -bench StoredTrials -benchtime 20x -v ./storage/
func BenchmarkStoredTrials(b *testing.B) {
	for _, version := range []uint32{9, SchemaVersion()} {
		for _, n := range []int{60720, 242880} {
			st := openTestStoreAt(b, version)
			ctx := context.Background()
			const sweep = "bench-sweep"
			seeds := storeSynthSweep(b, st, sweep, n)
			settle(b, st)
			keys := make([]TrialKey, 0, synthShard)
			for i := n - synthShard/2; i < n+synthShard/2; i++ {
				keys = append(keys, synthKey(sweep, seeds, i))
			}
			params := candidateParams(b, sweep, keys)
			for _, c := range storedTrialsCandidates {
				if c.name == "has" && version != 9 {
					continue // the index does not change it
				}
				b.Run(fmt.Sprintf("schema=%d/%s/stored=%d", version, c.name, n), func(b *testing.B) {
					cpu0 := cpuTime()
					defer func() { b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op") }()
					for i := 0; i < b.N; i++ {
						rows, err := runStoredTrialsSQL(ctx, st, c.sql, params)
						if err != nil {
							b.Fatal(err)
						}
						if len(rows) != synthShard/2 {
							b.Fatalf("%d rows, want %d", len(rows), synthShard/2)
						}
					}
				})
			}
			for _, c := range storedTrialsCandidates[1:3] {
				b.Logf("schema %d, %d stored: %s reads %s", version, n, c.name, granules(b, st, c.sql, params))
			}
			if version == 9 {
				start, cpu0 := time.Now(), cpuTime()
				if err := st.Migrate(ctx); err != nil {
					b.Fatal(err)
				}
				b.Logf("migration 10 on %d stored trials (index materialized): %v, %v CPU", n, time.Since(start).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond))
			}
		}
	}
}

// granules is what EXPLAIN indexes = 1 says the query reads.
func granules(tb testing.TB, st *store, sql string, params map[string]string) string {
	var rows []struct {
		Explain string `json:"explain" ch:"explain"`
	}
	q := Stmt{SQL: st.sql("EXPLAIN indexes = 1 " + sql), Params: params}
	if err := st.t.Select(context.Background(), &rows, q); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if t := strings.TrimSpace(r.Explain); strings.HasPrefix(t, "Granules:") || strings.HasPrefix(t, "Name:") {
			out = append(out, t)
		}
	}
	return strings.Join(out, " ")
}

// cpuTime is this process's user + system time (the embedded engine runs
// in it): less moved by other loads on a shared machine than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStoredTrialsOracle: StoredTrials returns exactly the rows the query
// before issue 35 (qStoredTrialsHas) returns, over random stored sets:
// trials of two sweeps (the second one also holding ids of the first),
// written in random batches with random attrition, some written again
// with another attrition (merges stopped, so every version is on disk),
// asked about in random sets of stored, unstored and other-sweep ids. It
// runs on a store at schema 9 (the old index), with the new index added
// but not materialized (old parts without it, new ones with it), after
// migration 10, after more writes, and after merges.
func TestStoredTrialsOracle(t *testing.T) {
	requireIntegration(t)
	seed := time.Now().UnixNano()
	if v := os.Getenv("STORED_TRIALS_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (STORED_TRIALS_SEED=%d repeats it)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	st := openTestStoreAt(t, 9)
	fakeClock(st)
	ctx := context.Background()
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.trials")

	const seeds, planned = 4, 4 * synthArms * synthScenarios * synthVariants // 4,416 trials per sweep
	sweeps := []string{"oracle-a", "oracle-b"}
	key := func(sweep string, i int) TrialKey { return synthKey(sweep, seeds, i) }
	write := func(round string, k int) {
		for w := 0; w < k; w++ {
			sweep := sweeps[rng.Intn(2)]
			n := 1 + rng.Intn(700)
			start := rng.Intn(planned)
			var batch []record.Trial
			for j := 0; j < n; j++ {
				i := (start + j*(1+rng.Intn(3))) % planned
				k := key(sweep, i)
				if sweep == "oracle-b" && rng.Intn(5) == 0 {
					k = key("oracle-a", i) // an id of the other sweep
				}
				batch = append(batch, record.Trial{
					SweepID: sweep, TrialID: k.TrialID, Scenario: k.Scenario, Variant: k.Variant, Arm: k.Arm,
					Agent: "careful", Seed: k.Seed, Weight: 1, Attrition: rng.Intn(4) == 0, ActivityAttempt: 1,
				})
			}
			if err := st.WriteTrials(ctx, batch, nil); err != nil {
				t.Fatalf("%s: write: %v", round, err)
			}
		}
	}
	var asked, returned, attrition int
	check := func(round string) {
		t.Helper()
		for q := 0; q < 25; q++ {
			sweep := sweeps[rng.Intn(2)]
			var ids []string
			var keys []TrialKey
			seen := map[string]bool{}
			for n := rng.Intn(1200); len(ids) < n; {
				s := sweep
				if rng.Intn(6) == 0 {
					s = sweeps[rng.Intn(2)]
				}
				k := key(s, rng.Intn(planned+200)) // beyond the plan: never stored
				if !seen[k.TrialID] {
					seen[k.TrialID] = true
					ids = append(ids, k.TrialID)
					keys = append(keys, k)
				}
			}
			got, err := st.StoredTrials(ctx, sweep, keys)
			if err != nil {
				t.Fatalf("%s: StoredTrials: %v", round, err)
			}
			asked, returned = asked+len(ids), returned+len(got)
			for _, g := range got {
				if g.Attrition {
					attrition++
				}
			}
			var want []StoredTrial
			if len(ids) > 0 {
				rows, err := runStoredTrialsSQL(ctx, st, qStoredTrialsHas, map[string]string{"sweep_id": sweep, "ids": strings.Join(ids, ",")})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					want = append(want, StoredTrial{TrialID: r.TrialID, Attrition: r.Attrition != 0})
				}
			}
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%s, query %d (%d ids of sweep %s): StoredTrials returned %d rows, the old query %d; first difference at %d",
					round, q, len(ids), sweep, len(got), len(want), firstDiff(got, want))
			}
		}
	}

	write("schema 9", 12)
	check("schema 9")
	// The index added, not yet materialized: the parts written before
	// have none, the parts written after have it.
	if err := st.execDDL(ctx, ddlTrialsIDIndex[0]); err != nil {
		t.Fatal(err)
	}
	write("index added", 6)
	check("index added, older parts without it")
	// The whole migration (the embedded engine's ALTER waits for its
	// mutation, mutations_sync = 1; a server runs it in the background).
	mustExec(t, st, "SYSTEM START MERGES {{db}}.trials")
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	waitMutations(t, st)
	if n := partsWithoutIndex(t, st); n != 0 {
		t.Errorf("%d parts of trials lack idx_trial_id_set once the mutation is done", n)
	}
	check("index materialized")
	mustExec(t, st, "SYSTEM STOP MERGES {{db}}.trials")
	write("schema 10", 12)
	check("schema 10, more writes")
	mustExec(t, st, "SYSTEM START MERGES {{db}}.trials")
	mustExec(t, st, "OPTIMIZE TABLE {{db}}.trials FINAL")
	check("merged")
	t.Logf("%d ids asked about, %d stored, %d of them lost to attrition", asked, returned, attrition)
	if returned == 0 || attrition == 0 || attrition == returned {
		t.Errorf("the random sets did not exercise the query: %d stored, %d attrition", returned, attrition)
	}
}

func firstDiff(a, b []StoredTrial) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// openTestStoreAt opens a store in a database of its own, migrated up to
// schema version v (as an older binary left it).
func openTestStoreAt(t testing.TB, v uint32) *store {
	t.Helper()
	requireIntegration(t)
	db := fmt.Sprintf("t%d_at%d", dbSeq.Add(1), v)
	st, err := Open(context.Background(), Config{DataDir: integ.dataDir, LibPath: integ.lib, Database: db})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := st.(*store)
	if err := s.migrateTo(context.Background(), v); err != nil {
		t.Fatalf("migrate to %d: %v", v, err)
	}
	return s
}

// waitMutations waits until no mutation of the store's trials is pending.
func waitMutations(t *testing.T, st *store) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var rows []countRow
		q := Stmt{SQL: "SELECT count() AS n FROM system.mutations WHERE database = {db:String} AND table = 'trials' AND NOT is_done", Params: map[string]string{"db": st.db}}
		if err := st.t.Select(context.Background(), &rows, q); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].N == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mutations of trials still pending after a minute", rows[0].N)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// partsWithoutIndex counts the active parts of trials that hold no
// idx_trial_id_set.
func partsWithoutIndex(t *testing.T, st *store) uint64 {
	t.Helper()
	var rows []countRow
	q := Stmt{SQL: `SELECT count() AS n FROM system.parts
WHERE database = {db:String} AND table = 'trials' AND active AND secondary_indices_uncompressed_bytes = 0`, Params: map[string]string{"db": st.db}}
	if err := st.t.Select(context.Background(), &rows, q); err != nil {
		t.Fatal(err)
	}
	return rows[0].N
}
