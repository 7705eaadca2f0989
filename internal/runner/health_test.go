package runner

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/internal/devstack"
	"rebound/internal/devstack/devstacktest"
)

// A worker's readiness follows its Temporal frontend after the start: with
// the dev server killed, it turns unready once the grace period is over.
func TestTemporalHealthFollowsTheServer(t *testing.T) {
	bin := devstacktest.TemporalBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(srv.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := WatchTemporal(ctx, c, 200*time.Millisecond, time.Second)
	if err := h.Err(); err != nil {
		t.Fatalf("ready with the server up: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	killed := time.Now()
	// Within the grace period it stays ready; after it, it is not.
	if err := h.Err(); err != nil {
		t.Fatalf("unready at once, inside the grace period: %v", err)
	}
	for time.Since(killed) < 10*time.Second && h.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	err = h.Err()
	if err == nil {
		t.Fatal("still ready 10 s after the server was killed")
	}
	t.Logf("unready %v after the kill: %v", time.Since(killed).Round(100*time.Millisecond), err)
}
