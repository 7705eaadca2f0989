package runner

import (
	"context"
	"errors"
	"fmt"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// ErrNoPreviousRun is matched (errors.Is) when PreviousRun finds no
// earlier completed run.
var ErrNoPreviousRun = errors.New("no previous run")

// PreviousRun is the run before sweepID to compare it with: the last
// completed run of the same schedule before it (a scheduled run), or the
// last completed sweep of the same plan before it. An unknown sweepID is
// record.ErrNotFound.
func PreviousRun(ctx context.Context, store storage.Store, sweepID string) (string, error) {
	sw, err := store.Sweep(ctx, sweepID)
	if errors.Is(err, record.ErrNotFound) {
		return "", fmt.Errorf("no sweep %q in storage (list them with 'rebound sweeps'): %w", sweepID, err)
	}
	if err != nil {
		return "", err
	}
	all, err := store.Sweeps(ctx, 0) // newest first
	if err != nil {
		return "", err
	}
	schedule, scheduled := ScheduleOf(sw.SweepID)
	for _, s := range all {
		if s.SweepID == sw.SweepID || s.Status != sweepstatus.Completed || !s.CreatedAt.Before(sw.CreatedAt) {
			continue
		}
		if scheduled {
			if IsRunOf(s.SweepID, schedule) {
				return s.SweepID, nil
			}
		} else if s.Name == sw.Name {
			return s.SweepID, nil
		}
	}
	what := fmt.Sprintf("plan %q", sw.Name)
	if scheduled {
		what = fmt.Sprintf("schedule %q", schedule)
	}
	return "", fmt.Errorf("no completed run of %s before %s: %w", what, sw.SweepID, ErrNoPreviousRun)
}
