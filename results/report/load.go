package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"rebound/storage"
)

// ErrUnknownArm is matched (errors.Is) when a comparison names an arm the
// sweep does not have.
var ErrUnknownArm = errors.New("no such arm")

// storedSweep reads a sweep; an unknown one is storage.ErrNotFound, named.
func storedSweep(ctx context.Context, store storage.Store, id string) (storage.Sweep, error) {
	sw, err := store.Sweep(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return sw, fmt.Errorf("no sweep %q in storage (list them with 'rebound sweeps'): %w", id, err)
	}
	return sw, err
}

// Load reads a stored sweep and builds its summary, with the fault-class
// breakdown and the matrix axes of its plan. ClickHouse computes the
// sufficient statistics (storage.Store.ReportTotals); see BuildFromTotals.
// An unknown sweep is storage.ErrNotFound.
func Load(ctx context.Context, store storage.Store, sweepID string) (Summary, error) {
	sw, err := storedSweep(ctx, store, sweepID)
	if err != nil {
		return Summary{}, err
	}
	stored, err := store.CountTrials(ctx, sweepID)
	if err != nil {
		return Summary{}, err
	}
	totals, err := store.ReportTotals(ctx, sweepID, NoFault)
	if err != nil {
		return Summary{}, err
	}
	return BuildFromTotals(sw, stored, totals, TotalsOptions{FaultClasses: true, Axes: AxesFromPlan(sw.PlanJSON)}), nil
}

// CompareRequest names two stored arms to compare and how.
type CompareRequest struct {
	// SweepID holds the candidate arm; BaselineSweep the baseline arm
	// (empty: SweepID).
	SweepID, BaselineSweep string
	Baseline, Candidate    string
	// Confidence, BootstrapReps and Generalize are those of CompareInput.
	Confidence    float64
	BootstrapReps int
	Generalize    bool
	// FaultClasses breaks the comparison down by fault class (computed
	// in SQL, the union of both sides' classes per case).
	FaultClasses bool
}

// LoadComparison reads both sides of req from storage and compares them
// (paired on cases; see Compare). ClickHouse pairs the cases and computes
// the sufficient statistics (storage.Store.CompareTotals); see
// CompareFromTotals. An unknown sweep is storage.ErrNotFound, an unknown
// arm ErrUnknownArm.
func LoadComparison(ctx context.Context, store storage.Store, req CompareRequest) (Comparison, error) {
	baseID := req.BaselineSweep
	if baseID == "" {
		baseID = req.SweepID
	}
	cand, err := storedSweep(ctx, store, req.SweepID)
	if err != nil {
		return Comparison{}, err
	}
	base := cand
	if baseID != req.SweepID {
		if base, err = storedSweep(ctx, store, baseID); err != nil {
			return Comparison{}, err
		}
	}
	totals, err := store.CompareTotals(ctx, storage.CompareSide{SweepID: baseID, Arm: req.Baseline},
		storage.CompareSide{SweepID: req.SweepID, Arm: req.Candidate}, req.FaultClasses, NoFault)
	if err != nil {
		return Comparison{}, err
	}
	if err := armExists(base, totals.Summary.KeysA > 0, req.Baseline, "baseline"); err != nil {
		return Comparison{}, err
	}
	if err := armExists(cand, totals.Summary.KeysB > 0, req.Candidate, "candidate"); err != nil {
		return Comparison{}, err
	}
	return CompareFromTotals(CompareTotalsInput{
		Baseline:  Side{SweepID: baseID, Arm: req.Baseline},
		Candidate: Side{SweepID: req.SweepID, Arm: req.Candidate},
		Totals:    totals, FaultClasses: req.FaultClasses,
		Confidence: req.Confidence, BootstrapReps: req.BootstrapReps, BootstrapSeed: 1, Generalize: req.Generalize,
	}), nil
}

// armExists accepts an arm the sweep's plan names, or one it holds trials
// of (a regraded sweep's ARM@stored).
func armExists(sw storage.Sweep, hasTrials bool, arm, side string) error {
	if hasTrials || slices.Contains(sw.Arms, arm) {
		return nil
	}
	return fmt.Errorf("%s arm %q: sweep %s has no such arm (arms: %s): %w", side, arm, sw.SweepID, strings.Join(sw.Arms, ", "), ErrUnknownArm)
}
