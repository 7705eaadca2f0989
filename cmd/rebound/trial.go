package main

import (
	"github.com/spf13/cobra"

	"rebound/results/replay"
)

const trialAbout = `Shows the compact failure artifact of one stored trial: the goal, the allowed
tools, the fault schedule, every call with its redacted arguments and
normalized result, the claim, the failed checks with the calls that prove
them, and the causal pivot (which call failed, which call recovered, which
safety constraints held). For a command arm it also prints the process's
exit (or timeout) and its redacted stdout and stderr. --output json gives
the same for machines.

Example:
  rebound trial show 3f9a0c1d2e4b5a6978c1d2e3`

func newTrialCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "trial show",
		Short: "show one trial: its faults, calls, claim and verdicts (trial show ID)",
		Long:  trialAbout,
	}, newTrialShowCmd())
}

func newTrialShowCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "show [flags] TRIAL_ID",
		Short: "a stored trial's failure artifact",
		Long:  trialAbout,
		Args:  exactArgs(1, "trial show takes exactly one TRIAL_ID (find one with 'rebound trials SWEEP_ID')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := conn.openExistingStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			a, err := replay.Artifact(cmd.Context(), store, args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), a, true)
			}
			return a.WriteText(cmd.OutOrStdout())
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}
