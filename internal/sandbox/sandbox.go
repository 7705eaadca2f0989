// Package sandbox runs an untrusted process sealed: under a uid of its own,
// in its own user, mount, PID, IPC, UTS, cgroup and network namespaces
// (bubblewrap, Debian's bwrap), inside a cgroup with memory, PID and CPU
// limits, seeing only the system's read-only directories, the paths its
// caller lists and an empty working directory on a size-limited tmpfs.
//
// It is the confinement of command arms (core/agent/command): an agent
// under test is hostile input, and what it can reach it can forge. Sealed,
// it cannot see or signal the worker or other trials (PID namespace), read
// the worker's files, the data dir or the redaction key (mount namespace
// and another uid), or reach any socket on the machine (an empty network
// namespace). The caller opens listeners inside the sandbox's network
// namespace (Listen), so the trial's tool server and the hosts the arm
// declares for its model provider (Forward) are the only things it can
// connect to, at the same loopback addresses as before. Every descendant
// dies with the sandbox: the PID namespace ends with its first process,
// and Stop kills whatever is left in the cgroup.
//
// Setting up the namespaces, the uid and the cgroup needs privileges the
// worker has when it runs as root (CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID):
// on a machine or pod without them Check says what is missing and the
// caller refuses to run the arm (fail closed).
package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Default per-sandbox limits, used where Limits leaves a field zero.
const (
	DefaultMemoryBytes = 2 << 30   // memory.max / memory.limit_in_bytes, tmpfs pages included
	DefaultPIDs        = 256       // pids.max: processes and threads
	DefaultCPUs        = 1.0       // CPU quota, in cores
	DefaultTmpBytes    = 256 << 20 // the tmpfs that holds /tmp and the working directory
)

// uidBase and uidSpan bound the uids sandboxes run under: one drawn at
// random per sandbox, far above any uid a system or a person has, so two
// concurrent trials (even of two workers on one machine) almost never
// share one, and none is the worker's.
const (
	uidBase = 1 << 28
	uidSpan = 1 << 27
)

// Limits bound one sandbox's resources.
type Limits struct {
	MemoryBytes int64
	PIDs        int
	CPUs        float64
	TmpBytes    int64
}

func (l Limits) withDefaults() Limits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.PIDs <= 0 {
		l.PIDs = DefaultPIDs
	}
	if l.CPUs <= 0 {
		l.CPUs = DefaultCPUs
	}
	if l.TmpBytes <= 0 {
		l.TmpBytes = DefaultTmpBytes
	}
	return l
}

// Spec is one sealed process.
type Spec struct {
	// Command is the argv; Command[0] is resolved on Env's PATH when it has
	// no slash. Its directory is mounted read-only.
	Command []string
	// Env is the process's whole environment.
	Env []string
	// Dir is the working directory inside the sandbox: an empty directory
	// on the sandbox's tmpfs, writable, gone with the sandbox. It must be
	// under /tmp.
	Dir string
	// HostDir, when set, is a host directory bound read-write as Dir
	// instead (given to the sandbox's uid, mode 0700), so the caller can
	// read and empty it from outside while the process runs (an upstream
	// reused across trials).
	HostDir string
	// ReadOnly are more absolute paths mounted read-only at the same place
	// (the rest of the agent's install: node_modules, a virtualenv).
	ReadOnly []string
	// Hosts are more lines of the sandbox's /etc/hosts ("127.0.0.2 name"),
	// for the names Forward serves.
	Hosts  []string
	Limits Limits
	// Stdin, Stdout and Stderr are the process's standard streams (nil:
	// /dev/null), e.g. the pipes of a stdio protocol.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Sandbox is a started sealed process, held before its command runs until
// Release, so the caller can open its listeners first.
type Sandbox struct {
	cmd     *exec.Cmd
	pid     int // the sandbox's first process (PID 1 inside), as the worker sees it
	uid     int
	release *os.File
	cg      cgroup
	staging string

	exited chan struct{}
	state  *os.ProcessState

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	stopped   bool
}

// Start sets the sandbox up and returns once its namespaces and cgroup
// exist; the command runs after Release.
func Start(spec Spec) (*Sandbox, error) {
	bwrapPath, err := check()
	if err != nil {
		return nil, err
	}
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if !strings.HasPrefix(filepath.Clean(spec.Dir)+"/", "/tmp/") || filepath.Clean(spec.Dir) == "/tmp" {
		return nil, fmt.Errorf("sandbox: working directory %q must be under /tmp", spec.Dir)
	}
	uid, err := drawUID()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{uid: uid, exited: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	if spec.HostDir != "" {
		if err := os.Chown(spec.HostDir, uid, uid); err != nil {
			return nil, fmt.Errorf("sandbox: host dir: %w", err)
		}
		if err := os.Chmod(spec.HostDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: host dir: %w", err)
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.cleanup()
		}
	}()
	if s.staging, err = stage(spec.Hosts); err != nil {
		return nil, err
	}
	args, err := bwrapArgs(spec, s.staging)
	if err != nil {
		return nil, err
	}
	limits := spec.Limits.withDefaults()
	if s.cg, err = newCgroup(fmt.Sprintf("rebound-%d", uid), limits); err != nil {
		return nil, err
	}

	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer infoR.Close()
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.release = blockW
	cmd := exec.Command(bwrapPath, args...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Env, spec.Stdin, spec.Stdout, spec.Stderr
	cmd.ExtraFiles = []*os.File{infoW, blockR} // fds 3 and 4, as bwrapArgs names them
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: false, Groups: []uint32{}},
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that forked the child exits, so that
	// thread lives as long as the child.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		s.state = cmd.ProcessState
		close(s.exited)
	}()
	err = <-started
	infoW.Close()
	blockR.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: cannot start bwrap: %w", err)
	}
	s.cmd = cmd
	pid, err := readChildPID(infoR, s.exited)
	if err != nil {
		s.kill()
		<-s.exited
		return nil, fmt.Errorf("sandbox: bwrap did not set up the sandbox: %w", err)
	}
	s.pid = pid
	// The first process waits on the block fd before it forks the
	// command, so everything the command ever starts is in the cgroup.
	if err := s.cg.add(pid); err != nil {
		s.kill()
		<-s.exited
		return nil, err
	}
	ok = true
	return s, nil
}

// readChildPID reads bwrap's --info-fd document: {"child-pid": N, ...}.
func readChildPID(r io.Reader, exited <-chan struct{}) (int, error) {
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		err := json.NewDecoder(bufio.NewReader(r)).Decode(&info)
		if err == nil && info.ChildPID <= 0 {
			err = errors.New("no child-pid in its info")
		}
		ch <- result{info.ChildPID, err}
	}()
	select {
	case res := <-ch:
		return res.pid, res.err
	case <-exited:
		return 0, errors.New("bwrap exited during setup")
	case <-time.After(30 * time.Second):
		return 0, errors.New("no answer in 30 s")
	}
}

// UID is the uid the sandboxed processes run under.
func (s *Sandbox) UID() int { return s.uid }

// Release lets the command run.
func (s *Sandbox) Release() error {
	if s.release == nil {
		return errors.New("sandbox: already released")
	}
	_, err := s.release.Write([]byte{1})
	s.release.Close()
	s.release = nil
	if err != nil {
		return fmt.Errorf("sandbox: release: %w", err)
	}
	return nil
}

// Exited is closed when the sandbox's process tree has ended.
func (s *Sandbox) Exited() <-chan struct{} { return s.exited }

// Status is how the sealed command ended.
type Status struct {
	ExitCode int    // -1 when a signal ended it
	Signal   string // the signal's name, when one did
}

// Status reports the command's exit once Exited is closed. bwrap exits
// with the command's code, or 128+N when signal N ended it.
func (s *Sandbox) Status() Status {
	if s.state == nil {
		return Status{ExitCode: -1}
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Status{ExitCode: -1, Signal: ws.Signal().String()}
	}
	code := s.state.ExitCode()
	if code > 128 && code < 128+65 {
		return Status{ExitCode: -1, Signal: syscall.Signal(code - 128).String()}
	}
	return Status{ExitCode: code}
}

// Stop ends the sandbox: SIGTERM to every process of the command, SIGKILL
// to all that remain after grace, then the listeners, the forwarded
// connections and the cgroup. It returns when nothing of the sandbox runs.
func (s *Sandbox) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	select {
	case <-s.exited:
	default:
		if s.release != nil { // never released: nothing of the command runs
			s.kill()
			break
		}
		s.cg.signal(syscall.SIGTERM, s.pid)
		select {
		case <-s.exited:
		case <-time.After(grace):
		}
		s.kill()
	}
	<-s.exited
	s.cg.signal(syscall.SIGKILL, 0) // a process the namespace's end did not reach
	s.cleanup()
}

// kill ends the whole tree at once: bwrap, its first process (the PID
// namespace dies with it) and everything in the cgroup.
func (s *Sandbox) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
	if s.pid > 0 {
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
	}
	s.cg.signal(syscall.SIGKILL, 0)
}

func (s *Sandbox) cleanup() {
	s.mu.Lock()
	for _, l := range s.listeners {
		_ = l.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.listeners, s.conns = nil, map[net.Conn]struct{}{}
	s.mu.Unlock()
	if s.release != nil {
		s.release.Close()
		s.release = nil
	}
	s.cg.remove()
	if s.staging != "" {
		_ = os.RemoveAll(s.staging)
	}
}

// drawUID picks the sandbox's uid.
func drawUID() (int, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("sandbox: uid: %w", err)
	}
	return uidBase + int(binary.LittleEndian.Uint64(b[:])%uidSpan), nil
}
