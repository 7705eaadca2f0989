package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"rebound/replay"
	"rebound/storage"
)

const replayAbout = `Re-runs a stored trial offline: the same scenario variant, seed and fault
schedule, and for an LLM arm the recorded model responses instead of the
network (no API key needed). It exits 0 when the replay reproduces the stored
verdicts, and 1 with the differences, or with the first step where the
conversation departed from the recording.

Example:
  rebound replay 3f9a0c1d2e4b5a6978c1d2e3`

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", "rebound replay [flags] TRIAL_ID", replayAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	if err := parseOneArg(fs, args, output, "replay takes exactly one TRIAL_ID (find one with 'rebound trials SWEEP_ID')"); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	r, err := replay.Trial(ctx, store, fs.Arg(0), replay.WithRedactionKey(replayKey(conn)))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return usagef("no trial %q in storage", fs.Arg(0))
	case errors.Is(err, replay.ErrNotReplayable):
		return usageError{err}
	case err != nil:
		return err
	}
	if *output == "json" {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
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
}

// replayKey is the key that sealed the stored plan: $REBOUND_REDACTION_KEY,
// or the embedded stack's key in the data dir.
func replayKey(conn connection) []byte {
	if k := os.Getenv(redactionKeyEnv); k != "" || conn.clickhouseDSN != "" {
		return []byte(k)
	}
	b, _ := os.ReadFile(filepath.Join(conn.dataDir, "redaction.key"))
	return []byte(strings.TrimSpace(string(b)))
}
