package main

import (
	"context"
	"fmt"
	"io"

	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/results/report"
)

// storedSweep is what the store says of a sweep whose workflow ended with
// no progress to query (stopped with Ctrl-C, cancelled, failed): its
// stored status, trials and spend, and whether and how to resume it.
type storedSweep struct {
	Status        string `json:"status"`
	TrialsStored  uint64 `json:"trials_stored"`
	TrialsPlanned uint64 `json:"trials_planned"`
	Resumable     bool   `json:"resumable"`
	// ResumeCommand continues it: run --resume on the embedded stack,
	// sweep start --resume on a cluster.
	ResumeCommand string        `json:"resume_command,omitempty"`
	Spend         any           `json:"spend,omitempty"`
	spend         *record.Spend // for the text
}

// readStoredSweep reads a sweep's stored state from conn's store, read-only.
func readStoredSweep(ctx context.Context, conn *connection, sweepID string) (*storedSweep, error) {
	st, err := conn.openReadOnlyStore(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	sw, err := st.Sweep(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	n, err := st.CountTrials(ctx, sweepID)
	if err != nil {
		return nil, err
	}
	s := &storedSweep{Status: sw.Status, TrialsStored: n, TrialsPlanned: sw.TrialsPlanned, Resumable: sweepstatus.Resumable(sw.Status)}
	if sp, err := st.Spend(ctx, sweepID); err == nil {
		s.spend, s.Spend = &sp, report.SpendJSON(&sp)
	}
	if s.Resumable {
		s.ResumeCommand = "rebound run --resume " + sweepID
		if conn.temporalAddress != "" {
			s.ResumeCommand = "rebound sweep start --resume " + sweepID + " --wait"
		}
	}
	return s, nil
}

// write prints the stored state of a sweep whose workflow ended as ended.
func (s *storedSweep) write(w io.Writer, sweepID, ended string) {
	what := s.Status
	if s.Status == sweepstatus.Stopped {
		what = "stopped (interrupted, resumable)"
	} else if s.Resumable {
		what += " (resumable)"
	}
	fmt.Fprintf(w, "sweep %s: %s, %d of %d trials stored (its workflow ended %s)\n", sweepID, what, s.TrialsStored, s.TrialsPlanned, ended)
	if s.spend != nil {
		fmt.Fprintf(w, "%s\n", report.SpendLine(*s.spend))
	}
	if s.Resumable {
		fmt.Fprintf(w, "resume it with '%s': its stored trials and model answers are reused; 'rebound sweep cancel %s' throws it away\n", s.ResumeCommand, sweepID)
	}
}
