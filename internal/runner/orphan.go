package runner

import (
	"context"
	"errors"
	"fmt"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// CancelOrphan records as cancelled a sweep whose workflow is closed or
// gone and that is stored as running (its process was killed before the
// workflow recorded an end) or stopped (interrupted, resumable: cancelling
// throws it away), and returns "". A sweep already stored as ended is left
// alone, and its status returned. An unknown sweep is record.ErrNotFound.
func CancelOrphan(ctx context.Context, store storage.Store, sweepID string) (string, error) {
	sw, err := store.Sweep(ctx, sweepID)
	if errors.Is(err, record.ErrNotFound) {
		return "", fmt.Errorf("no sweep %q (list them with 'rebound sweeps'): %w", sweepID, err)
	}
	if err != nil {
		return "", err
	}
	if sw.Status != sweepstatus.Running && sw.Status != sweepstatus.Stopped {
		return sw.Status, nil
	}
	sw.Status = sweepstatus.Cancelled
	return "", store.PutSweep(ctx, sw)
}
