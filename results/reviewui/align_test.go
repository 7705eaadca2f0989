package reviewui

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rebound/results/artifact"
)

func calls(spec ...string) []artifact.Call {
	var out []artifact.Call
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, artifact.Call{Index: len(out) + 1, Step: spec[i], Tool: spec[i+1], OK: true})
	}
	return out
}

func TestAlignExamples(t *testing.T) {
	// The naive retrier refunds twice; the careful agent reconciles with a
	// status read instead (a tool the other never calls).
	naive := calls("read-invoice", "get_invoice", "refund", "refund", "refund (retry)", "refund")
	careful := calls("read-invoice", "get_invoice", "refund", "refund", "refund (reconcile)", "refund_status")
	naive[1].OK, careful[1].OK = false, false
	a := Align(naive, careful)
	if a.FirstDivergence != 2 || len(a.Rows) != 4 {
		t.Fatalf("rows %d, first divergence %d; want 4 rows diverging at 2", len(a.Rows), a.FirstDivergence)
	}
	if r := a.Rows[2]; r.Left == nil || r.Right != nil || a.Rows[3].Left != nil || !a.Rows[3].RightNewTool {
		t.Errorf("rows 2-3 = %+v %+v", a.Rows[2], a.Rows[3])
	}
	if fmt.Sprint(a.OnlyLeft, a.OnlyRight) != "[] [refund_status]" {
		t.Errorf("only-in tools %v %v", a.OnlyLeft, a.OnlyRight)
	}
	// Same trajectories: no divergence.
	if a := Align(careful, careful); a.FirstDivergence != -1 || len(a.Rows) != 3 {
		t.Errorf("same trajectory: %+v", a)
	}
	// A different result on the same step is a divergence without a gap.
	other := calls("read-invoice", "get_invoice", "refund", "refund", "refund (reconcile)", "refund_status")
	other[1].Code = "timeout"
	if a := Align(careful, other); a.FirstDivergence != 1 || len(a.Rows) != 3 {
		t.Errorf("different result: first divergence %d rows %d", a.FirstDivergence, len(a.Rows))
	}
	if a := Align(nil, nil); a.FirstDivergence != -1 || len(a.Rows) != 0 {
		t.Errorf("empty: %+v", a)
	}
}

// TestAlignProperties on generated trajectories: every call of each side
// appears once and in order, a row pairs two calls of the same step, no
// alignment pairs fewer calls than the longest common subsequence of the
// step labels (computed here by brute force on short inputs), and the
// first divergence is the first row that differs.
func TestAlignProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	steps := []string{"a", "b", "c", "off plan"}
	gen := func() []artifact.Call {
		n := rng.IntN(7)
		var spec []string
		for i := 0; i < n; i++ {
			s := steps[rng.IntN(len(steps))]
			spec = append(spec, s, "tool-"+s+fmt.Sprint(rng.IntN(2)))
		}
		return calls(spec...)
	}
	for iter := 0; iter < 3000; iter++ {
		l, r := gen(), gen()
		a := Align(l, r)
		li, ri, paired := 0, 0, 0
		first := -1
		for k, row := range a.Rows {
			if row.Left != nil {
				if row.Left.Index != l[li].Index {
					t.Fatalf("left out of order at row %d", k)
				}
				li++
			}
			if row.Right != nil {
				if row.Right.Index != r[ri].Index {
					t.Fatalf("right out of order at row %d", k)
				}
				ri++
			}
			if row.Left != nil && row.Right != nil {
				paired++
				if !sameStep(*row.Left, *row.Right) {
					t.Fatalf("row %d pairs different steps", k)
				}
			}
			if row.Differs && first < 0 {
				first = k
			}
		}
		if li != len(l) || ri != len(r) {
			t.Fatalf("calls lost: %d/%d %d/%d", li, len(l), ri, len(r))
		}
		if want := bruteLCS(l, r); paired != want {
			t.Fatalf("paired %d calls, the longest common subsequence is %d", paired, want)
		}
		if first != a.FirstDivergence {
			t.Fatalf("first divergence %d, want %d", a.FirstDivergence, first)
		}
	}
}

// bruteLCS is the longest common subsequence by plain recursion.
func bruteLCS(l, r []artifact.Call) int {
	if len(l) == 0 || len(r) == 0 {
		return 0
	}
	if sameStep(l[0], r[0]) {
		return 1 + bruteLCS(l[1:], r[1:])
	}
	return max(bruteLCS(l[1:], r), bruteLCS(l, r[1:]))
}
