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
// breakdown (aggregated in SQL) and the matrix axes of its plan. An unknown
// sweep is storage.ErrNotFound.
func Load(ctx context.Context, store storage.Store, sweepID string) (Summary, error) {
	sw, err := storedSweep(ctx, store, sweepID)
	if err != nil {
		return Summary{}, err
	}
	stored, err := store.CountTrials(ctx, sweepID)
	if err != nil {
		return Summary{}, err
	}
	cells, err := store.Cells(ctx, sweepID)
	if err != nil {
		return Summary{}, err
	}
	faults, err := store.CaseFaults(ctx, sweepID)
	if err != nil {
		return Summary{}, err
	}
	return BuildWith(sw, stored, cells, Options{Cases: CasesFromFaults(faults), Axes: AxesFromPlan(sw.PlanJSON)}), nil
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
	// TrialRows reads the trial rows of both sides: the fault-class
	// breakdown per arm, and a warning for a scenario file that changed
	// between two sweeps. Without it fault classes come from a SQL
	// aggregation (the same in every arm of a sweep).
	TrialRows bool
}

// LoadComparison reads both sides of req from storage and compares them
// (paired on cases; see Compare). An unknown sweep is storage.ErrNotFound,
// an unknown arm ErrUnknownArm.
func LoadComparison(ctx context.Context, store storage.Store, req CompareRequest) (Comparison, error) {
	baseID := req.BaselineSweep
	if baseID == "" {
		baseID = req.SweepID
	}
	cross := baseID != req.SweepID
	cand, err := storedSweep(ctx, store, req.SweepID)
	if err != nil {
		return Comparison{}, err
	}
	base := cand
	if cross {
		if base, err = storedSweep(ctx, store, baseID); err != nil {
			return Comparison{}, err
		}
	}
	candCells, err := store.Cells(ctx, req.SweepID)
	if err != nil {
		return Comparison{}, err
	}
	baseCells := candCells
	if cross {
		if baseCells, err = store.Cells(ctx, baseID); err != nil {
			return Comparison{}, err
		}
	}
	if err := armExists(base, baseCells, req.Baseline, "baseline"); err != nil {
		return Comparison{}, err
	}
	if err := armExists(cand, candCells, req.Candidate, "candidate"); err != nil {
		return Comparison{}, err
	}
	in := CompareInput{
		Baseline:      Side{SweepID: baseID, Arm: req.Baseline},
		Candidate:     Side{SweepID: req.SweepID, Arm: req.Candidate},
		BaselineCells: baseCells, CandidateCells: candCells,
		Confidence: req.Confidence, BootstrapReps: req.BootstrapReps, BootstrapSeed: 1, Generalize: req.Generalize,
	}
	if req.TrialRows {
		candTrials, err := store.Trials(ctx, req.SweepID)
		if err != nil {
			return Comparison{}, err
		}
		baseTrials := candTrials
		if cross {
			if baseTrials, err = store.Trials(ctx, baseID); err != nil {
				return Comparison{}, err
			}
			in.BaselineHashes = ScenarioHashes(onlyArm(baseTrials, req.Baseline))
			in.CandidateHashes = ScenarioHashes(onlyArm(candTrials, req.Candidate))
		}
		in.Cases = CasesFromTrials(onlyArm(baseTrials, req.Baseline), onlyArm(candTrials, req.Candidate))
	} else {
		faults, err := store.CaseFaults(ctx, req.SweepID)
		if err != nil {
			return Comparison{}, err
		}
		in.Cases = CasesFromFaults(faults) // cases are the same in every arm
	}
	return Compare(in), nil
}

func onlyArm(trials []storage.Trial, arm string) []storage.Trial {
	var out []storage.Trial
	for _, t := range trials {
		if t.Arm == arm {
			out = append(out, t)
		}
	}
	return out
}

// armExists accepts an arm the sweep's plan names, or one its cells hold
// (a regraded sweep's ARM@stored).
func armExists(sw storage.Sweep, cells []storage.Cell, arm, side string) error {
	if slices.Contains(sw.Arms, arm) {
		return nil
	}
	for i := range cells {
		if cells[i].Arm == arm {
			return nil
		}
	}
	return fmt.Errorf("%s arm %q: sweep %s has no such arm (arms: %s): %w", side, arm, sw.SweepID, strings.Join(sw.Arms, ", "), ErrUnknownArm)
}
