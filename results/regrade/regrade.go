// Package regrade re-scores a stored sweep with the current grader. Every
// trial keeps the redacted evidence its grader read (ledger, final world
// state, claim, end time, tool cost); regrading runs the current checks over
// it (and probes the realized path again) without running any agent or
// paying for a model, and writes the result as a new sweep in which every
// arm appears twice: under its own name with the current grader's verdicts,
// and as ARM@stored with the verdicts it was stored with, so the two grader
// versions pair on the same cases in `rebound compare`.
package regrade

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
)

// Summary is what a regrade did.
type Summary struct {
	From          string `json:"from"`
	Into          string `json:"into"`
	GraderVersion int    `json:"grader_version"`
	Regraded      int    `json:"regraded"`
	// Skipped are trials with nothing to regrade: attrition, or rows
	// written before trials kept their evidence.
	Skipped int `json:"skipped"`
	// Changed counts, per outcome metric and per check, the trials whose
	// verdict moved (e.g. "recovered: true -> false").
	Changed map[string]int `json:"changed"`
	// Arms maps each stored arm to the name its stored verdicts carry in
	// the new sweep.
	Arms map[string]string `json:"arms"`
}

// StoredSuffix marks, in a regraded sweep, the arm that carries the
// verdicts as they were stored.
const StoredSuffix = "@stored"

// Into returns the default id of a sweep regraded by the current grader.
func Into(sweepID string) string { return fmt.Sprintf("%s-g%d", sweepID, grade.Version) }

// Keys opens a sweep's sealed plan and builds the redactor its rows were
// written with; activities.Activities implements it with the deployment's
// redaction key.
type Keys interface {
	OpenPlan(stored string) (*scenario.Resolved, error)
	Redactor(plan *scenario.Resolved) (*redact.Redactor, error)
}

// Store is what a regrade reads and writes: the stored sweep and its
// trials, and the new sweep's trials and row. storage.Store implements it.
type Store interface {
	Sweep(ctx context.Context, id string) (record.Sweep, error)
	EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error
	// WriteTrials and PutSweep are idempotent under retries (the latest
	// write of a trial or sweep wins).
	WriteTrials(ctx context.Context, trials []record.Trial, calls []record.ToolCall) error
	PutSweep(ctx context.Context, sw record.Sweep) error
}

// Sweep regrades sweepID into a new sweep into (Into(sweepID) when empty).
// keys must hold the redaction key the sweep was stored with, so the plan
// opens and the scenario's own arguments hash like the stored ones. Writing
// is idempotent: trial ids are derived from the new sweep's coordinates.
func Sweep(ctx context.Context, store Store, sweepID, into string, keys Keys) (Summary, error) {
	if into == "" {
		into = Into(sweepID)
	}
	sum := Summary{From: sweepID, Into: into, GraderVersion: grade.Version, Changed: map[string]int{}, Arms: map[string]string{}}
	if into == sweepID {
		return sum, fmt.Errorf("regrade: the target sweep must differ from %s", sweepID)
	}
	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		return sum, err
	}
	plan, err := keys.OpenPlan(sw.PlanJSON)
	if err != nil {
		return sum, fmt.Errorf("sweep %s: the stored plan does not open (is this the redaction key it was stored with?): %w", sweepID, err)
	}
	red, err := keys.Redactor(plan)
	if err != nil {
		return sum, err
	}
	// The grader compares the stored (redacted) arguments with the plan's:
	// redact the plan's the same way.
	scenarios := map[string]*scenario.Scenario{}
	for _, sc := range plan.Scenarios {
		scenarios[sc.Name] = redactedPlan(sc, red)
	}

	// The trials are read one (arm, scenario) group at a time and written
	// in batches as they are regraded: memory follows a batch, not the
	// sweep. Before the first batch the new sweep's row is written with
	// status regrading, so no row of it is ever stored without its sweep
	// (plain SQL finds no orphans, `sweeps` lists it as regrading); it is
	// written completed once every trial is. A regrade cut short leaves it
	// regrading (killed) or failed (an error); running it again rewrites
	// the same rows (trial ids are derived) and completes it.
	const batch = 1000
	var out []record.Trial
	written := uint64(0)
	row := func(status string) record.Sweep {
		return record.Sweep{
			SweepID: into, Name: sw.Name + " (regraded)", PlanHash: sw.PlanHash, PlanJSON: sw.PlanJSON,
			TrialsPlanned: written, Status: status,
		}
	}
	begun := false
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if !begun {
			if err := store.PutSweep(ctx, row(sweepstatus.Regrading)); err != nil {
				return err
			}
			begun = true
		}
		if err := store.WriteTrials(ctx, out, nil); err != nil {
			return err
		}
		written += uint64(len(out))
		out = out[:0]
		return nil
	}
	arms := map[string]bool{}
	err = store.EachTrial(ctx, sweepID, record.TrialSelect{}, func(t record.Trial) error {
		old := t
		oldArm := t.Arm + StoredSuffix
		sum.Arms[t.Arm] = oldArm
		arms[t.Arm], arms[oldArm] = true, true
		old.SweepID, old.Arm = into, oldArm
		old.TrialID = trial.ID(into, t.Scenario, t.Variant, oldArm, t.Seed)
		out = append(out, old)

		cur := t
		cur.SweepID = into
		cur.TrialID = trial.ID(into, t.Scenario, t.Variant, t.Arm, t.Seed)
		if t.Attrition || t.Evidence == "" {
			sum.Skipped++
			out = append(out, cur)
		} else {
			sc, ok := scenarios[t.Scenario]
			if !ok {
				return fmt.Errorf("sweep %s has no scenario %q (trial %s)", sweepID, t.Scenario, t.TrialID)
			}
			v, ok := sc.Variant(t.Variant)
			if !ok {
				return fmt.Errorf("scenario %s has no variant %q (trial %s)", t.Scenario, t.Variant, t.TrialID)
			}
			verdict, err := trial.Regrade(ctx, sc, v, t.Seed, t.Evidence)
			if err != nil {
				return fmt.Errorf("trial %s: %w", t.TrialID, err)
			}
			var stored grade.Verdict
			_ = json.Unmarshal([]byte(t.Verdicts), &stored)
			for _, d := range changes(stored, verdict) {
				sum.Changed[d]++
			}
			cur.SetOutcomes(verdict.Metric)
			cur.Recoverable, cur.DeclaredRecoverable = verdict.Recoverable, v.Recoverable
			cur.GraderVersion = uint32(grade.Version)
			cur.Verdicts = red.JSON(verdict)
			out = append(out, cur)
			sum.Regraded++
		}
		if len(out) >= batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		if begun {
			// Best effort: the rows written stay under a sweep that says
			// it did not finish (a rerun completes it).
			_ = store.PutSweep(context.WithoutCancel(ctx), row(sweepstatus.Failed))
		}
		return sum, err
	}
	armList := make([]string, 0, len(arms))
	for a := range arms {
		armList = append(armList, a)
	}
	sort.Strings(armList)
	done := row(sweepstatus.Completed)
	done.Arms = armList
	if err := store.PutSweep(ctx, done); err != nil {
		return sum, err
	}
	return sum, nil
}

// changes names every outcome and check whose verdict moved.
func changes(a, b grade.Verdict) []string {
	var out []string
	for _, m := range outcome.Graded {
		if x, y := mark(a.Metric(m)), mark(b.Metric(m)); x != y {
			out = append(out, fmt.Sprintf("%s: %s -> %s", m, x, y))
		}
	}
	before := map[string]grade.Status{}
	for _, c := range a.Checks {
		before[c.Name] = c.Status
	}
	for _, c := range b.Checks {
		if was, ok := before[c.Name]; !ok || was != c.Status {
			if !ok {
				was = "absent"
			}
			out = append(out, fmt.Sprintf("check %s: %s -> %s", c.Name, was, c.Status))
		}
	}
	return out
}

func mark(b *bool) string {
	switch {
	case b == nil:
		return "not_tested"
	case *b:
		return "true"
	}
	return "false"
}

// redactedPlan returns a copy of sc whose plan arguments went through the
// redactor, as the stored ledger's did.
func redactedPlan(sc *scenario.Scenario, red *redact.Redactor) *scenario.Scenario {
	cp := *sc
	cp.Plan = make([]scenario.Step, len(sc.Plan))
	args := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		r, _ := red.Value(m).(map[string]any)
		return r
	}
	for i, st := range sc.Plan {
		st.Args, st.Corrected = args(st.Args), args(st.Corrected)
		fbs := make([]scenario.Fallback, len(st.Fallbacks))
		for j, fb := range st.Fallbacks {
			fb.Args = args(fb.Args)
			fbs[j] = fb
		}
		st.Fallbacks = fbs
		rcs := make([]scenario.Fallback, len(st.Recover))
		for j, rc := range st.Recover {
			rc.Args = args(rc.Args)
			rcs[j] = rc
		}
		st.Recover = rcs
		cp.Plan[i] = st
	}
	return &cp
}

// Report renders a summary for a person.
func (s Summary) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep %s regraded with grader %d into %s: %d trials regraded, %d skipped (attrition or no stored evidence)\n",
		s.From, s.GraderVersion, s.Into, s.Regraded, s.Skipped)
	if len(s.Changed) == 0 {
		b.WriteString("no verdict changed\n")
	} else {
		keys := make([]string, 0, len(s.Changed))
		for k := range s.Changed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("verdicts that changed (trials):\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-60s %d\n", k, s.Changed[k])
		}
	}
	arms := make([]string, 0, len(s.Arms))
	for a := range s.Arms {
		arms = append(arms, a)
	}
	sort.Strings(arms)
	for _, a := range arms {
		fmt.Fprintf(&b, "compare: rebound compare --baseline %s --candidate %s %s\n", s.Arms[a], a, s.Into)
	}
	return b.String()
}
