package runner

import (
	"context"
	"errors"
	"fmt"

	"rebound/storage"
)

// CancelOrphan records as cancelled a sweep stored as running whose
// workflow is gone (its process was killed before the workflow recorded an
// end), and returns "". A sweep already stored as ended is left alone, and
// its status returned. An unknown sweep is storage.ErrNotFound.
func CancelOrphan(ctx context.Context, store storage.Store, sweepID string) (string, error) {
	sw, err := store.Sweep(ctx, sweepID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("no sweep %q (list them with 'rebound sweeps'): %w", sweepID, err)
	}
	if err != nil {
		return "", err
	}
	if sw.Status != storage.SweepRunning {
		return sw.Status, nil
	}
	sw.Status = storage.SweepCancelled
	return "", store.PutSweep(ctx, sw)
}
