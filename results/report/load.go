package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"rebound/results/record"
)

// Source is what this package reads from stored sweeps: a sweep's record,
// its trial count, the sums ClickHouse computes for a report or a
// comparison, and its trials one at a time. storage.Store implements it;
// a test can implement it over records in memory. An unknown sweep is
// record.ErrNotFound.
type Source interface {
	Sweep(ctx context.Context, id string) (record.Sweep, error)
	CountTrials(ctx context.Context, sweepID string) (uint64, error)
	// ReportTotals is what BuildFromTotals reads; noFault names the class
	// of cases without a fault (NoFault).
	ReportTotals(ctx context.Context, sweepID, noFault string) (record.ReportTotals, error)
	// CompareTotals is what CompareFromTotals reads: side b paired with
	// side a, broken down by fault class when withClasses.
	CompareTotals(ctx context.Context, a, b record.CompareSide, withClasses bool, noFault string) (record.CompareTotals, error)
	// EachTrial calls fn with each selected trial of a sweep, in the order
	// (arm, scenario, variant, seed, trial_id).
	EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error
}

// ErrUnknownArm is matched (errors.Is) when a comparison names an arm the
// sweep does not have.
var ErrUnknownArm = errors.New("no such arm")

// storedSweep reads a sweep; an unknown one is record.ErrNotFound, named.
func storedSweep(ctx context.Context, src Source, id string) (record.Sweep, error) {
	sw, err := src.Sweep(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return sw, fmt.Errorf("no sweep %q in storage (list them with 'rebound sweeps'): %w", id, err)
	}
	return sw, err
}

// Load reads a stored sweep and builds its summary, with the fault-class
// breakdown and the matrix axes of its plan. ClickHouse computes the
// sufficient statistics (Source.ReportTotals); see BuildFromTotals.
// An unknown sweep is record.ErrNotFound.
func Load(ctx context.Context, src Source, sweepID string) (Summary, error) {
	sw, err := storedSweep(ctx, src, sweepID)
	if err != nil {
		return Summary{}, err
	}
	stored, err := src.CountTrials(ctx, sweepID)
	if err != nil {
		return Summary{}, err
	}
	totals, err := src.ReportTotals(ctx, sweepID, NoFault)
	if err != nil {
		return Summary{}, err
	}
	sum := BuildFromTotals(sw, stored, totals, TotalsOptions{FaultClasses: true, Axes: AxesFromPlan(sw.PlanJSON)})
	if sum.Pairs, err = LoadPairs(ctx, src, sweepID); err != nil {
		return Summary{}, err
	}
	return sum, nil
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
// the sufficient statistics (Source.CompareTotals); see
// CompareFromTotals. An unknown sweep is record.ErrNotFound, an unknown
// arm ErrUnknownArm.
func LoadComparison(ctx context.Context, src Source, req CompareRequest) (Comparison, error) {
	baseID := req.BaselineSweep
	if baseID == "" {
		baseID = req.SweepID
	}
	cand, err := storedSweep(ctx, src, req.SweepID)
	if err != nil {
		return Comparison{}, err
	}
	base := cand
	if baseID != req.SweepID {
		if base, err = storedSweep(ctx, src, baseID); err != nil {
			return Comparison{}, err
		}
	}
	totals, err := src.CompareTotals(ctx, record.CompareSide{SweepID: baseID, Arm: req.Baseline},
		record.CompareSide{SweepID: req.SweepID, Arm: req.Candidate}, req.FaultClasses, NoFault)
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
func armExists(sw record.Sweep, hasTrials bool, arm, side string) error {
	if hasTrials || slices.Contains(sw.Arms, arm) {
		return nil
	}
	return fmt.Errorf("%s arm %q: sweep %s has no such arm (arms: %s): %w", side, arm, sw.SweepID, strings.Join(sw.Arms, ", "), ErrUnknownArm)
}
