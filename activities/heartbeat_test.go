package activities

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A trial that runs long keeps heartbeating, and stops when the trial ends.
func TestEveryBeatsUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := every(5*time.Millisecond, func() { n.Add(1) })
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	got := n.Load()
	if got < 3 {
		t.Fatalf("%d beats in 5 s", got)
	}
	time.Sleep(30 * time.Millisecond)
	if n.Load() != got {
		t.Fatalf("beats after stop: %d -> %d", got, n.Load())
	}
	// Outside an activity (a unit test, the CLI's local runs) nothing beats.
	(&shardProgress{ctx: context.Background()}).heartbeat()
}
