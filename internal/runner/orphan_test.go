package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
)

// An orphan (stored running, workflow gone) is recorded cancelled once; an
// ended sweep keeps its status; an unknown one is record.ErrNotFound.
func TestCancelOrphan(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	ctx := context.Background()
	store, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, sw := range []record.Sweep{
		{SweepID: "orphan-1", Name: "p", Status: sweepstatus.Running, CreatedAt: now},
		{SweepID: "done-1", Name: "p", Status: sweepstatus.Completed, CreatedAt: now},
		{SweepID: "stopped-1", Name: "p", Status: sweepstatus.Stopped, CreatedAt: now},
	} {
		if err := store.PutSweep(ctx, sw); err != nil {
			t.Fatal(err)
		}
	}
	if ended, err := CancelOrphan(ctx, store, "orphan-1"); err != nil || ended != "" {
		t.Fatalf("orphan: %q, %v", ended, err)
	}
	if sw, err := store.Sweep(ctx, "orphan-1"); err != nil || sw.Status != sweepstatus.Cancelled {
		t.Fatalf("orphan after: %+v, %v", sw, err)
	}
	if ended, err := CancelOrphan(ctx, store, "orphan-1"); err != nil || ended != sweepstatus.Cancelled {
		t.Fatalf("orphan again: %q, %v", ended, err)
	}
	if ended, err := CancelOrphan(ctx, store, "done-1"); err != nil || ended != sweepstatus.Completed {
		t.Fatalf("completed: %q, %v", ended, err)
	}
	if ended, err := CancelOrphan(ctx, store, "stopped-1"); err != nil || ended != "" {
		t.Fatalf("stopped: %q, %v", ended, err)
	}
	if sw, err := store.Sweep(ctx, "stopped-1"); err != nil || sw.Status != sweepstatus.Cancelled {
		t.Fatalf("stopped after cancel: %+v, %v", sw, err)
	}
	if _, err := CancelOrphan(ctx, store, "nobody"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}
