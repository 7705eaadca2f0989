package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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

Examples:
  rebound gate --baseline prod --candidate next --thresholds examples/gates/release.yaml SWEEP_ID
  rebound gate --baseline prod --candidate next --thresholds gate.yaml \
      --save gate.xml --save comment.md --save report.html SWEEP_ID`

func newGateCmd() *cobra.Command {
	var (
		f          compareFlags
		thresholds string
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
			store, err := f.conn.openStore(ctx)
			if err != nil {
				return usageError{err}
			}
			defer store.Close()
			c, err := f.load(ctx, store, th.Confidence)
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
	return cmd
}
