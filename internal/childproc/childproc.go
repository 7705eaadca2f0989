// Package childproc starts a child process that dies with its parent.
//
// The child runs in a process group of its own (so that it and whatever it
// starts are signalled together) with SIGKILL as its parent-death signal:
// if this process dies, even by SIGKILL, the kernel kills the child. Linux
// sends that signal when the thread that forked the child exits, not the
// process, so Start forks from a goroutine locked to its OS thread that
// lives until the child is reaped (the Go runtime never retires a locked
// thread while its goroutine runs).
//
// It is plain Go (no Temporal, no ClickHouse): the domain core may use it
// (internal/archtest). The command agent (core/agent/command) and the
// embedded dev server (internal/devstack) start their processes with it.
package childproc

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Process is a started child.
type Process struct {
	// Pid is the child's process id, which is also its process group's.
	Pid  int
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait; written before done is closed
}

// Start starts cmd in a process group of its own with SIGKILL as its
// parent-death signal; the other fields of cmd.SysProcAttr, if any, are
// kept. The child is reaped as soon as it exits (Done).
func Start(cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true              // its own group: signals reach its children too
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // killed by the kernel if this process dies
	p := &Process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.Pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is what Wait returned (nil for a clean exit); read it after Done.
func (p *Process) Err() error { return p.err }

// State is the child's exit state; read it after Done.
func (p *Process) State() *os.ProcessState { return p.cmd.ProcessState }

// SignalGroup sends sig to the child's process group.
func (p *Process) SignalGroup(sig syscall.Signal) error { return syscall.Kill(-p.Pid, sig) }
