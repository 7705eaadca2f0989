package runner

import (
	"os"
	"runtime/debug"
)

// WorkerGCPercent is the garbage collector's target (GOGC) of a process
// that hosts a worker, when the user set none. A shard allocates mostly
// short-lived garbage (each trial's ledger, grade and JSON documents) and
// keeps little live, so at Go's default of 100 the collector runs often
// for little: on the library plan at 60,760 trials (`rebound run`, runs of
// the same build alternated, load 1.7-2.5) 200 took the sweep from
// 9.8-10.0 s to 9.0-9.3 s and the whole command's CPU from 20.2-21.0 s to
// 18.8-19.3 s, for 70-80 MB more peak RSS (560-600 -> 660-675 MB). Under a
// memory limit (GOMEMLIMIT, which the Helm chart sets from the container's
// limit) the collector still runs as the heap nears the limit, whatever
// this target.
const WorkerGCPercent = 200

// SetWorkerGC sets the collector's target to WorkerGCPercent unless the
// environment sets GOGC (the user's choice wins, "off" included). It
// returns the target in force.
func SetWorkerGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		cur := debug.SetGCPercent(100)
		debug.SetGCPercent(cur)
		return cur
	}
	debug.SetGCPercent(WorkerGCPercent)
	return WorkerGCPercent
}
