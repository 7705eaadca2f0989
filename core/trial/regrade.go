package trial

import (
	"context"
	"encoding/json"
	"fmt"

	"rebound/core/grade"
	"rebound/core/harness"
	"rebound/core/scenario"
)

// Evidence is what the grader reads from a finished trial, kept (redacted)
// with the trial so it can be re-scored by a later grader without running
// the agent again or paying for a model.
type Evidence struct {
	Ledger      harness.Ledger `json:"ledger"`
	World       map[string]any `json:"world"`
	Claim       string         `json:"claim"`
	EndMs       int64          `json:"end_ms"`
	ToolCostUSD float64        `json:"tool_cost_usd"`
	// Upstream is an upstream world's recording: regrade and replay
	// rebuild its worlds offline from it.
	Upstream *WorldRecording `json:"upstream,omitempty"`
}

// Evidence returns the grading evidence of a result.
func (r *Result) Evidence() Evidence {
	return Evidence{Ledger: r.Ledger, World: r.World, Claim: r.Outcome.Claim, EndMs: r.EndMs, ToolCostUSD: r.ToolCostUSD, Upstream: r.Upstream}
}

// Regrade re-scores stored evidence with the current grader: the realized
// path is probed again (the reference policy on the trial's schedule), the
// checks run over the stored ledger, world and claim. No agent runs.
func Regrade(ctx context.Context, sc *scenario.Scenario, v scenario.Variant, seed uint64, raw string) (grade.Verdict, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		return grade.Verdict{}, fmt.Errorf("stored evidence of %s/%s seed %d: %w", sc.Name, v.Name, seed, err)
	}
	src := worldSource{sc: sc, rec: ev.Upstream}
	tools, err := src.tools()
	if err != nil {
		return grade.Verdict{}, err
	}
	offered := map[string]bool{}
	for _, t := range sc.Tools {
		offered[t] = true
	}
	catalog := map[string]harness.Tool{}
	for _, t := range tools {
		if offered[t.Name] || len(sc.Tools) == 0 {
			catalog[t.Name] = t
		}
	}
	path, _, err := probePath(ctx, src, v, seed)
	if err != nil {
		return grade.Verdict{}, err
	}
	return grade.Grade(grade.Evidence{
		Scenario: sc, Variant: v, Tools: catalog, Ledger: &ev.Ledger, World: ev.World,
		Claim: ev.Claim, EndMs: ev.EndMs, CostUSD: ev.ToolCostUSD, Path: path,
	}), nil
}
