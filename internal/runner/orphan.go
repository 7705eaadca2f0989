package runner

import (
	"context"
	"errors"
	"fmt"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// CancelOrphan records as cancelled a sweep stored as running whose
// workflow is gone (its process was killed before the workflow recorded an
// end), and returns "". A sweep already stored as ended is left alone, and
// its status returned. An unknown sweep is record.ErrNotFound.
func CancelOrphan(ctx context.Context, store storage.Store, sweepID string) (string, error) {
	sw, err := store.Sweep(ctx, sweepID)
	if errors.Is(err, record.ErrNotFound) {
		return "", fmt.Errorf("no sweep %q (list them with 'rebound sweeps'): %w", sweepID, err)
	}
	if err != nil {
		return "", err
	}
	if sw.Status != sweepstatus.Running {
		return sw.Status, nil
	}
	sw.Status = sweepstatus.Cancelled
	return "", store.PutSweep(ctx, sw)
}
