package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"rebound/results/estimate"
)

const planAbout = `Plans before they run.

  rebound plan estimate PLAN   trials; expected model calls, tokens and cost
                               from the recorded trials of the same models;
                               with --effect, the minimum detectable
                               difference of the planned pairs

Examples:
  rebound plan estimate examples/plans/prompt-matrix.yaml
  rebound plan estimate --effect 0.1 --output json examples/plans/quickstart.yaml`

func newPlanCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "plan estimate",
		Short: "estimate a plan before it runs: trials, model calls, tokens, cost, detectable difference (plan estimate PLAN)",
		Long:  planAbout,
	}, newPlanEstimateCmd())
}

// newPlanEstimateCmd is `rebound plan estimate PLAN`; the logic is in
// package estimate.
func newPlanEstimateCmd() *cobra.Command {
	var (
		conn   connection
		output string
		po     estimate.PowerOptions
	)
	cmd := &cobra.Command{
		Use:   "estimate [flags] PLAN",
		Short: "trials, expected model calls, tokens and cost; with --effect, the detectable difference",
		Long:  planAbout,
		Args:  exactArgs(1, "plan estimate takes exactly one plan file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return planEstimate(cmd.Context(), &conn, args[0], po, output, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	conn.storageFlags(fs)
	outputFlag(fs, &output)
	fs.Float64Var(&po.Effect, "effect", 0, "target difference of a rate between two arms, e.g. 0.1 (10 points); adds the power section")
	fs.Float64Var(&po.Baseline, "baseline", 0.5, "power: the baseline arm's assumed success rate (0.5 is the worst case)")
	fs.Float64Var(&po.ICC, "icc", 0.5, "power: assumed correlation of a case's outcomes across seeds (1: deterministic agents)")
	fs.Float64Var(&po.Alpha, "alpha", 0.05, "power: two-sided significance level")
	fs.Float64Var(&po.Power, "power", 0.8, "power: target power")
	return cmd
}

// planEstimate prints the estimate of the plan at path.
func planEstimate(ctx context.Context, conn *connection, path string, po estimate.PowerOptions, output string, stdout io.Writer) error {
	plan, err := preparePlan(ctx, path)
	if err != nil {
		return err
	}
	var est *estimate.Estimate
	st, openErr := openHistoryStore(ctx, conn)
	if openErr == nil {
		defer st.Close()
		est, err = estimate.ForPlan(ctx, plan, st)
	} else {
		est, err = estimate.ForPlan(ctx, plan, nil)
		if err == nil {
			est.NoStore(openErr)
		}
	}
	if err != nil {
		return err
	}
	if po.Effect != 0 {
		if err := est.AddPower(po); err != nil {
			return usagef("--effect and the power flags: %v", err)
		}
	}
	if output == "json" {
		return writeJSON(stdout, est, true)
	}
	return est.WriteText(stdout)
}

// openHistoryStore opens the store read-only when there is one to read: a
// ClickHouse server, or an embedded store that already exists under
// --data-dir (estimating never creates one).
func openHistoryStore(ctx context.Context, conn *connection) (interface {
	estimate.History
	Close() error
}, error) {
	if conn.clickhouseDSN == "" {
		dir := filepath.Join(conn.dataDir, "chdb")
		if _, err := os.Stat(dir); err != nil {
			return nil, errors.New("no embedded store under " + dir + " and no --clickhouse-dsn")
		}
	}
	return conn.openReadOnlyStore(ctx)
}
