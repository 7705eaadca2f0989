package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rebound/results/regrade"
)

const regradeAbout = `Re-scores every stored trial of a sweep with the current grader. Each trial
keeps the (redacted) evidence its grader read: the ledger, the world's final
state, the claim. Regrading runs today's checks over it, and probes again
whether an authorized path existed under the trial's schedule; no agent runs
and no model is paid. The result is a new sweep (SWEEP_ID-gN by default, N the
grader version) in which every arm appears twice: under its own name with the
new verdicts, and as ARM@stored with the verdicts it was stored with, so the
two graders pair on the same cases. The new sweep is stored as regrading
before its first trial and completed after its last ('rebound sweeps' shows
which); a regrade that was killed is completed by running it again, which
rewrites the same rows.

The redaction key must be the one the sweep was stored with
(REBOUND_REDACTION_KEY, or the embedded store's own key, which --data-dir
names by its key-id and $REBOUND_KEY_DIR keeps):
it opens the sealed plan, and idempotency keys are compared through their
keyed hashes.

Examples:
  rebound regrade library-20261130-101500-3fa2c1
  rebound compare --baseline careful@stored --candidate careful library-20261130-101500-3fa2c1-g2`

func newRegradeCmd() *cobra.Command {
	var (
		conn   connection
		output string
		into   string
	)
	cmd := &cobra.Command{
		Use:   "regrade [flags] SWEEP_ID",
		Short: "re-score a stored sweep with the current grader, no agent run, no model paid",
		Long:  regradeAbout,
		Args:  exactArgs(1, "regrade takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := conn.openExistingStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			acts, err := newActivities(store, conn.storedKey())
			if err != nil {
				return err
			}
			sum, err := regrade.Sweep(ctx, store, args[0], into, acts)
			if err != nil {
				return fmt.Errorf("regrade %s: %w", args[0], err)
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), sum, false)
			}
			fmt.Fprint(cmd.OutOrStdout(), sum.Report())
			return nil
		},
	}
	conn.storageFlags(cmd.Flags())
	cmd.Flags().StringVar(&into, "into", "", "id of the regraded sweep (default SWEEP_ID-gN)")
	outputFlag(cmd.Flags(), &output)
	return cmd
}
