package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"rebound/regrade"
	"rebound/storage"
)

const regradeAbout = `Re-scores every stored trial of a sweep with the current grader. Each trial
keeps the (redacted) evidence its grader read: the ledger, the world's final
state, the claim. Regrading runs today's checks over it, and probes again
whether an authorized path existed under the trial's schedule; no agent runs
and no model is paid. The result is a new sweep (SWEEP_ID-gN by default, N the
grader version) in which every arm appears twice: under its own name with the
new verdicts, and as ARM@stored with the verdicts it was stored with, so the
two graders pair on the same cases. Running it again rewrites the same rows.

The redaction key must be the one the sweep was stored with
(REBOUND_REDACTION_KEY, or the embedded store's redaction.key in --data-dir):
it opens the sealed plan, and idempotency keys are compared through their
keyed hashes.

Examples:
  rebound regrade library-20261130-101500-3fa2c1
  rebound compare --baseline careful@stored --candidate careful library-20261130-101500-3fa2c1-g2`

func regradeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("regrade", "rebound regrade [flags] SWEEP_ID", regradeAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	into := fs.String("into", "", "id of the regraded sweep (default SWEEP_ID-gN)")
	output := outputFlag(fs)
	if err := parseOneArg(fs, args, output, "regrade takes exactly one SWEEP_ID (list them with 'rebound sweeps')"); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	acts, err := newActivities(store, replayKey(conn))
	if err != nil {
		return err
	}
	sum, err := regrade.Sweep(ctx, store, fs.Arg(0), *into, acts)
	if errors.Is(err, storage.ErrNotFound) {
		return usagef("no sweep %q in storage", fs.Arg(0))
	}
	if err != nil {
		return err
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprint(stdout, sum.Report())
	return nil
}
