//go:build linux && (amd64 || arm64)

package chdb

import (
	"sync"
	"syscall"
	"unsafe"
)

// kernelSigaction is an opaque buffer large enough for the kernel's struct
// sigaction on every Linux architecture (32 bytes on amd64 and arm64). It is
// only ever copied out of and back into the kernel, never interpreted, so the
// exact layout does not matter.
type kernelSigaction [8]uint64

const (
	maxSignal   = 64
	sigsetBytes = 8 // the kernel's sigset_t size, as rt_sigaction expects
)

var (
	guardMu  sync.Mutex
	restored = map[int]int{} // signal -> times restored, for diagnostics and tests
)

// debugSignalChange, when set (by tests), sees every change guardSignals finds.
var debugSignalChange func(sig int, before, after kernelSigaction)

func platformSupported() error { return nil }

func sigaction(sig int, act, old *kernelSigaction) syscall.Errno {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), sigsetBytes, 0, 0)
	return errno
}

// snapshotSignals reads the disposition of every catchable signal.
func snapshotSignals() [maxSignal + 1]kernelSigaction {
	var s [maxSignal + 1]kernelSigaction
	for sig := 1; sig <= maxSignal; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		if sigaction(sig, nil, &s[sig]) != 0 {
			s[sig] = kernelSigaction{}
		}
	}
	return s
}

// goSignals are the signals whose handling the Go runtime (or a typical Go
// program through os/signal) relies on: faults become panics, SIGURG drives
// goroutine preemption, SIGPROF drives pprof, the rest are shutdown signals.
var goSignals = map[int]bool{
	int(syscall.SIGSEGV): true, int(syscall.SIGBUS): true, int(syscall.SIGFPE): true,
	int(syscall.SIGILL): true, int(syscall.SIGABRT): true, int(syscall.SIGTRAP): true,
	int(syscall.SIGSYS): true, int(syscall.SIGURG): true, int(syscall.SIGPROF): true,
	int(syscall.SIGINT): true, int(syscall.SIGTERM): true, int(syscall.SIGQUIT): true,
	int(syscall.SIGHUP): true, int(syscall.SIGPIPE): true,
}

// handlerOf is the sa_handler field, which comes first in the kernel's
// struct sigaction on amd64 and arm64; 0 is SIG_DFL.
func handlerOf(a kernelSigaction) uint64 { return a[0] }

// guardSignals runs f and then puts back the signal dispositions that f took
// away: every signal that had a handler (or was ignored) before, and every
// signal in goSignals. A handler the engine installs on a signal that was at
// SIG_DFL and that Go does not use (chDB takes SIGRTMIN for its stack-trace
// collector) is left to the engine. libchdb resets SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS,
// SIGTSTP and SIGTRAP to SIG_DFL in chdb_set_signal_handlers_enabled(0) and
// again inside chdb_connect; without the restore a nil-pointer dereference
// anywhere in the Go program would kill the process instead of panicking.
//
// Dispositions are process-wide, so for the few microseconds between the
// engine's reset and the restore, a fault on another goroutine would be fatal.
// That window only exists while a session is being opened.
func guardSignals(f func()) []int {
	guardMu.Lock()
	defer guardMu.Unlock()
	before := snapshotSignals()
	f()
	after := snapshotSignals()
	var changed []int
	for sig := 1; sig <= maxSignal; sig++ {
		if before[sig] == after[sig] {
			continue
		}
		if handlerOf(before[sig]) == 0 && !goSignals[sig] {
			continue
		}
		old := before[sig]
		if debugSignalChange != nil {
			debugSignalChange(sig, before[sig], after[sig])
		}
		if sigaction(sig, &old, nil) == 0 {
			changed = append(changed, sig)
			restored[sig]++
		}
	}
	return changed
}

// RestoredSignals reports, per signal number, how many times a call into
// libchdb changed its disposition and this package put the Go runtime's back.
func RestoredSignals() map[int]int {
	guardMu.Lock()
	defer guardMu.Unlock()
	out := make(map[int]int, len(restored))
	for k, v := range restored {
		out[k] = v
	}
	return out
}
