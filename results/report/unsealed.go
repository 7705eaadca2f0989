package report

import "fmt"

// Unsealed trials. A command arm runs its agent's process sealed in a
// sandbox unless the arm says sandbox: none; the trials of such an arm are
// stored as unsealed (record.Trial.Unsealed) and counted per arm in SQL
// with the other totals. The agent of an unsealed trial could reach the
// worker, the store and other trials, so nothing it is scored on is
// protected from it: every output names such an arm beside its rates (the
// column header says "unsealed", a note under the table counts its
// trials, JSON carries unsealed_trials). Sealed and built-in arms print as
// they always did in text, Markdown, HTML and JUnit; in JSON their
// unsealed_trials is 0 (present, so that a reader can tell "none" from a
// report written before the count existed).

// unsealedMark is appended to the column header of an arm with unsealed
// trials.
const unsealedMark = " (unsealed)"

// armLabel is the column header of an arm: its name, marked when some of
// its trials ran unsealed.
func armLabel(name string, unsealed int) string {
	if unsealed == 0 {
		return name
	}
	return name + unsealedMark
}

// unsealedNote is the note on one arm with unsealed trials; who names it
// ("arm X", "candidate arm X").
func unsealedNote(who string, unsealed, trials int) string {
	return fmt.Sprintf("%s: %d of %d trials ran unsealed (sandbox: none): the agent could reach the worker, the store and other trials, so these rates are not protected against the agent rewriting them",
		who, unsealed, trials)
}

// Label is the arm's column header: its name, with "(unsealed)" when
// some of its trials ran unsealed.
func (a ArmSummary) Label() string { return armLabel(a.Arm, a.Unsealed) }

// UnsealedNotes has one note per arm with unsealed trials, in report
// order; none for a sweep whose trials all ran sealed (or in process).
func (s Summary) UnsealedNotes() []string {
	var out []string
	for _, a := range s.Arms {
		if a.Unsealed > 0 {
			out = append(out, unsealedNote("arm "+a.Arm, a.Unsealed, a.Trials))
		}
	}
	return out
}

// UnsealedNotes has the note of each side with unsealed trials, baseline
// first; none when both ran sealed. The comparison's constructors also add
// them to Warnings, which every format prints.
func (c *Comparison) UnsealedNotes() []string {
	var out []string
	if c.BaselineUnsealed > 0 {
		out = append(out, unsealedNote("baseline arm "+c.Baseline.Arm, c.BaselineUnsealed, c.BaselineTrials))
	}
	if c.CandidateUnsealed > 0 {
		out = append(out, unsealedNote("candidate arm "+c.Candidate.Arm, c.CandidateUnsealed, c.CandidateTrials))
	}
	return out
}

// Unsealed reports whether either side has unsealed trials.
func (c *Comparison) Unsealed() bool { return c.BaselineUnsealed > 0 || c.CandidateUnsealed > 0 }
