package regrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
)

// memStore is a Store over records in memory that logs its writes in
// order; failOnWrite > 0 makes that WriteTrials call fail.
type memStore struct {
	sweeps      map[string]record.Sweep
	trials      []record.Trial
	written     []record.Trial
	log         []string
	writes      int
	failOnWrite int
}

func (m *memStore) Sweep(_ context.Context, id string) (record.Sweep, error) {
	sw, ok := m.sweeps[id]
	if !ok {
		return sw, fmt.Errorf("sweep %s: %w", id, record.ErrNotFound)
	}
	return sw, nil
}

func (m *memStore) EachTrial(_ context.Context, sweepID string, _ record.TrialSelect, fn func(record.Trial) error) error {
	for _, t := range m.trials {
		if t.SweepID == sweepID {
			if err := fn(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memStore) WriteTrials(_ context.Context, trials []record.Trial, _ []record.ToolCall) error {
	m.writes++
	if m.writes == m.failOnWrite {
		return errors.New("connection reset")
	}
	m.written = append(m.written, trials...)
	m.log = append(m.log, fmt.Sprintf("trials %d", len(trials)))
	return nil
}

func (m *memStore) PutSweep(_ context.Context, sw record.Sweep) error {
	m.sweeps[sw.SweepID] = sw
	m.log = append(m.log, "sweep "+sw.SweepID+" "+sw.Status)
	return nil
}

var _ Store = (*memStore)(nil)

// planKeys opens every stored plan as one with no scenarios.
type planKeys struct{}

func (planKeys) OpenPlan(string) (*scenario.Resolved, error) { return &scenario.Resolved{}, nil }
func (planKeys) Redactor(*scenario.Resolved) (*redact.Redactor, error) {
	return redact.New(nil, []byte("a test hash key of thirty-two bytes!"))
}

// lostTrials stores n trials per arm lost to attrition: regrade copies
// them without grading (Skipped).
func lostTrials(n int, arms ...string) *memStore {
	m := &memStore{sweeps: map[string]record.Sweep{"s": {SweepID: "s", Name: "nightly", PlanHash: "h", PlanJSON: "{sealed}", Arms: arms, Status: sweepstatus.Completed}}}
	for _, arm := range arms {
		for seed := range uint64(n) {
			m.trials = append(m.trials, record.Trial{SweepID: "s", TrialID: trial.ID("s", "sc", "v", arm, seed), Scenario: "sc", Variant: "v", Arm: arm, Seed: seed, Attrition: true})
		}
	}
	return m
}

func TestSweepWritesBothArmsInBatchesAndTheSweepLast(t *testing.T) {
	m := lostTrials(750, "b", "a")
	sum, err := Sweep(context.Background(), m, "s", "", planKeys{})
	if err != nil {
		t.Fatal(err)
	}
	into := Into("s")
	if sum.Into != into || sum.Skipped != 1500 || sum.Regraded != 0 {
		t.Errorf("summary = %+v, want 1500 skipped into %s", sum, into)
	}
	if len(m.written) != 3000 {
		t.Fatalf("wrote %d trials, want 3000 (each as itself and as ARM%s)", len(m.written), StoredSuffix)
	}
	if m.writes < 3 {
		t.Errorf("wrote in %d batches, want batches of about 1000, not the sweep at once", m.writes)
	}
	if first, last := m.log[0], m.log[len(m.log)-1]; first != "sweep "+into+" regrading" || last != "sweep "+into+" completed" ||
		slices.Index(m.log, last) != len(m.log)-1 || slices.Index(m.log[1:], first) != -1 {
		t.Errorf("writes = %v, want the sweep row first (regrading) and last (completed), and only then", m.log)
	}
	sw := m.sweeps[into]
	if sw.Status != sweepstatus.Completed || sw.TrialsPlanned != 3000 || sw.PlanJSON != "{sealed}" || !strings.Contains(sw.Name, "regraded") ||
		!slices.Equal(sw.Arms, []string{"a", "a" + StoredSuffix, "b", "b" + StoredSuffix}) {
		t.Errorf("regraded sweep = %+v", sw)
	}
	ids := map[string]bool{}
	for _, tr := range m.written {
		if tr.SweepID != into || tr.TrialID != trial.ID(into, tr.Scenario, tr.Variant, tr.Arm, tr.Seed) {
			t.Fatalf("trial %+v is not keyed by the new sweep's coordinates", tr)
		}
		ids[tr.TrialID] = true
	}
	if len(ids) != 3000 {
		t.Errorf("%d distinct trial ids, want 3000", len(ids))
	}
}

// A regrade cut short by an error leaves its rows under a sweep row that
// says so (failed, never completed), and running it again completes it
// with the same rows.
func TestSweepCutShortLeavesNoOrphansAndARerunCompletes(t *testing.T) {
	m := lostTrials(750, "a", "b")
	m.failOnWrite = 2
	if _, err := Sweep(context.Background(), m, "s", "", planKeys{}); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want the write's error", err)
	}
	into := Into("s")
	if sw, ok := m.sweeps[into]; !ok || sw.Status != sweepstatus.Failed || len(m.written) == 0 {
		t.Fatalf("a regrade cut short after %d rows left sweep row %+v (present %v): %v", len(m.written), sw, ok, m.log)
	}
	if m.log[0] != "sweep "+into+" regrading" {
		t.Errorf("the first write was %q, want the sweep row (regrading)", m.log[0])
	}
	first := slices.Clone(m.written)
	m.written, m.log, m.failOnWrite = nil, nil, 0
	if _, err := Sweep(context.Background(), m, "s", "", planKeys{}); err != nil {
		t.Fatal(err)
	}
	if sw := m.sweeps[into]; sw.Status != sweepstatus.Completed || sw.TrialsPlanned != 3000 {
		t.Errorf("after the rerun: %+v", sw)
	}
	byID := map[string]record.Trial{}
	for _, tr := range m.written {
		byID[tr.TrialID] = tr
	}
	for _, tr := range first {
		if got, ok := byID[tr.TrialID]; !ok || got.Arm != tr.Arm || got.Attrition != tr.Attrition {
			t.Errorf("trial %s written by the cut-short run is not the rerun's: %+v vs %+v", tr.TrialID, tr, got)
		}
	}
}

func TestSweepRefuses(t *testing.T) {
	ctx := context.Background()
	m := lostTrials(1, "a")
	if _, err := Sweep(ctx, m, "s", "s", planKeys{}); err == nil || !strings.Contains(err.Error(), "must differ") {
		t.Errorf("regrading a sweep into itself: %v", err)
	}
	if _, err := Sweep(ctx, m, "gone", "", planKeys{}); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("an unknown sweep: %v, want record.ErrNotFound", err)
	}
	// A graded trial of a scenario the plan does not hold cannot be
	// regraded: an error naming it, and no sweep row.
	m.trials[0].Attrition, m.trials[0].Evidence = false, "{}"
	_, err := Sweep(ctx, m, "s", "", planKeys{})
	if err == nil || !strings.Contains(err.Error(), `no scenario "sc"`) || !strings.Contains(err.Error(), m.trials[0].TrialID) {
		t.Errorf("a trial of an unknown scenario: %v", err)
	}
	if len(m.log) != 0 {
		t.Errorf("wrote %v after refusing", m.log)
	}
}
