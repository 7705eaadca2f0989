package reviewui

import "sync"

// versioned keeps a few computed values (a sweep's report, a comparison),
// each under the version of the stored data it was computed from
// (Source.SweepVersion): a value is served again only while its version
// is current, so a sweep that is still being written, regraded or deleted
// is recomputed, and reopening a finished one costs the version query.
type versioned[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]versionedValue[V]
}

type versionedValue[V any] struct {
	version string
	v       V
}

func newVersioned[K comparable, V any](max int) *versioned[K, V] {
	return &versioned[K, V]{max: max, m: map[K]versionedValue[V]{}}
}

// get returns the value kept under k if it was computed at version.
func (c *versioned[K, V]) get(k K, version string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.version != version {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v under k at version, dropping another entry when full.
func (c *versioned[K, V]) put(k K, version string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = versionedValue[V]{version: version, v: v}
}
