package trial

import (
	"strconv"
	"testing"
)

// A worker lives for many sweeps: the probed-path cache must not grow
// with every (scenario, variant, seed) it ever saw.
func TestPathCacheIsBounded(t *testing.T) {
	c := &pathCache{m: map[string]pathEntry{}}
	for i := range pathCacheMax + 1000 {
		c.put(strconv.Itoa(i), pathEntry{})
		if len(c.m) > pathCacheMax {
			t.Fatalf("after %d puts the cache holds %d paths, bound %d", i+1, len(c.m), pathCacheMax)
		}
	}
	if _, ok := c.get(strconv.Itoa(pathCacheMax + 999)); !ok {
		t.Fatal("the latest path is not cached")
	}
}
