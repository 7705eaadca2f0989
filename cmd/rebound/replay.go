package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rebound/results/replay"
)

const replayAbout = `Re-runs a stored trial offline: the same scenario variant, seed and fault
schedule, and for an LLM arm the recorded model responses instead of the
network (no API key needed). It exits 0 when the replay reproduces the stored
verdicts, and 1 with the differences, or with the first step where the
conversation departed from the recording.

Example:
  rebound replay 3f9a0c1d2e4b5a6978c1d2e3`

func newReplayCmd() *cobra.Command {
	var (
		conn   connection
		output string
	)
	cmd := &cobra.Command{
		Use:   "replay [flags] TRIAL_ID",
		Short: "re-run a stored trial offline and check it reproduces its verdicts",
		Long:  replayAbout,
		Args:  exactArgs(1, "replay takes exactly one TRIAL_ID (find one with 'rebound trials SWEEP_ID')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := conn.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			r, err := replay.Trial(cmd.Context(), store, args[0], replay.WithRedactionKey(conn.storedKey()))
			if err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if output == "json" {
				if err := writeJSON(stdout, r, false); err != nil {
					return err
				}
			} else {
				mode := "scripted agent, deterministic"
				if r.Offline {
					mode = "recorded model responses, offline"
				}
				switch {
				case r.Divergence != "":
					fmt.Fprintf(stdout, "trial %s: DIVERGED (%s)\n  %s\n", r.TrialID, mode, r.Divergence)
				case len(r.Diffs) > 0:
					fmt.Fprintf(stdout, "trial %s: NOT REPRODUCED (%s)\n", r.TrialID, mode)
					for _, d := range r.Diffs {
						fmt.Fprintf(stdout, "  %s\n", d)
					}
				default:
					fmt.Fprintf(stdout, "trial %s: reproduced (%s): every outcome and check matches\n", r.TrialID, mode)
				}
			}
			if !r.Reproduced() {
				return failure{"replay did not reproduce the trial"}
			}
			return nil
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}
