// Package sweepstatus is the one vocabulary of a sweep's status, as the
// sweep workflow reports it in its progress and as storage keeps it in the
// sweeps table. It depends on nothing, so the workflow code (Temporal) and
// the store (ClickHouse) share it without linking each other.
package sweepstatus

const (
	Running   = "running"
	Completed = "completed"
	Failed    = "failed"
	Cancelled = "cancelled"
	// Stopped is a sweep interrupted on purpose (Ctrl-C): its stored trials
	// are kept and `rebound run --resume` continues it; `rebound sweep
	// cancel` turns it into Cancelled (thrown away).
	Stopped = "stopped"
	// Regrading is a sweep `rebound regrade` is writing: its row is written
	// before its first trial, so no trial is ever stored without a sweep
	// row, and it becomes Completed once every trial is written (Failed
	// when the regrade stopped on an error). Running regrade again
	// completes it.
	Regrading = "regrading"
	// MaxUSD ends a sweep stopped by its plan's max_usd: the trials it
	// stored are valid, the others never ran.
	MaxUSD = "max_usd_reached"
)

// All lists every status, in the order a sweep can reach them.
var All = []string{Running, Stopped, Regrading, Completed, Failed, Cancelled, MaxUSD}

// Valid reports whether s is a sweep status.
func Valid(s string) bool {
	switch s {
	case Running, Stopped, Regrading, Completed, Failed, Cancelled, MaxUSD:
		return true
	}
	return false
}

// Resumable reports whether a sweep stored with status s may be continued
// by a new workflow run: stopped, cancelled, failed, or running with its
// workflow gone. A completed sweep, or one stopped by its max_usd, is done.
func Resumable(s string) bool {
	switch s {
	case Running, Stopped, Cancelled, Failed:
		return true
	}
	return false
}
