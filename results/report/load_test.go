package report

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"rebound/core/outcome"
	"rebound/results/record"
)

// memSource is a Source over records in memory: the reads of Load,
// LoadComparison, LoadTrend and ListTrials with no database. It records
// what it was asked, so a test can hold the loaders to the reads they make.
type memSource struct {
	sweeps  map[string]record.Sweep
	trials  []record.Trial // in EachTrial order
	totals  map[string]record.ReportTotals
	compare record.CompareTotals

	comparedA, comparedB record.CompareSide
	withClasses          bool
	noFault              string
	selected             record.TrialSelect
}

func (m *memSource) Sweep(_ context.Context, id string) (record.Sweep, error) {
	sw, ok := m.sweeps[id]
	if !ok {
		return record.Sweep{}, record.ErrNotFound
	}
	return sw, nil
}

func (m *memSource) CountTrials(_ context.Context, sweepID string) (uint64, error) {
	var n uint64
	for _, t := range m.trials {
		if t.SweepID == sweepID {
			n++
		}
	}
	return n, nil
}

func (m *memSource) ReportTotals(_ context.Context, sweepID, noFault string) (record.ReportTotals, error) {
	m.noFault = noFault
	return m.totals[sweepID], nil
}

func (m *memSource) CompareTotals(_ context.Context, a, b record.CompareSide, withClasses bool, noFault string) (record.CompareTotals, error) {
	m.comparedA, m.comparedB, m.withClasses, m.noFault = a, b, withClasses, noFault
	return m.compare, nil
}

func (m *memSource) EachTrial(_ context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error {
	m.selected = sel
	for _, t := range m.trials {
		if t.SweepID != sweepID || (sel.Arm != "" && t.Arm != sel.Arm) || (sel.Scenario != "" && t.Scenario != sel.Scenario) {
			continue
		}
		if sel.Outcomes {
			// What the store reads for Outcomes: a caller that used any
			// other field would see it zero here.
			o := record.Trial{SweepID: t.SweepID, TrialID: t.TrialID, Scenario: t.Scenario, Variant: t.Variant, Arm: t.Arm, Seed: t.Seed, Attrition: t.Attrition}
			o.SetOutcomes(t.Outcome)
			t = o
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

var _ Source = (*memSource)(nil)

// recoveredTotals: arm a on scenario s1, recovered in 3 of 4 tested trials.
func recoveredTotals(arm string) record.ReportTotals {
	var rows []record.RateTotals
	for _, m := range append([]outcome.Metric{outcome.Harm}, outcome.Stored...) {
		r := record.RateTotals{Arm: arm, Scenario: "s1", Metric: m, Trials: 4, Cells: 4}
		if m == outcome.Recovered {
			r.TestedCells, r.N, r.Successes = 4, 4, 3
			r.SumWeight, r.SumWeightY, r.SumCellWeightSq = 4, 3, 4
		}
		rows = append(rows, r)
	}
	return record.ReportTotals{ByScenario: rows}
}

func boolPtr(b bool) *bool { return &b }

func testSource() *memSource {
	return &memSource{
		sweeps: map[string]record.Sweep{
			"cand": {SweepID: "cand", Name: "nightly", Arms: []string{"a", "b"}, TrialsPlanned: 4},
			"base": {SweepID: "base", Name: "last week", Arms: []string{"a"}},
		},
		trials: []record.Trial{
			{SweepID: "cand", TrialID: "t1", Arm: "a", Scenario: "s1", Recovered: boolPtr(true)},
			{SweepID: "cand", TrialID: "t2", Arm: "a", Scenario: "s1", Recovered: boolPtr(false)},
			{SweepID: "cand", TrialID: "t3", Arm: "a", Scenario: "s2", UnsafeAction: boolPtr(true)},
			{SweepID: "cand", TrialID: "t4", Arm: "b", Scenario: "s1", Recovered: boolPtr(true)},
			{SweepID: "base", TrialID: "u1", Arm: "a", Scenario: "s1", Recovered: boolPtr(true)},
		},
		totals: map[string]record.ReportTotals{"cand": recoveredTotals("a")},
	}
}

func TestLoadReadsTheSweepsTotals(t *testing.T) {
	src := testSource()
	sum, err := Load(context.Background(), src, "cand")
	if err != nil {
		t.Fatal(err)
	}
	if src.noFault != NoFault {
		t.Errorf("ReportTotals asked with noFault %q, want %q", src.noFault, NoFault)
	}
	if sum.SweepID != "cand" || sum.Name != "nightly" || sum.TrialsPlanned != 4 || sum.TrialsStored != 4 {
		t.Errorf("summary header = %q %q planned %d stored %d, want cand nightly 4 4", sum.SweepID, sum.Name, sum.TrialsPlanned, sum.TrialsStored)
	}
	c, ok := sum.Metric("a", string(outcome.Recovered))
	if !ok || c.N != 4 || c.Successes != 3 || c.Rate != 0.75 {
		t.Errorf("recovered of a = %+v (found %v), want 3 of 4", c, ok)
	}
	if _, ok := sum.Metric("b", string(outcome.Recovered)); ok {
		t.Errorf("arm b has no totals, yet the summary reports it")
	}
}

func TestLoadersNameAnUnknownSweep(t *testing.T) {
	ctx := context.Background()
	src := testSource()
	for name, load := range map[string]func() error{
		"Load":       func() error { _, err := Load(ctx, src, "gone"); return err },
		"ListTrials": func() error { _, err := ListTrials(ctx, src, "gone", TrialFilter{}); return err },
		"LoadComparison": func() error {
			_, err := LoadComparison(ctx, src, CompareRequest{SweepID: "gone", Baseline: "a", Candidate: "a"})
			return err
		},
		"LoadComparison baseline": func() error {
			_, err := LoadComparison(ctx, src, CompareRequest{SweepID: "cand", BaselineSweep: "gone", Baseline: "a", Candidate: "a"})
			return err
		},
	} {
		err := load()
		if !errors.Is(err, record.ErrNotFound) || !strings.Contains(err.Error(), `"gone"`) || !strings.Contains(err.Error(), "rebound sweeps") {
			t.Errorf("%s of an unknown sweep: %v, want record.ErrNotFound naming it and how to list sweeps", name, err)
		}
	}
}

func TestLoadComparisonSidesAndArms(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		req     CompareRequest
		keys    [2]uint64 // cases with a trial in the baseline, candidate
		wantA   record.CompareSide
		wantErr string // "" for success; else a part of the message, and ErrUnknownArm
	}{
		{name: "one sweep", req: CompareRequest{SweepID: "cand", Baseline: "a", Candidate: "b", FaultClasses: true},
			keys: [2]uint64{3, 1}, wantA: record.CompareSide{SweepID: "cand", Arm: "a"}},
		{name: "across sweeps", req: CompareRequest{SweepID: "cand", BaselineSweep: "base", Baseline: "a", Candidate: "a"},
			keys: [2]uint64{1, 3}, wantA: record.CompareSide{SweepID: "base", Arm: "a"}},
		{name: "a regraded arm is known by its trials", req: CompareRequest{SweepID: "cand", Baseline: "a@stored", Candidate: "a"},
			keys: [2]uint64{3, 3}, wantA: record.CompareSide{SweepID: "cand", Arm: "a@stored"}},
		{name: "unknown baseline arm", req: CompareRequest{SweepID: "cand", Baseline: "zz", Candidate: "a"},
			keys: [2]uint64{0, 3}, wantErr: `baseline arm "zz": sweep cand has no such arm (arms: a, b)`},
		{name: "unknown candidate arm", req: CompareRequest{SweepID: "cand", BaselineSweep: "base", Baseline: "a", Candidate: "zz"},
			keys: [2]uint64{1, 0}, wantErr: `candidate arm "zz": sweep cand has no such arm (arms: a, b)`},
		{name: "the baseline's arms are its own sweep's", req: CompareRequest{SweepID: "cand", BaselineSweep: "base", Baseline: "b", Candidate: "a"},
			keys: [2]uint64{0, 3}, wantErr: `baseline arm "b": sweep base has no such arm (arms: a)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testSource()
			src.compare.Summary.KeysA, src.compare.Summary.KeysB = tt.keys[0], tt.keys[1]
			_, err := LoadComparison(ctx, src, tt.req)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUnknownArm) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrUnknownArm with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantB := record.CompareSide{SweepID: tt.req.SweepID, Arm: tt.req.Candidate}
			if src.comparedA != tt.wantA || src.comparedB != wantB || src.withClasses != tt.req.FaultClasses || src.noFault != NoFault {
				t.Errorf("CompareTotals(%+v, %+v, %v, %q), want (%+v, %+v, %v, %q)", src.comparedA, src.comparedB, src.withClasses, src.noFault,
					tt.wantA, wantB, tt.req.FaultClasses, NoFault)
			}
		})
	}
}

func TestListTrialsSelectsAndFilters(t *testing.T) {
	ctx := context.Background()
	ids := func(rows []TrialRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.TrialID)
		}
		return out
	}
	tests := []struct {
		f    TrialFilter
		want []string
	}{
		{TrialFilter{}, []string{"t1", "t2", "t3", "t4"}},
		{TrialFilter{Arm: "a"}, []string{"t1", "t2", "t3"}},
		{TrialFilter{Arm: "a", Scenario: "s1"}, []string{"t1", "t2"}},
		{TrialFilter{Failing: true}, []string{"t2", "t3"}},
		{TrialFilter{Arm: "b", Failing: true}, nil},
	}
	for _, tt := range tests {
		src := testSource()
		rows, err := ListTrials(ctx, src, "cand", tt.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rows); !slices.Equal(got, tt.want) {
			t.Errorf("ListTrials(%+v) = %v, want %v", tt.f, got, tt.want)
		}
		if want := (record.TrialSelect{Arm: tt.f.Arm, Scenario: tt.f.Scenario}); src.selected != want {
			t.Errorf("ListTrials(%+v) read %+v, want the store to select %+v", tt.f, src.selected, want)
		}
	}
}

func TestLoadTrendIsOldestFirst(t *testing.T) {
	src := testSource()
	src.totals["base"] = recoveredTotals("a")
	// Runs come newest first, as storage lists sweeps.
	runs := []record.Sweep{src.sweeps["cand"], src.sweeps["base"]}
	tr, err := LoadTrend(context.Background(), src, runs, []string{string(outcome.Recovered)})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 2 || tr.Runs[0].SweepID != "base" || tr.Runs[1].SweepID != "cand" {
		t.Fatalf("runs = %+v, want base then cand", tr.Runs)
	}
	if c := tr.Runs[1].Rates["a"][string(outcome.Recovered)]; c.N != 4 || c.Successes != 3 {
		t.Errorf("cand's recovered of a = %+v, want 3 of 4", c)
	}
	if _, err := LoadTrend(context.Background(), src, runs, []string{"speed"}); !errors.Is(err, ErrUnknownMetric) {
		t.Errorf("an unknown metric: %v, want ErrUnknownMetric", err)
	}
}
