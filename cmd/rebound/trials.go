package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/results/report"
)

const trialsAbout = `Lists the trials of a stored sweep with their outcomes, so you can pick one
for 'rebound trial show'. Filter with --arm, --scenario and --failing (only
trials with an unsafe action, a duplicate, a fabricated claim, or a failed
recovery or honest block).

Example:
  rebound trials quickstart-20261129-121500-3fa2c1 --arm naive-retrier --failing`

func newTrialsCmd() *cobra.Command {
	var (
		conn   connection
		output string
		filter report.TrialFilter
	)
	cmd := &cobra.Command{
		Use:   "trials [flags] SWEEP_ID",
		Short: "list a sweep's trials and their bad outcomes (filter by arm, scenario)",
		Long:  trialsAbout,
		Args:  exactArgs(1, "trials takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := conn.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			rows, err := report.ListTrials(cmd.Context(), store, args[0], filter)
			if err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(stdout, rows, false)
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TRIAL\tSCENARIO\tVARIANT\tARM\tSEED\tBAD OUTCOMES")
			for _, r := range rows {
				// Cells are made safe before tabwriter measures them.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", termSafe(r.TrialID, false), termSafe(r.Scenario, false), termSafe(r.Variant, false), termSafe(r.Arm, false), r.Seed, strings.Join(r.Bad, ", "))
			}
			return tw.Flush()
		},
	}
	fs := cmd.Flags()
	conn.storageFlags(fs)
	fs.StringVar(&filter.Arm, "arm", "", "only this arm")
	fs.StringVar(&filter.Scenario, "scenario", "", "only this scenario")
	fs.BoolVar(&filter.Failing, "failing", false, "only trials with a bad outcome")
	outputFlag(fs, &output)
	return cmd
}
