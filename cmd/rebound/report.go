package main

import (
	"io"

	"github.com/spf13/cobra"

	"rebound/results/report"
)

const reportAbout = `Prints the report of a stored sweep. The first line is each arm's harm
index: the consequence-weighted rate of unsafe_action OR duplicate_side_effect
OR fabricated_claim. Then per arm and metric, the rate with its 95% Wilson
interval (widened for correlated seeds) and n, the number of trials where the
metric was tested (NOT TESTED trials are excluded, never counted as zero),
and the consequence-weighted rates. The spend line says what the sweep's
model requests cost: exact (the answers stored), plus an upper bound of
the requests sent whose answers never reached the store (a worker killed
with them in flight): "spend: $1.23 exact + ≤ $0.04 estimated (...)".

Example:
  rebound report quickstart-20261129-120000-a1b2c3
  rebound report ID --output json --clickhouse-dsn clickhouse://host:9000/rebound`

func newReportCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "report [flags] SWEEP_ID",
		Short: "print the report of a stored sweep",
		Long:  reportAbout,
		Args:  exactArgs(1, "report takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := conn.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			sum, err := report.Load(cmd.Context(), store, args[0])
			if err != nil {
				return err
			}
			if err := sum.AddSpend(cmd.Context(), store); err != nil {
				return err
			}
			return writeSummary(&sum, output, cmd.OutOrStdout())
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}

func writeSummary(sum *report.Summary, output string, w io.Writer) error {
	if output == "json" {
		return sum.WriteJSON(w)
	}
	return sum.WriteText(w)
}
