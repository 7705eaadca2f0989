package grade

import (
	"testing"

	"rebound/core/internal/valuetable"
)

// The grader's comparisons follow the table the oracle's copies follow too.
func TestNumberAndEqualFollowTheSharedTable(t *testing.T) {
	for _, c := range valuetable.Numbers {
		if f, ok := number(c.V); f != c.F || ok != c.OK {
			t.Errorf("number(%s %#v) = %v, %v; want %v, %v", c.Name, c.V, f, ok, c.F, c.OK)
		}
	}
	for _, c := range valuetable.Pairs {
		if got := Equal(c.A, c.B); got != c.Equal {
			t.Errorf("Equal(%s: %#v, %#v) = %v, want %v", c.Name, c.A, c.B, got, c.Equal)
		}
	}
}
