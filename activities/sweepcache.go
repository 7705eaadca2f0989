package activities

import (
	"container/list"
	"sync"

	"rebound/core/scenario"
)

// sweepCacheCap bounds the sweeps whose opened plan a worker keeps. A worker
// lives for many sweeps; each entry holds a whole resolved plan (its
// scenarios, catalogs and arms), so an unbounded map grows with every sweep
// the worker ever ran. A handful covers the sweeps running at once; a sweep
// pushed out is re-read from storage on its next shard.
const sweepCacheCap = 8

// sweepEntry is what a worker keeps about one sweep.
type sweepEntry struct {
	id      string
	plan    *scenario.Resolved
	checked bool         // CheckPlan ran on plan
	check   error        // its verdict
	rows    *RowRedactor // the redactor of plan's rows, once built
}

// sweepCache is a least-recently-used cache of sweeps, safe for concurrent
// use. FinishSweep drops a finished sweep at once.
type sweepCache struct {
	mu    sync.Mutex
	cap   int
	order *list.List // front: most recently used; values *sweepEntry
	byID  map[string]*list.Element
}

func newSweepCache(capacity int) *sweepCache {
	return &sweepCache{cap: max(capacity, 1), order: list.New(), byID: map[string]*list.Element{}}
}

// plan returns the cached plan of a sweep.
func (c *sweepCache) plan(id string) (*scenario.Resolved, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*sweepEntry).plan, true
}

// putPlan caches a sweep's plan, evicting the least recently used sweep
// beyond the cap. A plan already cached for the sweep is kept (two shards
// that loaded it at once hold equal plans) and returned.
func (c *sweepCache) putPlan(id string, p *scenario.Resolved) *scenario.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*sweepEntry).plan
	}
	c.byID[id] = c.order.PushFront(&sweepEntry{id: id, plan: p})
	for c.order.Len() > c.cap {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byID, old.Value.(*sweepEntry).id)
	}
	return p
}

// check returns CheckPlan's verdict on the cached plan p of a sweep,
// running check once while p stays cached.
func (c *sweepCache) check(id string, p *scenario.Resolved, run func(*scenario.Resolved) error) error {
	c.mu.Lock()
	if e, ok := c.byID[id]; ok {
		if se := e.Value.(*sweepEntry); se.plan == p && se.checked {
			c.mu.Unlock()
			return se.check
		}
	}
	c.mu.Unlock()
	err := run(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		if se := e.Value.(*sweepEntry); se.plan == p {
			se.checked, se.check = true, err
		}
	}
	return err
}

// rowRedactor returns the row redactor of the cached plan p of a sweep,
// building it once while p stays cached. A plan that is not (or no longer)
// cached gets a new one each time.
func (c *sweepCache) rowRedactor(id string, p *scenario.Resolved, build func(*scenario.Resolved) (*RowRedactor, error)) (*RowRedactor, error) {
	c.mu.Lock()
	if e, ok := c.byID[id]; ok {
		if se := e.Value.(*sweepEntry); se.plan == p && se.rows != nil {
			c.mu.Unlock()
			return se.rows, nil
		}
	}
	c.mu.Unlock()
	rr, err := build(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		if se := e.Value.(*sweepEntry); se.plan == p {
			if se.rows == nil {
				se.rows = rr
			}
			return se.rows, nil
		}
	}
	return rr, nil
}

// drop forgets a sweep.
func (c *sweepCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
		delete(c.byID, id)
	}
}

// len is the number of cached sweeps.
func (c *sweepCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
