// Command rebound measures how AI agents recover when their tools fail.
//
// Run `rebound help` for the commands. Each command lives in its own file
// (run.go, report.go, ...) and is registered in root.go; the flags that
// say where Temporal and ClickHouse are live in flags.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"rebound/core/agent/command"
	"rebound/internal/runner"
	"rebound/results/record"
	"rebound/results/replay"
	"rebound/results/report"
	"rebound/storage"
)

// Exit codes, documented in the README and in `rebound help`.
const (
	exitOK          = 0   // the command did what was asked
	exitFailed      = 1   // the sweep failed, a gate or lint found problems, a replay differed
	exitUsage       = 2   // bad flags, bad input files, unknown sweep/trial/arm, configuration errors
	exitInterrupted = 130 // stopped by Ctrl-C / SIGTERM
)

// usageError marks errors caused by the invocation or its inputs (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failure marks a command that ran but whose result is a failure (exit 1).
type failure struct{ msg string }

func (e failure) Error() string { return e.msg }

// silentUsage is exit 2 with nothing more to print (the help was shown).
var silentUsage = usageError{errors.New("")}

// inputErrors are what the libraries return for input that names nothing
// real: an unknown sweep, trial, arm or schedule, a statement the store
// refuses. Every command maps them to exit 2, whatever it was doing.
var inputErrors = []error{
	record.ErrNotFound,
	storage.ErrStatement,
	storage.ErrReadOnly,
	report.ErrUnknownArm,
	report.ErrUnknownMetric,
	runner.ErrNoPreviousRun,
	runner.ErrNotResumable,
	runner.ErrNoSchedule,
	runner.ErrScheduleExists,
	runner.ErrBadSchedule,
	ErrNoStore,
	replay.ErrNotReplayable,
}

func main() {
	// A command arm's process may run this binary as its stdio MCP server
	// (REBOUND_BIN, REBOUND_MCP_CONFIG).
	if exe, err := os.Executable(); err == nil {
		command.SetBinary(exe)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile(os.Stderr)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	interrupted := ctx.Err() != nil
	stop()
	if interrupted && code != exitOK {
		code = exitInterrupted
	}
	os.Exit(code)
}

// dispatch runs the command line args and returns the exit code.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	// Names, goals, claims and tool output come from files, agents and
	// storage: nothing a terminal would interpret is printed. Only the
	// progress bar's carriage returns survive, on stderr. Commands whose
	// stdout is a file (scenario import, completion scripts) are exempt.
	stderr = termWriter{w: stderr, keepCR: true}
	if !rawOutput(root, args) {
		stdout = termWriter{w: stdout}
	}
	setOutput(root, stdout, stderr)
	root.SetArgs(args)
	return exitCode(root.ExecuteContext(ctx), stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "rebound: interrupted")
		return exitInterrupted
	}
	if err.Error() != "" {
		fmt.Fprintf(stderr, "rebound: %v\n", err)
	}
	var u usageError
	var f failure
	switch {
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &f):
		return exitFailed
	}
	for _, e := range inputErrors {
		if errors.Is(err, e) {
			return exitUsage
		}
	}
	return exitFailed
}
