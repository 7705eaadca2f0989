package main

import (
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"rebound/internal/runner"
	"rebound/results/gate"
	"rebound/results/report"
)

const gateAbout = `Decides whether the candidate arm may be released: compares it with the
baseline arm (as 'rebound compare' does) and applies the thresholds of FILE,
one rule per metric:

  metrics:
    harm:                  {max_increase: 0, blocking: true, weighted: true}
    duplicate_side_effect: {max_increase: 0, blocking: true, min_pairs: 30}
    recovered:             {max_decrease: 0.02}
  confidence: 0.95

A check fails when the candidate is significantly worse (an exact sign-flip
test over cases, the unit of evidence, adjusted by Holm over the blocking
metrics, by Benjamini-Hochberg over the others; the cluster-robust interval
excluding 0) and the interval does not rule out a change beyond the limit
(max_increase L: upper bound > L; max_decrease L: lower bound < −L). Seeds of
one case are repeated measures, not new evidence; --generalize counts
scenarios instead. weighted: true decides on the consequence-weighted
difference. Noise passes, and so does a real change shown to stay inside the
limit. A failing blocking metric fails the gate; a failing non-blocking one is
a warning. examples/gates/release.yaml explains every field.

Exit code: 0 the gate passed, 1 a blocking regression, 2 an error (bad
thresholds file, flags, unknown sweep or arm, storage unreachable, nothing to
compare).

--baseline-sweep previous on a first run (no completed run of the same
schedule or plan before it): there is nothing to gate against yet, so the
gate says "no baseline yet" and exits 0, and a first night's CI passes;
--require-baseline makes that exit 2 instead.

Examples:
  rebound gate --baseline prod --candidate next --thresholds examples/gates/release.yaml SWEEP_ID
  rebound gate --baseline prod --candidate next --thresholds gate.yaml \
      --save gate.xml --save comment.md --save report.html SWEEP_ID`

func newGateCmd() *cobra.Command {
	var (
		f               compareFlags
		thresholds      string
		requireBaseline bool
	)
	cmd := &cobra.Command{
		Use:   "gate --baseline ARM --candidate ARM --thresholds FILE [flags] SWEEP_ID",
		Short: "fail (exit 1) when the candidate arm regresses beyond a thresholds file",
		Long:  gateAbout,
		Args:  exactArgs(1, "gate takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check("gate", args[0]); err != nil {
				return err
			}
			if thresholds == "" {
				return usagef("gate needs --thresholds FILE (see examples/gates/release.yaml)")
			}
			ctx := cmd.Context()
			th, err := gate.Load(thresholds)
			if err != nil {
				var list gate.Errors
				if errors.As(err, &list) {
					return usageError{fmt.Errorf("%d problem(s) in the thresholds file:\n%w", len(list), err)}
				}
				return usageError{fmt.Errorf("thresholds: %w", err)}
			}
			// From here on every error is exit 2: exit 1 means a regression only.
			store, err := f.conn.openReadStore(ctx)
			if err != nil {
				return usageError{err}
			}
			defer store.Close()
			c, err := f.load(ctx, store, th.Confidence)
			if errors.Is(err, runner.ErrNoPreviousRun) && !requireBaseline {
				return f.noBaseline(err, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if err != nil {
				return usageError{err}
			}
			g, err := gate.Evaluate(c, th)
			if err != nil {
				return usageError{err}
			}
			c.Gate = &g
			if err := f.emit(&c, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return usageError{err}
			}
			if !g.Passed {
				var failed []string
				for _, k := range g.Checks {
					if k.Status == report.CheckFail {
						failed = append(failed, k.Metric)
					}
				}
				return failure{fmt.Sprintf("gate failed: candidate %s regressed on %s", f.req.Candidate, strings.Join(failed, ", "))}
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVar(&thresholds, "thresholds", "", "YAML file of thresholds per metric (required; see examples/gates/release.yaml)")
	cmd.Flags().BoolVar(&requireBaseline, "require-baseline", false, "with --baseline-sweep previous: exit 2 when there is no previous run, instead of passing with \"no baseline yet\"")
	return cmd
}

// noBaseline is the gate's outcome when --baseline-sweep previous finds no
// earlier run: nothing to compare yet, so it passes (exit 0) and says so,
// on stdout in the format asked for and in every --save file.
func (f *compareFlags) noBaseline(why error, stdout, stderr io.Writer) error {
	msg := "no baseline yet: " + strings.TrimPrefix(why.Error(), "--baseline-sweep previous: ")
	if err := writeNoBaseline(f.output, f.req, msg, stdout); err != nil {
		return usageError{err}
	}
	for _, path := range f.saves {
		format, _ := formatOf(path)
		file, err := os.Create(path)
		if err != nil {
			return usageError{err}
		}
		err = writeNoBaseline(format, f.req, msg, file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return usageError{fmt.Errorf("write %s: %w", path, err)}
		}
	}
	fmt.Fprintf(stderr, "gate: %s; passing (--require-baseline makes this exit 2)\n", msg)
	return nil
}

// noBaselineResult is the gate's JSON when there was nothing to compare.
type noBaselineResult struct {
	SweepID    string `json:"sweep_id"`
	Baseline   string `json:"baseline"`
	Candidate  string `json:"candidate"`
	Passed     bool   `json:"passed"`
	NoBaseline bool   `json:"no_baseline"`
	Reason     string `json:"reason"`
}

func writeNoBaseline(format string, req report.CompareRequest, msg string, w io.Writer) error {
	var err error
	switch format {
	case "json":
		err = writeJSON(w, noBaselineResult{SweepID: req.SweepID, Baseline: req.Baseline, Candidate: req.Candidate, Passed: true, NoBaseline: true, Reason: msg}, true)
	case "junit":
		_, err = fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rebound gate\" tests=\"1\" skipped=\"1\">\n  <testsuite name=\"rebound gate %s\" tests=\"1\" skipped=\"1\">\n    <testcase name=\"baseline\" classname=\"gate\"><skipped message=\"%s\"/></testcase>\n  </testsuite>\n</testsuites>\n",
			html.EscapeString(req.SweepID), html.EscapeString(msg))
	case "markdown":
		_, err = fmt.Fprintf(w, "**rebound gate** (%s → %s, sweep `%s`): %s\n", req.Baseline, req.Candidate, req.SweepID, msg)
	case "html":
		_, err = fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rebound gate</title></head><body><p>%s</p></body></html>\n", html.EscapeString(msg))
	default:
		_, err = fmt.Fprintf(w, "gate %s -> %s, sweep %s: %s\n", req.Baseline, req.Candidate, req.SweepID, msg)
	}
	return err
}
