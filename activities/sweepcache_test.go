package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"rebound/core/scenario"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/workflows"
)

func TestSweepCacheIsBoundedLRU(t *testing.T) {
	c := newSweepCache(3)
	plans := map[string]*scenario.Resolved{}
	for i := range 100 {
		id := fmt.Sprint("s", i)
		plans[id] = &scenario.Resolved{Name: id}
		c.putPlan(id, plans[id])
		if c.len() > 3 {
			t.Fatalf("after %d sweeps the cache holds %d, cap 3", i+1, c.len())
		}
	}
	// s97..s99 remain; using s97 makes s98 the oldest.
	if _, ok := c.plan("s97"); !ok {
		t.Fatal("s97 evicted too early")
	}
	c.putPlan("new", &scenario.Resolved{})
	if _, ok := c.plan("s98"); ok {
		t.Error("s98 (least recently used) still cached")
	}
	for _, id := range []string{"s97", "s99", "new"} {
		if _, ok := c.plan(id); !ok {
			t.Errorf("%s evicted", id)
		}
	}
	// A second load of a cached sweep keeps the first plan.
	if got := c.putPlan("s99", &scenario.Resolved{}); got != plans["s99"] {
		t.Error("putPlan replaced a cached plan")
	}
	c.drop("s99")
	if _, ok := c.plan("s99"); ok || c.len() != 2 {
		t.Errorf("after drop: cached=%v len=%d", ok, c.len())
	}
}

func TestSweepCacheChecksOncePerPlan(t *testing.T) {
	c := newSweepCache(2)
	p := c.putPlan("s", &scenario.Resolved{})
	runs := 0
	bad := errors.New("bad plan")
	run := func(*scenario.Resolved) error { runs++; return bad }
	for range 5 {
		if err := c.check("s", p, run); err != bad {
			t.Fatalf("check = %v", err)
		}
	}
	if runs != 1 {
		t.Fatalf("CheckPlan ran %d times for one cached plan", runs)
	}
	// Evicted and reloaded: the new plan is checked again, and the verdict
	// does not outlive its entry.
	c.drop("s")
	p2 := c.putPlan("s", &scenario.Resolved{})
	if err := c.check("s", p2, run); err != bad || runs != 2 {
		t.Fatalf("reloaded plan: err=%v runs=%d", err, runs)
	}
}

func TestSweepCacheBuildsRowRedactorOncePerPlan(t *testing.T) {
	c := newSweepCache(2)
	p := c.putPlan("s", &scenario.Resolved{})
	builds := 0
	build := func(*scenario.Resolved) (*RowRedactor, error) { builds++; return NewRowRedactor(nil), nil }
	first, err := c.rowRedactor("s", p, build)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if rr, _ := c.rowRedactor("s", p, build); rr != first {
			t.Fatal("another row redactor for the same cached plan")
		}
	}
	if builds != 1 {
		t.Fatalf("built %d row redactors for one cached plan", builds)
	}
	// Dropped and reloaded: a new plan gets a new redactor; an uncached
	// sweep gets one per call.
	c.drop("s")
	p2 := c.putPlan("s", &scenario.Resolved{})
	if rr, _ := c.rowRedactor("s", p2, build); rr == first || builds != 2 {
		t.Fatalf("reloaded plan: same redactor=%v builds=%d", rr == first, builds)
	}
	if _, err := c.rowRedactor("other", p2, build); err != nil || builds != 3 {
		t.Fatalf("uncached sweep: err=%v builds=%d", err, builds)
	}
}

// countingStore counts plan reads and accepts the final status.
type countingStore struct {
	*memStore
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingStore) Sweep(ctx context.Context, id string) (record.Sweep, error) {
	c.mu.Lock()
	c.reads[id]++
	c.mu.Unlock()
	sw, err := c.memStore.Sweep(ctx, id)
	sw.SweepID = id
	return sw, err
}

func (c *countingStore) PutSweep(context.Context, record.Sweep) error { return nil }

// A worker that runs many sweeps keeps the plans of at most sweepCacheCap
// of them, reads a recent sweep's plan once, and forgets a finished sweep.
func TestWorkerPlansStayBounded(t *testing.T) {
	st := &countingStore{memStore: shardStore(t, "  - {name: careful, agent: careful}", 1), reads: map[string]int{}}
	a := &Activities{Store: st, RedactionKey: testKey}
	ctx := context.Background()
	n := 5 * sweepCacheCap
	for i := range n {
		id := fmt.Sprint("sweep-", i)
		for range 2 {
			st.stored = map[string]bool{}
			if _, err := a.RunShard(ctx, workflows.ShardInput{SweepID: id, From: 0, To: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if got := a.sweepCache().len(); got > sweepCacheCap {
			t.Fatalf("after %d sweeps the worker caches %d plans, cap %d", i+1, got, sweepCacheCap)
		}
		if st.reads[id] != 1 {
			t.Fatalf("%s: plan read %d times for two shards in a row, want 1", id, st.reads[id])
		}
	}
	last := fmt.Sprint("sweep-", n-1)
	if err := a.FinishSweep(ctx, workflows.FinishSweepInput{SweepID: last, Status: sweepstatus.Completed}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.sweepCache().plan(last); ok {
		t.Fatal("a finished sweep's plan is still cached")
	}
	// The oldest sweep was pushed out: a late shard reads its plan again.
	st.stored = map[string]bool{}
	if _, err := a.RunShard(ctx, workflows.ShardInput{SweepID: "sweep-0", From: 0, To: 1}); err != nil {
		t.Fatal(err)
	}
	if st.reads["sweep-0"] != 2 {
		t.Fatalf("evicted sweep-0 read %d times, want 2", st.reads["sweep-0"])
	}
}
