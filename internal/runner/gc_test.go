package runner

import (
	"os"
	"runtime/debug"
	"testing"
)

// unsetenv removes an environment variable for the test (t.Setenv can only
// set one) and restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore, and forbids t.Parallel
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestSetWorkerGC(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	t.Run("unset", func(t *testing.T) {
		debug.SetGCPercent(100)
		unsetenv(t, "GOGC")
		if got := SetWorkerGC(); got != WorkerGCPercent || gcPercent() != WorkerGCPercent {
			t.Fatalf("SetWorkerGC = %d, collector at %d, want %d", got, gcPercent(), WorkerGCPercent)
		}
	})
	t.Run("the user's GOGC wins", func(t *testing.T) {
		debug.SetGCPercent(50) // as the runtime read GOGC=50 at start
		t.Setenv("GOGC", "50")
		if got := SetWorkerGC(); got != 50 || gcPercent() != 50 {
			t.Fatalf("SetWorkerGC = %d, collector at %d, want the user's 50", got, gcPercent())
		}
	})
}
