package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rebound/internal/runner"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
)

const sweepsAbout = `Lists stored sweeps, newest first, with what their workflows are doing.

A sweep stored as running is checked against Temporal (--temporal-address;
without one, the embedded dev server of --data-dir is started for the
occasion): running with N workers (a worker of this host whose process is
gone is not counted), reconnecting (no worker polls yet, but one held a
shard within the heartbeat timeout: the server restarted), running with no
worker polling its queue
(an embedded 'rebound run' was killed: resume with 'rebound run --resume ID'),
or orphaned (its workflow is gone: 'rebound sweep cancel ID' records it).
--running lists only those.

Example:
  rebound sweeps
  rebound sweeps --running --output json`

func newSweepsCmd() *cobra.Command {
	var (
		conn        connection
		output      string
		limit       int
		onlyRunning bool
	)
	cmd := &cobra.Command{
		Use:   "sweeps [flags]",
		Short: "list stored sweeps, newest first",
		Long:  sweepsAbout,
		Args:  exactArgs(0, "sweeps takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listSweeps(cmd.Context(), &conn, limit, onlyRunning, output, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	conn.devServerFlag(fs)
	intFlag(fs, &limit, "limit", 20, 1, 10000, "how many sweeps to list")
	fs.BoolVar(&onlyRunning, "running", false, "list only sweeps stored as running (running, stalled or orphaned), all of them")
	outputFlag(fs, &output)
	return cmd
}

// listSweeps lists stored sweeps, and for those stored as running what
// their workflows are doing.
func listSweeps(ctx context.Context, conn *connection, limit int, onlyRunning bool, output string, stdout io.Writer) error {
	store, err := conn.openReadStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	n := limit
	if onlyRunning {
		n = 0
	}
	all, err := store.Sweeps(ctx, n)
	if err != nil {
		return err
	}
	var sweeps []record.Sweep
	for _, s := range all {
		if !onlyRunning || s.Status == sweepstatus.Running {
			sweeps = append(sweeps, s)
		}
	}
	states := map[string]string{}
	anyRunning := false
	for _, s := range sweeps {
		anyRunning = anyRunning || s.Status == sweepstatus.Running
	}
	if anyRunning {
		key, err := conn.redactionKey()
		if err != nil {
			return err
		}
		address, stopServer, err := startTemporal(ctx, conn, newStatus(io.Discard))
		if err != nil {
			return err
		}
		defer stopServer()
		c, err := conn.dialTemporal(ctx, address, key)
		if err != nil {
			return err
		}
		defer c.Close()
		for _, s := range sweeps {
			if s.Status != sweepstatus.Running {
				continue
			}
			st, err := runner.DescribeSweep(ctx, c, key, s.SweepID)
			if err != nil {
				states[s.SweepID] = "unknown: " + err.Error()
				continue
			}
			states[s.SweepID] = st.Summary()
		}
	}
	if output == "json" {
		rows := make([]sweepRow, len(sweeps))
		for i, s := range sweeps {
			rows[i] = sweepRow{s.SweepID, s.Name, s.Status, states[s.SweepID], s.TrialsPlanned, s.CreatedAt}
		}
		return writeJSON(stdout, rows, false)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SWEEP\tPLAN\tSTATUS\tTRIALS\tSTARTED\tWORKFLOW")
	for _, s := range sweeps {
		// Cells are made safe before tabwriter measures them.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", termSafe(s.SweepID, false), termSafe(s.Name, false), termSafe(s.Status, false), s.TrialsPlanned, s.CreatedAt.Local().Format("2006-01-02 15:04"), termSafe(states[s.SweepID], false))
	}
	return tw.Flush()
}

// sweepRow is one sweep of `sweeps --output json`. State is what its
// workflow does, for a sweep stored as running (empty otherwise).
type sweepRow struct {
	SweepID       string    `json:"sweep_id"`
	Name          string    `json:"name"`
	Status        string    `json:"status"`
	State         string    `json:"state,omitempty"`
	TrialsPlanned uint64    `json:"trials_planned"`
	CreatedAt     time.Time `json:"created_at"`
}
