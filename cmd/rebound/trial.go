package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"rebound/agent"
	"rebound/artifact"
	"rebound/grade"
	"rebound/scenario"
	"rebound/storage"
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

func trialCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		fmt.Fprintf(stderr, "Usage: rebound trial show TRIAL_ID\n\n%s\n", trialAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("trial needs a subcommand: show")
	}
	fs := newFlags("trial show", "rebound trial show [flags] TRIAL_ID", trialAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	if err := parseOneArg(fs, args[1:], output, "trial show takes exactly one TRIAL_ID"); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	t, calls, err := store.Trial(ctx, fs.Arg(0))
	if errors.Is(err, storage.ErrNotFound) {
		return usagef("no trial %q in storage", fs.Arg(0))
	}
	if err != nil {
		return err
	}
	a, err := storedArtifact(ctx, store, t, calls)
	if err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	}
	return a.WriteText(stdout)
}

// storedArtifact rebuilds a trial's failure artifact from its stored rows
// and the sweep's resolved plan (for the goal and the allowed tools).
func storedArtifact(ctx context.Context, store storage.Store, t storage.Trial, calls []storage.ToolCall) (artifact.Artifact, error) {
	a := artifact.Artifact{
		TrialID: t.TrialID, Scenario: t.Scenario, Variant: t.Variant, Arm: t.Arm, Seed: t.Seed,
		FaultSchedule: json.RawMessage(t.FaultSchedule), Claim: t.Claim,
		Reproduce: map[string]string{
			"sweep": t.SweepID, "scenario_hash": t.ScenarioHash, "catalog_version": t.CatalogVersion, "agent": t.Agent,
		},
	}
	if t.PromptHash != "" {
		a.Reproduce["prompt_hash"] = t.PromptHash
	}
	if t.Process != "" {
		var p agent.Process
		if err := json.Unmarshal([]byte(t.Process), &p); err != nil {
			return a, fmt.Errorf("trial %s: stored process record is unreadable: %w", t.TrialID, err)
		}
		a.Process = &p
	}
	if sw, err := store.Sweep(ctx, t.SweepID); err == nil {
		var plan scenario.Resolved
		if json.Unmarshal([]byte(sw.PlanJSON), &plan) == nil {
			if sc, ok := plan.Scenario(t.Scenario); ok {
				a.Goal, a.AllowedTools = sc.Goal, sc.Tools
			}
		}
	}
	for _, c := range calls {
		a.Calls = append(a.Calls, artifact.Call{Index: int(c.CallIndex), AtMs: int64(c.AtMS), Tool: c.Tool,
			Args: json.RawMessage(c.Args), Fault: c.FaultClass, OK: c.OK, Code: c.Code, Retryable: c.Retryable, Committed: c.Committed})
	}
	var v grade.Verdict
	if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
		return a, fmt.Errorf("trial %s: stored verdicts are unreadable: %w", t.TrialID, err)
	}
	return artifact.Build(a, v), nil
}

const trialsAbout = `Lists the trials of a stored sweep with their outcomes, so you can pick one
for 'rebound trial show'. Filter with --arm, --scenario and --failing (only
trials with an unsafe action, a duplicate, a fabricated claim, or a failed
recovery or honest block).

Example:
  rebound trials --arm naive-retrier --failing quickstart-20261129-121500-3fa2c1`

func trialsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trials", "rebound trials [flags] SWEEP_ID", trialsAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	arm := fs.String("arm", "", "only this arm")
	scen := fs.String("scenario", "", "only this scenario")
	failing := fs.Bool("failing", false, "only trials with a bad outcome")
	output := outputFlag(fs)
	if err := parseOneArg(fs, args, output, "trials takes exactly one SWEEP_ID (list them with 'rebound sweeps')"); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	trials, err := store.Trials(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	type row struct {
		TrialID  string   `json:"trial_id"`
		Scenario string   `json:"scenario"`
		Variant  string   `json:"variant"`
		Arm      string   `json:"arm"`
		Seed     uint64   `json:"seed"`
		Bad      []string `json:"bad_outcomes"`
	}
	var rows []row
	for _, t := range trials {
		if (*arm != "" && t.Arm != *arm) || (*scen != "" && t.Scenario != *scen) {
			continue
		}
		bad := badOutcomes(t)
		if *failing && len(bad) == 0 {
			continue
		}
		rows = append(rows, row{t.TrialID, t.Scenario, t.Variant, t.Arm, t.Seed, bad})
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRIAL\tSCENARIO\tVARIANT\tARM\tSEED\tBAD OUTCOMES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", termSafe(r.TrialID, false), termSafe(r.Scenario, false), termSafe(r.Variant, false), termSafe(r.Arm, false), r.Seed, strings.Join(r.Bad, ", "))
	}
	return tw.Flush()
}

// badOutcomes names what went wrong in a trial, in the metric vocabulary.
func badOutcomes(t storage.Trial) []string {
	var bad []string
	is := func(b *bool, want bool) bool { return b != nil && *b == want }
	if is(t.Recovered, false) {
		bad = append(bad, "not recovered")
	}
	if is(t.HonestBlock, false) {
		bad = append(bad, "no honest block")
	}
	if is(t.UnsafeAction, true) {
		bad = append(bad, "unsafe action")
	}
	if is(t.DuplicateSideEffect, true) {
		bad = append(bad, "duplicate side effect")
	}
	if is(t.FabricatedClaim, true) {
		bad = append(bad, "fabricated claim")
	}
	if t.Attrition {
		bad = append(bad, "attrition")
	}
	return bad
}
