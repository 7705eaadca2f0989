package reviewui

import "rebound/results/artifact"

// Row is one line of two trajectories side by side: a call of each arm
// bound to the same plan step, or a call only one arm made (the other nil).
type Row struct {
	Left, Right *artifact.Call
	// Differs: only one arm made the call, or they called different tools
	// or got different results.
	Differs bool
	// LeftNewTool, RightNewTool: the call's tool is one the other arm never
	// called (a fallback tool one arm newly uses).
	LeftNewTool, RightNewTool bool
}

// Alignment is two trajectories aligned by plan step.
type Alignment struct {
	Rows []Row
	// FirstDivergence is the index of the first row that differs; -1 when
	// the trajectories are the same.
	FirstDivergence int
	// OnlyLeft, OnlyRight are the tools one arm called and the other never
	// did, in order of first use.
	OnlyLeft, OnlyRight []string
}

// Align pairs two arms' calls by the plan step the grader bound them to
// (artifact.Call.Step): a longest common subsequence of the step labels,
// so that a retry, a reconciliation read or a fallback one arm made shows
// against a gap in the other, and the shared steps stay on one line.
func Align(left, right []artifact.Call) Alignment {
	n, m := len(left), len(right)
	// lcs[i][j]: the longest common subsequence of left[i:] and right[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case sameStep(left[i], right[j]):
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	lt, rt := toolSet(left), toolSet(right)
	a := Alignment{FirstDivergence: -1, OnlyLeft: onlyIn(left, rt), OnlyRight: onlyIn(right, lt)}
	i, j := 0, 0
	for i < n || j < m {
		var row Row
		switch {
		case i < n && j < m && sameStep(left[i], right[j]):
			row = Row{Left: &left[i], Right: &right[j]}
			i, j = i+1, j+1
		case j >= m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			row = Row{Left: &left[i]}
			i++
		default:
			row = Row{Right: &right[j]}
			j++
		}
		row.Differs = row.Left == nil || row.Right == nil || row.Left.Tool != row.Right.Tool ||
			row.Left.OK != row.Right.OK || row.Left.Code != row.Right.Code || row.Left.Fault != row.Right.Fault
		row.LeftNewTool = row.Left != nil && !rt[row.Left.Tool]
		row.RightNewTool = row.Right != nil && !lt[row.Right.Tool]
		if row.Differs && a.FirstDivergence < 0 {
			a.FirstDivergence = len(a.Rows)
		}
		a.Rows = append(a.Rows, row)
	}
	return a
}

// sameStep: both calls served the same plan step in the same role (two
// off-plan calls match when they call the same tool).
func sameStep(a, b artifact.Call) bool {
	if a.Step != b.Step {
		return false
	}
	if a.Step == "" || a.Step == "off plan" {
		return a.Tool == b.Tool
	}
	return true
}

func toolSet(cs []artifact.Call) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		out[c.Tool] = true
	}
	return out
}

func onlyIn(cs []artifact.Call, other map[string]bool) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, c := range cs {
		if !other[c.Tool] && !seen[c.Tool] {
			seen[c.Tool] = true
			out = append(out, c.Tool)
		}
	}
	return out
}
