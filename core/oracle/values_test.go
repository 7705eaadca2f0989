package oracle

import (
	"testing"

	"rebound/core/internal/valuetable"
)

// The oracle's own comparisons (it never calls the grader's) follow the
// table the grader's follow too.
func TestNumAndSameFollowTheSharedTable(t *testing.T) {
	for _, c := range valuetable.Numbers {
		if f, ok := num(c.V); f != c.F || ok != c.OK {
			t.Errorf("num(%s %#v) = %v, %v; want %v, %v", c.Name, c.V, f, ok, c.F, c.OK)
		}
	}
	for _, c := range valuetable.Pairs {
		if got := same(c.A, c.B); got != c.Equal {
			t.Errorf("same(%s: %#v, %#v) = %v, want %v", c.Name, c.A, c.B, got, c.Equal)
		}
	}
}
