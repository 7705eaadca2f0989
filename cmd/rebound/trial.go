package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"rebound/results/artifact"
	"rebound/results/record"
	"rebound/results/replay"
	"rebound/storage"
)

const trialAbout = `Shows the compact failure artifact of one stored trial: the goal, the allowed
tools, the fault schedule, every call with its redacted arguments and
normalized result, the claim, the failed checks with the calls that prove
them, and the causal pivot: which call failed, which call was the recovery
(the first after it that advanced the goal safely), which calls were unsafe
and what they did (a duplicate side effect, an escalation, a forbidden tool,
...), and which safety constraints held. For a command arm it also prints the process's
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
			store, err := conn.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			a, err := replay.Artifact(cmd.Context(), store, args[0])
			if err != nil {
				return err
			}
			shown, err := withBuild(cmd.Context(), store, a)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), shown, true)
			}
			if err := a.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), shown.buildLine())
			return err
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// shownTrial is trial show's JSON: the artifact, and which builds made it.
type shownTrial struct {
	artifact.Artifact
	// SweepID is the trial's sweep; ReboundVersion the build that
	// registered it ("" for a sweep stored before builds were recorded);
	// GraderVersion the grader that scored the trial.
	SweepID        string `json:"sweep_id"`
	ReboundVersion string `json:"rebound_version"`
	GraderVersion  uint32 `json:"grader_version"`
}

// withBuild adds to an artifact the builds of its sweep and its grader.
func withBuild(ctx context.Context, store storage.Store, a artifact.Artifact) (shownTrial, error) {
	t, _, err := store.Trial(ctx, a.TrialID)
	if err != nil {
		return shownTrial{}, err
	}
	out := shownTrial{Artifact: a, SweepID: t.SweepID, GraderVersion: t.GraderVersion}
	sw, err := store.Sweep(ctx, t.SweepID)
	switch {
	case err == nil:
		out.ReboundVersion = sw.ReboundVersion
	case !errors.Is(err, record.ErrNotFound):
		return shownTrial{}, err
	}
	return out, nil
}

func (s shownTrial) buildLine() string {
	v := s.ReboundVersion
	if v == "" {
		v = "a build that did not record its version"
	} else {
		v = "rebound " + v
	}
	return fmt.Sprintf("build: sweep %s registered by %s; graded by grader v%d", s.SweepID, v, s.GraderVersion)
}
