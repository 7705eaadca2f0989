package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rebound/internal/buildinfo"
)

const overview = `rebound measures how AI agents recover when their tools fail.

It injects controlled faults into an agent's tool calls, keeps its own ledger of
what really happened, grades every trial with executable checks, runs the matrix
of scenarios x variants x arms x seeds as a Temporal workflow, stores every
trial in ClickHouse, and reports rates with 95% intervals.

Quick start (embedded Temporal dev server and chDB, nothing else to run):
  make run        (or: make setup build && .cache/bin/rebound run examples/plans/quickstart.yaml)

Flags go anywhere on the line (rebound run PLAN --data-dir DIR). Flags that
name an environment variable in their help fall back to it when not given.

Exit codes:
  0    success
  1    the sweep failed, a gate found a blocking regression, lint found
       problems, a replay did not reproduce
  2    bad flags or arguments, bad input files, unknown sweep, trial, arm or
       schedule, configuration errors
  130  interrupted (Ctrl-C, SIGTERM); a worker stopped so exits 0 (its
       shards hand back what they did not finish)`

// newRoot builds the command tree. A new command is a file with its
// constructor, and one line here.
func newRoot() *cobra.Command {
	// Commands are listed in the order they are added: the common ones first.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "rebound",
		Short: "measure how AI agents recover when their tools fail",
		Long:  overview,
		// Errors are printed once, by dispatch, with the exit code's
		// meaning; usage is shown only when asked for.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// No command: the overview, and exit 2 (nothing was done).
			_ = cmd.Help()
			return silentUsage
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return applyEnv(cmd) },
		// --version: the build, as `rebound version` prints it.
		Version: buildinfo.Get().String(),
	}
	root.SetVersionTemplate("rebound {{.Version}}\n")
	root.SuggestionsMinimumDistance = 2
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "help about any command",
		Long:  "Prints the help of a command (rebound help sweep status), or the overview.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("no help topic %q (see 'rebound help')", strings.Join(args, " "))
			}
			return target.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	})
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newRunCmd(),
		newWorkerCmd(),
		newSweepCmd(),
		newReportCmd(),
		newCompareCmd(),
		newGateCmd(),
		newSweepsCmd(),
		newTrialsCmd(),
		newTrialCmd(),
		newJudgeCmd(),
		newReviewCmd(),
		newUICmd(),
		newReplayCmd(),
		newRegradeCmd(),
		newScheduleCmd(),
		newTrendCmd(),
		newPlanCmd(),
		newSQLCmd(),
		newScenarioCmd(),
		newMCPStdioCmd(),
		newMockLLMCmd(),
		newVersionCmd(),
	)
	registerCompletions(root)
	return root
}

// setOutput directs the tree's output, and adds the completion command
// (which takes its writer when added).
func setOutput(root *cobra.Command, stdout, stderr io.Writer) {
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.InitDefaultCompletionCmd()
	// Like every group, completion without a known shell is exit 2.
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		group(c)
	}
}

// rawOutput reports whether the command args name writes a file's bytes to
// stdout (a scenario, a completion script): they are not filtered for the
// terminal.
func rawOutput(root *cobra.Command, args []string) bool {
	if len(args) > 0 && (args[0] == "completion" || args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return true
	}
	c, _, err := root.Find(args)
	return err == nil && c.Annotations[rawAnnotation] == "true"
}

const rawAnnotation = "rebound_raw_output"

// flagError makes every flag problem a usage error (exit 2) that names the
// flag and points at the command's help.
func flagError(cmd *cobra.Command, err error) error {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) {
		err = fmt.Errorf("--%s: %w", inv.GetFlag().Name, errors.Unwrap(inv))
	}
	return usagef("%v\n(see '%s --help')", err, cmd.CommandPath())
}

// unknownCommand refuses arguments to the root command: they can only be a
// command that does not exist.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s (see 'rebound help')", msg)
}

// group makes cmd a command of subcommands: without one, or with an
// unknown one, it shows its help on stderr and exits 2.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		var names []string
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		c.SetOut(c.ErrOrStderr())
		_ = c.Usage()
		if len(args) > 0 {
			return usagef("unknown %s subcommand %q: use %s", c.Name(), args[0], orList(names))
		}
		return usagef("%s needs a subcommand: %s", c.Name(), orList(names))
	}
	return cmd
}

// orList joins "a", "b", "c" as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// exactArgs requires n positional arguments, or fails with msg (exit 2).
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s; got %d argument(s)", msg, len(args))
		}
		return nil
	}
}

// minArgs requires at least n positional arguments, or fails with msg.
func minArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s", msg)
		}
		return nil
	}
}
