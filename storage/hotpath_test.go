package storage

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"rebound/results/record"
)

// readCounter is the embedded transport that remembers what each SELECT
// reads: the rows of the granules the engine's indexes select for it
// (EXPLAIN ESTIMATE of the same statement and parameters). The engine's
// own rows_read of a result counts the rows it returned, not read.
type readCounter struct {
	*chdbTransport
	mu    sync.Mutex
	reads []uint64
}

func (r *readCounter) Select(ctx context.Context, dest any, q Stmt) error {
	var est []struct {
		Table string `json:"table"`
		Rows  uint64 `json:"rows"`
	}
	if err := r.chdbTransport.Select(ctx, &est, Stmt{SQL: "EXPLAIN ESTIMATE " + q.SQL, Params: q.Params}); err != nil {
		return fmt.Errorf("EXPLAIN ESTIMATE: %w", err)
	}
	var n uint64
	for _, e := range est {
		n += e.Rows
	}
	r.mu.Lock()
	r.reads = append(r.reads, n)
	r.mu.Unlock()
	return r.chdbTransport.Select(ctx, dest, q)
}

// read runs f and returns the rows its SELECTs read.
func (r *readCounter) read(tb testing.TB, f func() error) uint64 {
	tb.Helper()
	r.mu.Lock()
	r.reads = nil
	r.mu.Unlock()
	if err := f(); err != nil {
		tb.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reads) == 0 {
		tb.Fatal("no SELECT ran")
	}
	var n uint64
	for _, v := range r.reads {
		n += v
	}
	return n
}

// TestHotPathReadsNoSweep: what a running shard asks the store (its
// checkpoint, StoredTrials, an LLM trial's memoized model answers,
// ModelCalls, and a judge shard's trial, SweepTrial) reads no more rows when the sweep holds 4x the trials, and
// never most of the sweep: each finds its rows through the primary key
// (sweep_id, then the trial's key), not by scanning the sweep. The sweep
// is the synthetic library shape of BenchmarkStoredTrials (8 arms, trials
// of ~4 KB, so a granule holds about 3,000), merged into one part before
// each measurement so that the counts do not depend on when the engine
// merged. The checkpoint is a retried shard's: 1,000 trials in plan order,
// the first half stored. Measured when it was written: the checkpoint
// read 30,360 rows (all) at 30,360 stored trials and 29,017 at 121,440;
// the query before it (the ids as an IN set, found through migration 10's
// bloom filter) read 30,360 and 35,550 and fails here; the one before
// issue 35 (has()) read the whole sweep.
func TestHotPathReadsNoSweep(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	rc := &readCounter{chdbTransport: st.t.(*chdbTransport)}
	counted := *st
	counted.t = rc
	const (
		sweep = "hot-path"
		small = 30360
		large = 4 * small
	)
	seeds := (large + synthArms*synthScenarios*synthVariants - 1) / (synthArms * synthScenarios * synthVariants)
	store := func(from, to int) {
		t.Helper()
		for ; from < to; from += 10000 {
			if err := st.t.Exec(ctx, Stmt{SQL: st.sql(synthTrialsSQL(sweep, seeds, from, min(from+10000, to)))}); err != nil {
				t.Fatalf("store synthetic trials from %d: %v", from, err)
			}
		}
		mustExec(t, st, "OPTIMIZE TABLE {{db}}.trials FINAL")
	}
	checkpoint := func(stored int) uint64 {
		keys := make([]TrialKey, 0, synthShard)
		for i := stored - synthShard/2; i < stored+synthShard/2; i++ {
			keys = append(keys, synthKey(sweep, seeds, i))
		}
		var got []StoredTrial
		n := rc.read(t, func() error {
			var err error
			got, err = counted.StoredTrials(ctx, sweep, keys)
			return err
		})
		if len(got) != synthShard/2 {
			t.Fatalf("checkpoint at %d stored: %d trials stored, want %d", stored, len(got), synthShard/2)
		}
		return n
	}
	judged := func(stored int) uint64 {
		k := synthKey(sweep, seeds, stored-1)
		return rc.read(t, func() error {
			tr, _, err := counted.SweepTrial(ctx, sweep, k)
			if err == nil && tr.TrialID != k.TrialID {
				err = fmt.Errorf("SweepTrial of %s returned %s", k.TrialID, tr.TrialID)
			}
			return err
		})
	}
	modelCalls := func(stored int) uint64 {
		id := synthTrialID(sweep, seeds, stored-1)
		return rc.read(t, func() error {
			calls, err := counted.ModelCalls(ctx, sweep, id)
			if err == nil && len(calls) != 1 {
				err = fmt.Errorf("ModelCalls of %s: %d calls, want 1", id, len(calls))
			}
			return err
		})
	}
	putCalls := func(from, to int) {
		t.Helper()
		var calls []record.ModelCall
		for i := from; i < to; i++ {
			calls = append(calls, record.ModelCall{SweepID: sweep, TrialID: synthTrialID(sweep, seeds, i), Step: 1, Kind: "turn", RequestHash: "h", Response: strings.Repeat("x", 2000)})
		}
		vals := make([][]any, len(calls))
		for i, m := range calls {
			v, err := modelCallValues(m, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			vals[i] = v
		}
		if err := st.t.Insert(ctx, st.insertSQL("model_calls", modelCallCols), modelCallCols, vals); err != nil {
			t.Fatal(err)
		}
		mustExec(t, st, "OPTIMIZE TABLE {{db}}.model_calls FINAL")
	}

	store(0, small)
	putCalls(0, small)
	cpSmall, mcSmall, jSmall := checkpoint(small), modelCalls(small), judged(small)
	store(small, large)
	putCalls(small, large)
	cpLarge, mcLarge, jLarge := checkpoint(large), modelCalls(large), judged(large)
	t.Logf("rows read: checkpoint %d at %d stored trials, %d at %d; model calls %d and %d; a judged trial %d and %d", cpSmall, small, cpLarge, large, mcSmall, mcLarge, jSmall, jLarge)

	// A granule of each table on average, as the engine cut them.
	granule := func(table string) uint64 {
		var rows []countRow
		q := Stmt{SQL: `SELECT intDiv(sum(rows), greatest(sum(marks), 1)) + 1 AS n FROM system.parts WHERE database = {db:String} AND table = {table:String} AND active`,
			Params: map[string]string{"db": st.db, "table": table}}
		if err := st.t.Select(ctx, &rows, q); err != nil {
			t.Fatal(err)
		}
		return rows[0].N
	}
	// The checkpoint may read one more granule at the larger size (a run
	// of the shard's trials can straddle one more boundary); a point
	// lookup reads at most two granules at any size (granules are cut by
	// bytes, so one can hold more rows than the average).
	gTrials, gCalls := granule("trials"), granule("model_calls")
	for _, c := range []struct {
		what         string
		small, large uint64
		bound        uint64
	}{
		{"the checkpoint (StoredTrials)", cpSmall, cpLarge, cpSmall + gTrials},
		{"the model journal (ModelCalls)", mcSmall, mcLarge, 2 * gCalls},
		{"a judge shard's read of a trial (SweepTrial, its calls included)", jSmall, jLarge, 2 * gTrials},
	} {
		if c.large > c.bound {
			t.Errorf("%s read %d rows with %d trials stored, %d with %d: over %d, it grows with the sweep (a granule of trials holds %d rows, of model_calls %d)",
				c.what, c.small, small, c.large, large, c.bound, gTrials, gCalls)
		}
		if c.large > large/2 {
			t.Errorf("%s read %d of the sweep's %d rows: a scan", c.what, c.large, large)
		}
	}
}
