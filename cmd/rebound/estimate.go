package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"rebound/estimate"
)

const planAbout = `Plans before they run.

  rebound plan estimate PLAN   trials; expected model calls, tokens and cost
                               from the recorded trials of the same models;
                               with --effect, the minimum detectable
                               difference of the planned pairs

Examples:
  rebound plan estimate examples/plans/prompt-matrix.yaml
  rebound plan estimate --effect 0.1 --output json examples/plans/quickstart.yaml`

// planCmd is `rebound plan estimate PLAN`; the logic is in package estimate.
func planCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "estimate" {
		fmt.Fprintf(stderr, "Usage: rebound plan estimate [flags] PLAN\n\n%s\n", planAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("plan needs a subcommand: estimate")
	}
	fs := newFlags("plan estimate", "rebound plan estimate [flags] PLAN", planAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	var po estimate.PowerOptions
	fs.Float64Var(&po.Effect, "effect", 0, "target difference of a rate between two arms, e.g. 0.1 (10 points); adds the power section")
	fs.Float64Var(&po.Baseline, "baseline", 0.5, "power: the baseline arm's assumed success rate (0.5 is the worst case)")
	fs.Float64Var(&po.ICC, "icc", 0.5, "power: assumed correlation of a case's outcomes across seeds (1: deterministic agents)")
	fs.Float64Var(&po.Alpha, "alpha", 0.05, "power: two-sided significance level")
	fs.Float64Var(&po.Power, "power", 0.8, "power: target power")
	if err := parseOneArg(fs, args[1:], output, "plan estimate takes exactly one plan file"); err != nil {
		return err
	}
	plan, err := preparePlan(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	var est *estimate.Estimate
	st, openErr := openHistoryStore(ctx, &conn)
	if openErr == nil {
		defer st.Close()
		est, err = estimate.ForPlan(ctx, plan, st, "")
	} else {
		est, err = estimate.ForPlan(ctx, plan, nil, "")
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
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(est)
	}
	return est.WriteText(stdout)
}

// openHistoryStore opens the store read-only when there is one to read: a
// ClickHouse server, or an embedded store that already exists under
// --data-dir (estimating never creates one).
func openHistoryStore(ctx context.Context, conn *connection) (interface {
	estimate.Querier
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
