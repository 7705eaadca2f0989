package trial

import (
	"reflect"
	"strings"
	"testing"

	"rebound/core/bounds"
)

// A world state over bounds.WorldState is graded and stored shrunk (its
// largest values cut), one within it is left as it is.
func TestBoundState(t *testing.T) {
	small := map[string]any{"writes": 3, "name": "x"}
	if got := boundState(small); !reflect.DeepEqual(got, small) {
		t.Fatalf("small state changed: %v", got)
	}
	huge := map[string]any{"count": 2, "blobs": map[string]any{
		"a": strings.Repeat("a ", 3*bounds.MiB), "b": strings.Repeat("\x00", 2*bounds.MiB),
	}}
	got := boundState(huge)
	if n := bounds.SizeOf(got); n > bounds.WorldState {
		t.Fatalf("state is %d bytes", n)
	}
	if got["count"] != float64(2) {
		t.Fatalf("small members lost: %v", got["count"])
	}
	blobs := got["blobs"].(map[string]any)
	if a := blobs["a"].(string); !strings.Contains(a, "…[truncated: ") || !strings.HasPrefix(a, "a a a") {
		t.Fatalf("a not cut: %d bytes", len(a))
	}
}
