package runner

// What a command of the CLI does with Temporal: dial it, start the embedded
// dev server, run a worker in the process, follow a sweep (cancelling it on
// Ctrl-C), cancel one. cmd/rebound holds the values these return and hands
// them back here; it never calls the SDK itself (internal/archtest).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"rebound/activities"
	"rebound/internal/devstack"
	"rebound/internal/logging"
	"rebound/internal/sweepstatus"
	"rebound/storage"
	"rebound/workflows"
)

// Client is a connection to Temporal, as Dial returns it.
type Client = client.Client

// WorkflowRun is a sweep's workflow run (StartSweep, SweepRun).
type WorkflowRun = client.WorkflowRun

// Notef tells the user one line (the CLI's status line).
type Notef func(format string, args ...any)

// DialOptions say which Temporal to dial and how.
type DialOptions struct {
	Address, Namespace string
	// RedactionKey keys the payload codec: nothing this process hands to
	// Temporal is stored there in the clear.
	RedactionKey []byte
	// Security is a cluster's TLS and API key; nil for the embedded dev
	// server, which listens on loopback in plain text.
	Security *Security
	// Getenv reads the API key's variable (nil: os.Getenv).
	Getenv func(string) string
	// Logger, when set, receives the SDK's logs at its own level (the
	// worker's --log-format and --log-level), tagged component=temporal-sdk,
	// until ctx ends; nil keeps them quiet (warnings and errors on stderr).
	Logger *slog.Logger
}

// Dial connects to Temporal with the payload codec and the OpenTelemetry
// interceptors. The SDK's routine logs stay out of the terminal; warnings
// and errors still show on stderr until ctx ends (an interrupted command's
// in-flight activities then all report their cancellation). An error of
// the configuration (the redaction key, TLS files, the API key variable)
// satisfies IsConfigError.
func Dial(ctx context.Context, o DialOptions) (Client, error) {
	var logger log.Logger = quietLogger{ctx}
	if o.Logger != nil {
		logger = log.NewStructuredLogger(slog.New(untilDone{ctx, o.Logger.Handler()}).With("component", "temporal-sdk"))
	}
	opts, err := SecureClientOptions(client.Options{HostPort: o.Address, Namespace: o.Namespace, Logger: logger}, o.RedactionKey)
	if err != nil {
		return nil, configError{err}
	}
	if opts, err = InstrumentClientOptions(opts); err != nil {
		return nil, err
	}
	if o.Security != nil {
		getenv := o.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if opts, err = o.Security.Apply(opts, getenv); err != nil {
			return nil, configError{err}
		}
	}
	cl, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", o.Address, o.Namespace, err)
	}
	return cl, nil
}

// configError is an error the user fixes in the configuration.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// IsConfigError reports whether err is one of the configuration (Dial,
// StartDevServer): the command's input, not the service.
func IsConfigError(err error) bool {
	var ce configError
	return errors.As(err, &ce)
}

// IsAgentConfig reports whether a sweep failed because an arm's agent
// cannot run (a bad model name or key, a command that cannot start): the
// plan's to fix, like any configuration error.
func IsAgentConfig(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == workflows.ErrAgentConfig
}

// quietLogger keeps the Temporal SDK's routine logs out of the terminal;
// warnings and errors still show, except once the command is interrupted,
// when every in-flight activity reports its cancellation.
type quietLogger struct{ ctx context.Context }

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (l quietLogger) Warn(msg string, kv ...any) {
	if l.ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, append([]any{"temporal warning:", msg}, kv...)...)
	}
}
func (l quietLogger) Error(msg string, kv ...any) {
	if l.ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, append([]any{"temporal error:", msg}, kv...)...)
	}
}

var _ log.Logger = quietLogger{}

// untilDone is a slog.Handler that stops once ctx ends, as quietLogger
// does: an interrupted worker's in-flight activities all report their
// cancellation.
type untilDone struct {
	ctx context.Context
	slog.Handler
}

func (h untilDone) Enabled(ctx context.Context, l slog.Level) bool {
	return h.ctx.Err() == nil && h.Handler.Enabled(ctx, l)
}

func (h untilDone) WithAttrs(attrs []slog.Attr) slog.Handler {
	return untilDone{h.ctx, h.Handler.WithAttrs(attrs)}
}

func (h untilDone) WithGroup(name string) slog.Handler {
	return untilDone{h.ctx, h.Handler.WithGroup(name)}
}

// DevServerOptions are the embedded dev server's.
type DevServerOptions struct {
	// Bin is the Temporal CLI; empty: devstack.LocateTemporal (not found is
	// a configuration error).
	Bin string
	// DataDir is the embedded stack's data dir: the server keeps its
	// SQLite file under DataDir/temporal and its log in DataDir/temporal.log.
	DataDir   string
	Namespace string
	// Log says how the server logs into DataDir/temporal.log: its format
	// and level (empty: text at warn). Its other lines (its banner,
	// devstack's notes) are relayed as records of that log.
	Log logging.Options
}

// StartDevServer starts the embedded Temporal dev server and returns its
// address and how to stop it.
func StartDevServer(ctx context.Context, o DevServerOptions, notef Notef) (address string, stop func(), err error) {
	bin := o.Bin
	if bin == "" {
		if bin, err = devstack.LocateTemporal(); err != nil {
			return "", nil, configError{err}
		}
	}
	start := time.Now()
	notef("starting Temporal dev server...")
	logFile, err := OpenLog(o.DataDir, "temporal.log")
	if err != nil {
		return "", nil, err
	}
	logOpts := o.Log
	if logOpts.Level == "" {
		logOpts.Level = "warn"
	}
	relayLog, err := logging.New(logFile, logOpts)
	if err != nil {
		logFile.Close()
		return "", nil, configError{err}
	}
	relay := logging.NewLines(relayLog, logFile, logOpts.Format, "source", "temporal-dev-server")
	closeLog := func() { relay.Close(); logFile.Close() }
	srv, err := devstack.StartTemporal(ctx, devstack.Options{Bin: bin, DataDir: filepath.Join(o.DataDir, "temporal"), Namespace: o.Namespace,
		LogWriter: relay, LogLevel: logOpts.Level, LogFormat: logOpts.Format})
	if err != nil {
		closeLog()
		return "", nil, err
	}
	notef("Temporal dev server on %s (%.1fs; log in %s)", srv.Address(), time.Since(start).Seconds(), logFile.Name())
	return srv.Address(), func() {
		if ctx.Err() != nil {
			// Interrupted (Ctrl-C): the command exits at once; the
			// server's state is durable, a kill loses nothing.
			_ = srv.StopWithin(interruptedStopGrace)
		} else {
			_ = srv.Stop()
		}
		closeLog()
	}, nil
}

// interruptedStopGrace is how long an interrupted command lets its dev
// server shut down before killing it: not at all (a clean shutdown takes
// a second or more; the sweep is recorded before the server stops).
const interruptedStopGrace = 0

// OpenLog opens (appending) the log file name of the data dir, creating
// the data dir if needed.
func OpenLog(dataDir, name string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return os.OpenFile(filepath.Join(dataDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// InProcessWorker is a worker this process runs, with its activities.
type InProcessWorker struct {
	w    worker.Worker
	acts *activities.Activities
}

// StartWorker builds (NewWorker) and starts a worker of queue.
// It sets the process's garbage collector for trials (SetWorkerGC).
func StartWorker(c Client, queue string, acts *activities.Activities, opts WorkerOptions) (*InProcessWorker, error) {
	SetWorkerGC()
	w, err := NewWorker(c, queue, acts, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return &InProcessWorker{w: w, acts: acts}, nil
}

// Stop stops the worker (its shards get the stop timeout to finish, then
// hand the rest back) and waits up to 30 seconds for the activities' last
// write. drained is false when a shard was still writing then.
func (w *InProcessWorker) Stop() (drained bool) {
	w.w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.acts.Drain(ctx) == nil
}

// SweepRun is the workflow run of a sweep already started (to resume
// following it).
func SweepRun(ctx context.Context, c Client, sweepID string) WorkflowRun {
	return c.GetWorkflow(ctx, WorkflowID(sweepID), "")
}

// FollowHooks are what FollowSweep shows the user.
type FollowHooks struct {
	// Progress is called at every interval, with the time since following
	// began; Done once the sweep ended or following stopped.
	Progress func(p workflows.Progress, elapsed time.Duration)
	Done     func()
	Notef    Notef
	// Stop, when set, runs first once following is interrupted: it halts
	// this process's shards (no model request is sent after it) and marks
	// the sweep stopped in the store (MarkStopped), so the cancellation
	// that follows records it as stopped, resumable.
	Stop func(ctx context.Context) error
	// RanHere, when set, counts the trials this process's worker ran
	// (activities.Activities.TrialsRun): the end says it when it differs
	// from the sweep's (a resumed sweep, other workers).
	RanHere func() int
}

// FollowSweep shows a sweep's progress until it ends. When ctx ends first
// (Ctrl-C), it stops the sweep: h.Stop, then it cancels the workflow and
// waits, up to 30 seconds, until the workflow closed (while this process's
// worker still runs, to record it), and returns ctx's error.
func FollowSweep(ctx context.Context, c Client, run WorkflowRun, sweepID string, every time.Duration, h FollowHooks) (workflows.Progress, error) {
	start := time.Now()
	final, err := Follow(ctx, c, run, sweepID, every, func(p workflows.Progress) { h.Progress(p, time.Since(start)) })
	h.Done()
	if ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if h.Stop != nil {
			if serr := h.Stop(cctx); serr != nil {
				h.Notef("interrupted: could not mark sweep %s stopped: %v", sweepID, serr)
			}
		}
		if cerr := CancelSweep(cctx, c, sweepID); cerr != nil {
			h.Notef("interrupted: could not stop sweep %s: %v", sweepID, cerr)
			return final, ctx.Err()
		}
		if _, werr := WaitClosed(cctx, c, sweepID); werr != nil && cctx.Err() != nil {
			h.Notef("interrupted: sweep %s stop requested, not yet recorded; check with 'rebound sweeps'", sweepID)
			return final, ctx.Err()
		}
		h.Notef("interrupted: sweep %s stopped; its stored trials are kept: continue it with 'rebound run --resume %s' (or 'rebound sweep start --resume %s' on a cluster), discard it with 'rebound sweep cancel %s'", sweepID, sweepID, sweepID, sweepID)
		return final, ctx.Err()
	}
	if err != nil {
		return final, fmt.Errorf("sweep %s: %w", sweepID, err)
	}
	trials := fmt.Sprintf("%d trials", final.TrialsDone)
	if h.RanHere != nil {
		if n := h.RanHere(); n != final.TrialsDone {
			trials += fmt.Sprintf(", %d of them run by this process", n)
		}
	}
	h.Notef("sweep %s %s: %s in %.1fs", sweepID, final.Status, trials, time.Since(start).Seconds())
	return final, nil
}

// NoteUnfinished tells the user about the unfinished sweeps of the
// embedded data dir (their shards do not run unless resumed) and about
// sweeps stored as running whose workflow is gone.
func NoteUnfinished(ctx context.Context, c Client, store storage.Store, dataDir string, notef Notef) error {
	open, err := OpenSweeps(ctx, c)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, o := range open {
		seen[o.SweepID] = true
		n, _ := store.CountTrials(ctx, o.SweepID)
		planned := uint64(0)
		if sw, err := store.Sweep(ctx, o.SweepID); err == nil {
			planned = sw.TrialsPlanned
		}
		notef("note: %s holds an unfinished sweep %s (started %s, %d of %d trials stored); it does not run now: resume it with 'rebound run --resume %s' or cancel it with 'rebound sweep cancel %s'",
			dataDir, o.SweepID, o.StartedAt.Local().Format("2006-01-02 15:04"), n, planned, o.SweepID, o.SweepID)
	}
	sweeps, err := store.Sweeps(ctx, 0)
	if err != nil {
		return err
	}
	for _, sw := range sweeps {
		if sw.Status == sweepstatus.Running && !seen[sw.SweepID] {
			notef("note: sweep %s is stored as running but its workflow is gone (orphaned); mark it with 'rebound sweep cancel %s'", sw.SweepID, sw.SweepID)
		}
	}
	return nil
}

// CancelRunning cancels a running sweep's workflow (st, as DescribeSweep
// found it) and waits up to wait until it closed. When nothing polls the
// sweep's queue (the embedded stack: each sweep has its own), it first
// runs a worker here with the activities newActs builds, so that the
// cancellation is processed and recorded (notef is told when that worker
// stopped before its last write drained).
func CancelRunning(ctx context.Context, c Client, st SweepState, newActs func() (*activities.Activities, error), wait time.Duration, notef Notef) error {
	if st.Pollers == 0 {
		acts, err := newActs()
		if err != nil {
			return err
		}
		w, err := StartWorker(c, st.TaskQueue, acts, WorkerOptions{})
		if err != nil {
			return err
		}
		defer func() {
			if !w.Stop() {
				notef("warning: a shard was still writing 30s after the worker stopped")
			}
		}()
	}
	if err := CancelSweep(ctx, c, st.SweepID); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := WaitClosed(wctx, c, st.SweepID); err != nil && wctx.Err() != nil {
		return fmt.Errorf("sweep %s: cancel requested, but it did not close within %s", st.SweepID, waitWords(wait))
	}
	return nil
}

// waitWords says a wait as the messages do ("2 minutes").
func waitWords(d time.Duration) string {
	if d%time.Minute == 0 {
		if m := int(d / time.Minute); m != 1 {
			return fmt.Sprintf("%d minutes", m)
		}
		return "1 minute"
	}
	return d.String()
}
