// Command rebound measures how AI agents recover when their tools fail.
//
// Run `rebound help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes, documented in the README and in `rebound help`.
const (
	exitOK          = 0   // the command did what was asked
	exitFailed      = 1   // the sweep failed, or a gate or lint found problems
	exitUsage       = 2   // bad flags, bad input files, or configuration errors
	exitInterrupted = 130 // stopped by Ctrl-C / SIGTERM
)

// usageError marks errors caused by the invocation or its inputs.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failure marks a command that ran but whose result is a failure (exit 1).
type failure struct{ msg string }

func (e failure) Error() string { return e.msg }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run a plan on the embedded stack (Temporal dev server + chDB) and print the report", runCmd},
		{"worker", "run a worker against an existing Temporal and ClickHouse", workerCmd},
		{"sweep", "start a sweep on an existing Temporal (sweep start PLAN), or show its progress (sweep status ID)", sweepCmd},
		{"report", "print the report of a stored sweep", reportCmd},
		{"compare", "compare two arms on the same cases (paired), as text, Markdown, JSON, JUnit or HTML", compareCmd},
		{"gate", "fail (exit 1) when the candidate arm regresses beyond a thresholds file", gateCmd},
		{"sweeps", "list stored sweeps, newest first", sweepsCmd},
		{"trials", "list a sweep's trials and their bad outcomes (filter by arm, scenario)", trialsCmd},
		{"trial", "show one trial: its faults, calls, claim and verdicts (trial show ID)", trialCmd},
		{"judge", "the LLM judge's agreement with the checks, and its review queue", judgeCmd},
		{"replay", "re-run a stored trial offline and check it reproduces its verdicts", replayCmd},
		{"regrade", "re-score a stored sweep with the current grader, no agent run, no model paid", regradeCmd},
		{"schedule", "nightly sweeps on Temporal Schedules (schedule create|list|describe|pause|resume|trigger|delete)", scheduleCmd},
		{"trend", "a schedule's rates per arm over its last runs, with intervals", trendCmd},
		{"plan", "estimate a plan before it runs: trials, model calls, tokens, cost, detectable difference (plan estimate PLAN)", planCmd},
		{"sql", "run one SQL statement against the store (the embedded one included)", sqlCmd},
		{"scenario", "check, list, generate and import scenarios (scenario lint|variants|import)", scenarioCmd},
		{"mcp-stdio", "serve a trial's tools over MCP on stdin/stdout, for agents that start stdio MCP servers", mcpStdioCmd},
	}
}

const overview = `rebound measures how AI agents recover when their tools fail.

It injects controlled faults into an agent's tool calls, keeps its own ledger of
what really happened, grades every trial with executable checks, runs the matrix
of scenarios x variants x arms x seeds as a Temporal workflow, stores every
trial in ClickHouse, and reports rates with 95%% intervals.

Usage:
  rebound <command> [flags] [args]

Commands:
%s
Quick start (embedded Temporal dev server and chDB, nothing else to run):
  make run        (or: make setup build && .cache/bin/rebound run examples/plans/quickstart.yaml)

Exit codes: 0 success, 1 sweep failed or problems found, 2 bad input or
configuration, 130 interrupted.

Run 'rebound <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil
	stop()
	if interrupted && code != exitOK {
		code = exitInterrupted
	}
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printOverview(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	// Names, goals, claims and tool output come from files, agents and
	// storage: nothing a terminal would interpret is printed. Only the
	// progress bar's carriage returns survive, on stderr; the importer's
	// output is a file.
	stderr = termWriter{w: stderr, keepCR: true}
	if !(args[0] == "scenario" && len(args) > 1 && args[1] == "import") {
		stdout = termWriter{w: stdout}
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return exitCode(c.run(ctx, args[1:], stdout, stderr), stderr)
		}
	}
	fmt.Fprintf(stderr, "rebound: unknown command %q\n\n", args[0])
	printOverview(stderr)
	return exitUsage
}

func printOverview(w io.Writer) {
	list := ""
	for _, c := range commands() {
		list += fmt.Sprintf("  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, overview, list)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "rebound: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "rebound: %v\n", err)
	var u usageError
	var f failure
	switch {
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &f):
		return exitFailed
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailed
}
