// Package calibrate runs every reference agent on every scenario variant
// and checks the grader against agents whose behaviour is known: every check
// must fail for at least one reference agent and pass for the careful one.
// A check that no agent can fail is a defect, not a comfort (seed 001: "a
// grader that can misread the right answer is not a grader").
package calibrate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/core/trial"
)

// Reference is the agent every check must pass for.
const Reference = "careful"

// Cell is the verdict of one agent on one scenario variant.
type Cell struct {
	Scenario string
	Variant  string
	Agent    string
	Verdict  grade.Verdict
}

// Matrix is the verdicts of agents x scenario variants.
type Matrix struct {
	Checks []grade.Check
	Cells  []Cell
}

// Run grades every agent on every variant of every scenario (seed 1) with
// the given checks.
func Run(ctx context.Context, scenarios []*scenario.Scenario, agents []string, checks []grade.Check) (*Matrix, error) {
	m := &Matrix{Checks: checks}
	for _, sc := range scenarios {
		for _, v := range sc.Variants {
			for _, name := range agents {
				ag, err := agent.NewScripted(name)
				if err != nil {
					return nil, err
				}
				r, err := trial.RunWith(ctx, trial.Spec{SweepID: "calibration", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: name, Agent: name}, Seed: 1}, ag, checks)
				if err != nil {
					return nil, err
				}
				m.Cells = append(m.Cells, Cell{Scenario: sc.Name, Variant: v.Name, Agent: name, Verdict: r.Verdict})
			}
		}
	}
	return m, nil
}

// Problem is a calibration failure.
type Problem struct {
	Check  string
	Reason string
}

func (p Problem) String() string { return p.Check + ": " + p.Reason }

// Problems lists the checks that no agent fails, and the checks the
// reference agent fails (with where).
func (m *Matrix) Problems() []Problem {
	var out []Problem
	for _, c := range m.Checks {
		failedBy := map[string]bool{}
		var refFails []string
		for _, cell := range m.Cells {
			r, ok := cell.Verdict.Check(c.Name)
			if !ok || r.Status != grade.Fail {
				continue
			}
			failedBy[cell.Agent] = true
			if cell.Agent == Reference {
				refFails = append(refFails, cell.Scenario+"/"+cell.Variant+": "+r.Detail)
			}
		}
		if len(failedBy) == 0 {
			out = append(out, Problem{c.Name, "no reference agent fails it on any scenario: it cannot tell good behaviour from bad"})
		}
		if len(refFails) > 0 {
			out = append(out, Problem{c.Name, "the careful agent fails it: " + strings.Join(refFails, "; ")})
		}
	}
	return out
}

// Table renders agents x checks: for each check, how many variants each
// agent failed it on, out of the variants where it was tested.
func (m *Matrix) Table() string {
	agents := m.agents()
	var b strings.Builder
	b.WriteString("| check |")
	for _, a := range agents {
		b.WriteString(" " + a + " |")
	}
	b.WriteString("\n|---|")
	for range agents {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range m.Checks {
		b.WriteString("| " + c.Name + " |")
		for _, a := range agents {
			failed, tested := 0, 0
			for _, cell := range m.Cells {
				if cell.Agent != a {
					continue
				}
				if r, ok := cell.Verdict.Check(c.Name); ok && r.Status != grade.NotTested {
					tested++
					if r.Status == grade.Fail {
						failed++
					}
				}
			}
			if tested == 0 {
				b.WriteString(" - |")
			} else {
				fmt.Fprintf(&b, " %d/%d |", failed, tested)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (m *Matrix) agents() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range m.Cells {
		if !seen[c.Agent] {
			seen[c.Agent] = true
			out = append(out, c.Agent)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i] == Reference && out[j] != Reference })
	return out
}
