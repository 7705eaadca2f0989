package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// profileEnv names a file for a CPU profile of the whole command (Go code
// only: the embedded engine's own threads are C++ and show as cgo calls at
// most; perf sees them). `REBOUND_CPUPROFILE=cpu.pprof rebound run PLAN`
// then `go tool pprof -top .cache/bin/rebound cpu.pprof` is how issue 35's
// profile of a sweep end to end was taken (docs/development.md,
// "Benchmarks of sweeps").
const profileEnv = "REBOUND_CPUPROFILE"

// startProfile starts the CPU profile REBOUND_CPUPROFILE asks for; the
// returned stop writes it. A profile that cannot start is a warning, not a
// failure of the command.
func startProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(profileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "rebound: %s: %v\n", profileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "rebound: %s: %v\n", profileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "rebound: %s: %v\n", profileEnv, err)
		}
	}
}
