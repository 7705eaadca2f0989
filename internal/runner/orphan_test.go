package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage"
)

// An orphan (stored running, workflow gone) is recorded cancelled once; an
// ended sweep keeps its status; an unknown one is storage.ErrNotFound.
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
	for _, sw := range []storage.Sweep{
		{SweepID: "orphan-1", Name: "p", Status: storage.SweepRunning, CreatedAt: now},
		{SweepID: "done-1", Name: "p", Status: storage.SweepCompleted, CreatedAt: now},
	} {
		if err := store.PutSweep(ctx, sw); err != nil {
			t.Fatal(err)
		}
	}
	if ended, err := CancelOrphan(ctx, store, "orphan-1"); err != nil || ended != "" {
		t.Fatalf("orphan: %q, %v", ended, err)
	}
	if sw, err := store.Sweep(ctx, "orphan-1"); err != nil || sw.Status != storage.SweepCancelled {
		t.Fatalf("orphan after: %+v, %v", sw, err)
	}
	if ended, err := CancelOrphan(ctx, store, "orphan-1"); err != nil || ended != storage.SweepCancelled {
		t.Fatalf("orphan again: %q, %v", ended, err)
	}
	if ended, err := CancelOrphan(ctx, store, "done-1"); err != nil || ended != storage.SweepCompleted {
		t.Fatalf("completed: %q, %v", ended, err)
	}
	if _, err := CancelOrphan(ctx, store, "nobody"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}
