package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"rebound/internal/childproc"
)

// DBFileName is the SQLite file the dev server keeps in Options.DataDir.
const DBFileName = "temporal.sqlite"

const (
	loopback            = "127.0.0.1"
	lockFileName        = "temporal.lock"
	defaultNamespace    = "default"
	defaultLogLevel     = "warn"
	defaultStartTimeout = 90 * time.Second
	defaultStopTimeout  = 5 * time.Second
	startAttempts       = 3 // a lost free-port race costs one attempt
	tailBytes           = 64 << 10
	tailLines           = 40
)

// Options configures StartTemporal. The zero value is usable: it locates the
// binary, keeps state in a temporary directory removed by Stop, and runs
// headless in the "default" namespace.
type Options struct {
	// Bin is the path of the Temporal CLI; empty means LocateTemporal().
	Bin string
	// DataDir holds the SQLite file (DBFileName), so workflows survive a
	// restart on the same DataDir. It is created if missing and locked while
	// the server runs. Empty means a fresh temporary directory, removed by Stop.
	DataDir string
	// Namespace is the namespace to create at launch and to check for health;
	// empty means "default" (which the dev server always creates).
	Namespace string
	// LogWriter receives the server's stdout and stderr; nil discards them.
	// The last lines are kept anyway for error messages.
	LogWriter io.Writer
	// LogLevel of the server: debug, info, warn (default) or error.
	LogLevel string
	// LogFormat of the server's log: text (default) or json.
	LogFormat string
	// UI starts the Web UI on a free loopback port (see UIAddress); by default
	// the server runs headless.
	UI bool
	// StartTimeout bounds the wait for a healthy frontend (default 90s).
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL
	// (default 5s).
	StopTimeout time.Duration
}

// Temporal is a running Temporal dev server (`temporal server start-dev`).
// It runs in its own process group and is killed by the kernel if the process
// that started it dies (Linux parent-death signal), so it never outlives it.
type Temporal struct {
	opts    Options
	dataDir string
	tempDir string // removed by Stop when DataDir was not given
	lock    *os.File

	addr   string
	uiAddr string
	proc   *proc

	stopOnce sync.Once
	stopErr  error
}

// StartTemporal starts the dev server on free loopback ports and returns once
// its frontend answers a health check and the namespace exists. ctx bounds
// only the start-up; the server runs until Stop.
func StartTemporal(ctx context.Context, opts Options) (*Temporal, error) {
	if opts.Namespace == "" {
		opts.Namespace = defaultNamespace
	}
	if opts.LogLevel == "" {
		opts.LogLevel = defaultLogLevel
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = defaultStopTimeout
	}
	if opts.LogWriter == nil {
		opts.LogWriter = io.Discard
	}
	if opts.Bin == "" {
		bin, err := LocateTemporal()
		if err != nil {
			return nil, err
		}
		opts.Bin = bin
	}

	t := &Temporal{opts: opts}
	if err := t.prepareDataDir(); err != nil {
		t.release()
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err := t.launch(ctx)
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.release()
			return nil, err
		}
		fmt.Fprintf(opts.LogWriter, "devstack: %v; retrying on other ports\n", err)
	}
}

// Address is the frontend's host:port, for client.Options.HostPort.
func (t *Temporal) Address() string { return t.addr }

// Namespace is the namespace the server was checked with.
func (t *Temporal) Namespace() string { return t.opts.Namespace }

// UIAddress is the Web UI's URL, or "" when headless.
func (t *Temporal) UIAddress() string {
	if t.uiAddr == "" {
		return ""
	}
	return "http://" + t.uiAddr
}

// DBFile is the path of the server's SQLite file.
func (t *Temporal) DBFile() string { return filepath.Join(t.dataDir, DBFileName) }

// PID is the server's process id, which is also its process group id.
func (t *Temporal) PID() int { return t.proc.pid }

// ClientOptions returns client options for this server: HostPort and
// Namespace set, everything else zero.
func (t *Temporal) ClientOptions() client.Options {
	return client.Options{HostPort: t.addr, Namespace: t.opts.Namespace}
}

// Exited is closed when the server process has exited, whether by Stop or not.
func (t *Temporal) Exited() <-chan struct{} { return t.proc.exited }

// ExitErr describes how the server exited; valid once Exited is closed.
func (t *Temporal) ExitErr() error {
	<-t.proc.exited
	return t.proc.err()
}

// Stop sends SIGTERM to the server's process group, waits up to
// Options.StopTimeout, then sends SIGKILL, and releases the data directory.
// A temporary data directory (Options.DataDir empty) is removed, and its
// server killed at once, since there is no state worth a clean shutdown.
// Stop is idempotent and safe for concurrent use.
func (t *Temporal) Stop() error { return t.StopWithin(t.opts.StopTimeout) }

// StopWithin is Stop with grace instead of Options.StopTimeout: an
// interrupted command that must exit at once gives the server a moment,
// then kills it (its state is durable: a killed dev server restarts on the
// same file where it was).
func (t *Temporal) StopWithin(grace time.Duration) error {
	t.stopOnce.Do(func() {
		if t.tempDir != "" {
			grace = 0 // the state is about to be deleted: nothing to shut down cleanly
		}
		if t.proc.terminate(grace) {
			fmt.Fprintf(t.opts.LogWriter, "devstack: temporal did not stop within %s after SIGTERM; killed\n", grace)
		}
		t.stopErr = t.release()
	})
	return t.stopErr
}

func (t *Temporal) prepareDataDir() error {
	if t.opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "rebound-temporal-")
		if err != nil {
			return fmt.Errorf("temporal data dir: %w", err)
		}
		t.tempDir, t.dataDir = dir, dir
	} else {
		dir, err := filepath.Abs(t.opts.DataDir)
		if err != nil {
			return fmt.Errorf("temporal data dir: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("temporal data dir: %w", err)
		}
		t.dataDir = dir
	}
	// Two servers on one SQLite file would corrupt each other's view; the
	// lock turns that into a clear error. It is released when this process
	// exits, however it exits.
	lockPath := filepath.Join(t.dataDir, lockFileName)
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("temporal data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("temporal data dir %s is in use by another dev server (lock %s held); stop it or use another data dir", t.dataDir, lockPath)
		}
		return fmt.Errorf("temporal data dir lock %s: %w", lockPath, err)
	}
	t.lock = f
	return nil
}

// release frees what prepareDataDir took.
func (t *Temporal) release() error {
	var errs []error
	if t.lock != nil {
		errs = append(errs, t.lock.Close()) // closing drops the flock
		t.lock = nil
	}
	if t.tempDir != "" {
		errs = append(errs, os.RemoveAll(t.tempDir))
		t.tempDir = ""
	}
	return errors.Join(errs...)
}

var errPortTaken = errors.New("temporal dev server could not bind its port")

// launch makes one attempt: pick ports, start the process, wait for health.
// On failure the process is gone when it returns.
func (t *Temporal) launch(ctx context.Context) error {
	port, err := freePort(loopback)
	if err != nil {
		return err
	}
	args := []string{
		"server", "start-dev",
		"--ip", loopback,
		"--port", strconv.Itoa(port),
		"--db-filename", filepath.Join(t.dataDir, DBFileName),
		"--log-level", t.opts.LogLevel,
	}
	if t.opts.LogFormat != "" {
		args = append(args, "--log-format", t.opts.LogFormat)
	}
	uiAddr := ""
	if t.opts.UI {
		uiPort, err := freePort(loopback)
		if err != nil {
			return err
		}
		args = append(args, "--ui-port", strconv.Itoa(uiPort))
		uiAddr = net.JoinHostPort(loopback, strconv.Itoa(uiPort))
	} else {
		args = append(args, "--headless")
	}
	if t.opts.Namespace != defaultNamespace {
		args = append(args, "--namespace", t.opts.Namespace)
	}

	tail := newLogTail(tailBytes)
	out := io.MultiWriter(t.opts.LogWriter, tail)
	fmt.Fprintf(out, "devstack: %s %s\n", t.opts.Bin, strings.Join(args, " "))
	p, err := spawn(t.opts.Bin, args, t.dataDir, out)
	if err != nil {
		return fmt.Errorf("start temporal dev server: %w", err)
	}
	addr := net.JoinHostPort(loopback, strconv.Itoa(port))
	if err := waitHealthy(ctx, p, addr, t.opts.Namespace, t.opts.StartTimeout); err != nil {
		p.terminate(time.Second)
		if errors.Is(err, errEarlyExit) && tail.containsAny("address already in use", "can't set", "can't use default UI port") {
			err = fmt.Errorf("%w (%v)", errPortTaken, err)
		}
		return fmt.Errorf("%w\n--- last lines of the temporal server log ---\n%s", err, tail.lines(tailLines))
	}
	t.proc, t.addr, t.uiAddr = p, addr, uiAddr
	return nil
}

// proc is one server process.
type proc struct {
	pid    int
	exited <-chan struct{}
	child  *childproc.Process
}

// err is what Wait returned; read it once exited is closed.
func (p *proc) err() error { return p.child.Err() }

// spawn starts the server in its own group (Stop signals the whole group),
// killed by the kernel if this process dies.
func spawn(bin string, args []string, dir string, out io.Writer) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec serializes its writes
	cmd.WaitDelay = 2 * time.Second
	child, err := childproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &proc{pid: child.Pid, exited: child.Done(), child: child}, nil
}

// terminate stops the process group: SIGTERM, then SIGKILL after grace (at
// once when grace is 0). It reports whether SIGTERM was not enough, and
// returns once the process is reaped.
func (p *proc) terminate(grace time.Duration) (escalated bool) {
	select {
	case <-p.exited:
		return false
	default:
	}
	if grace <= 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.exited
		return false
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		escalated = true
		<-p.exited
	}
	return escalated
}

var errEarlyExit = errors.New("temporal dev server exited during start-up")

func waitHealthy(ctx context.Context, p *proc, addr, namespace string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		last := probe(ctx, addr, namespace)
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w: %v", errEarlyExit, p.err())
		case <-ctx.Done():
			return fmt.Errorf("waiting for the temporal dev server at %s: %w", addr, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("temporal dev server at %s not healthy after %s (last probe: %v)", addr, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var quietLogger = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))

// probe checks that the frontend accepts connections, reports SERVING and
// knows the namespace. The cheap TCP check comes first so that gRPC's
// reconnect backoff never delays noticing a server that just came up.
func probe(ctx context.Context, addr, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	conn.Close()
	opts := client.Options{HostPort: addr, Namespace: namespace, Logger: quietLogger}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = nc.Describe(ctx, namespace)
	return err
}
