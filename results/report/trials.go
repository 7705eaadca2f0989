package report

import (
	"context"

	"rebound/results/record"
)

// TrialFilter selects trials for ListTrials; zero fields select all.
type TrialFilter struct {
	Arm, Scenario string
	// Failing keeps only trials with a bad outcome (record.Trial.BadOutcomes).
	Failing bool
}

// TrialRow is one listed trial and what went wrong in it.
type TrialRow struct {
	TrialID  string   `json:"trial_id"`
	Scenario string   `json:"scenario"`
	Variant  string   `json:"variant"`
	Arm      string   `json:"arm"`
	Seed     uint64   `json:"seed"`
	Bad      []string `json:"bad_outcomes"`
}

// ListTrials lists the stored trials of a sweep that f selects. An unknown
// sweep is record.ErrNotFound (a sweep with no trial yet lists none).
func ListTrials(ctx context.Context, src Source, sweepID string, f TrialFilter) ([]TrialRow, error) {
	if _, err := storedSweep(ctx, src, sweepID); err != nil {
		return nil, err
	}
	var rows []TrialRow
	err := src.EachTrial(ctx, sweepID, record.TrialSelect{Arm: f.Arm, Scenario: f.Scenario}, func(t record.Trial) error {
		bad := t.BadOutcomes()
		if f.Failing && len(bad) == 0 {
			return nil
		}
		rows = append(rows, TrialRow{t.TrialID, t.Scenario, t.Variant, t.Arm, t.Seed, bad})
		return nil
	})
	return rows, err
}
