// Package replay re-runs a stored trial offline: the same scenario variant,
// the same seed and fault schedule, and for an LLM arm the recorded model
// responses instead of the network. A deterministic harness plus recorded
// answers must reproduce the stored verdicts; when they do not, the report
// says where the two runs part (for an LLM arm: the first step where the
// conversation diverges).
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	armpkg "rebound/core/agent/arm"
	"rebound/core/agent/llm"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/results/record"
)

// Result compares a stored trial with its replay.
type Result struct {
	TrialID  string        `json:"trial_id"`
	Offline  bool          `json:"offline"` // replayed from a recording (an LLM arm's model, an upstream's answers)
	Stored   grade.Verdict `json:"stored"`
	Replayed grade.Verdict `json:"replayed"`
	// Diffs lists every outcome and check whose verdict changed; empty
	// means the replay reproduced the trial.
	Diffs []string `json:"diffs"`
	// Divergence is set when the agent's conversation departed from the
	// recording (the replay could not finish).
	Divergence string `json:"divergence,omitempty"`
}

// Reproduced reports whether the replay matched the stored trial.
func (r Result) Reproduced() bool { return len(r.Diffs) == 0 && r.Divergence == "" }

// ErrNotReplayable is returned for trials that cannot be replayed (lost to
// attrition: there is nothing to reproduce).
var ErrNotReplayable = errors.New("trial cannot be replayed")

// Option configures a replay.
type Option func(*options)

type options struct{ redactionKey []byte }

// WithRedactionKey opens the stored plan's sealed original with this key
// (default: $REBOUND_REDACTION_KEY).
func WithRedactionKey(key []byte) Option { return func(o *options) { o.redactionKey = key } }

// Trial replays one stored trial. The stored plan is sealed with the
// deployment's redaction key: replay needs the same key.
func Trial(ctx context.Context, src Source, trialID string, replayOpts ...Option) (Result, error) {
	o := options{redactionKey: []byte(os.Getenv(redact.EnvKey))}
	for _, opt := range replayOpts {
		opt(&o)
	}
	t, _, err := src.Trial(ctx, trialID)
	if errors.Is(err, record.ErrNotFound) {
		return Result{}, fmt.Errorf("no trial %q in storage (find one with 'rebound trials SWEEP_ID'): %w", trialID, err)
	}
	if err != nil {
		return Result{}, err
	}
	res := Result{TrialID: trialID}
	if t.Attrition {
		return res, fmt.Errorf("%w: trial %s was lost to provider attrition", ErrNotReplayable, trialID)
	}
	if err := json.Unmarshal([]byte(t.Verdicts), &res.Stored); err != nil {
		return res, fmt.Errorf("trial %s: stored verdicts are unreadable: %w", trialID, err)
	}
	sw, err := src.Sweep(ctx, t.SweepID)
	if err != nil {
		return res, err
	}
	plan, err := scenario.OpenStoredPlan(sw.PlanJSON, o.redactionKey)
	if err != nil {
		return res, fmt.Errorf("sweep %s: stored plan is unreadable: %w", t.SweepID, err)
	}
	sc, ok := plan.Scenario(t.Scenario)
	if !ok {
		return res, fmt.Errorf("sweep %s has no scenario %q", t.SweepID, t.Scenario)
	}
	variant, ok := sc.Variant(t.Variant)
	if !ok {
		return res, fmt.Errorf("scenario %s has no variant %q", t.Scenario, t.Variant)
	}
	var arm scenario.Arm
	for _, a := range plan.Arms {
		if a.Name == t.Arm {
			arm = a
		}
	}
	if arm.Name == "" {
		return res, fmt.Errorf("sweep %s has no arm %q", t.SweepID, t.Arm)
	}
	var opts []llm.Option
	if t.Recording != "" {
		var rec llm.Recording
		if err := json.Unmarshal([]byte(t.Recording), &rec); err != nil {
			return res, fmt.Errorf("trial %s: stored recording is unreadable: %w", trialID, err)
		}
		opts = append(opts, llm.WithReplay(&rec))
		res.Offline = true
	} else if arm.Agent == scenario.AgentLLM {
		return res, fmt.Errorf("%w: trial %s of an LLM arm has no recording", ErrNotReplayable, trialID)
	} else if arm.Agent == scenario.AgentCommand {
		// Re-running an external process is not an offline replay: its
		// model answers were never recorded by rebound.
		return res, fmt.Errorf("%w: trial %s of a command arm ran an external process; rebound keeps no recording of its model", ErrNotReplayable, trialID)
	}
	spec := trial.Spec{SweepID: t.SweepID, Scenario: sc, Variant: variant, Arm: arm, Seed: t.Seed}
	if sc.World == scenario.UpstreamWorld {
		// The upstream is not run again: its recorded answers are.
		var ev trial.Evidence
		if err := json.Unmarshal([]byte(t.Evidence), &ev); err != nil || ev.Upstream == nil {
			return res, fmt.Errorf("%w: trial %s of an upstream scenario has no stored recording of its upstream", ErrNotReplayable, trialID)
		}
		spec.Recorded = ev.Upstream
		res.Offline = true
	}
	ag, err := armpkg.Resolve(arm, opts...)
	if err != nil {
		return res, err
	}
	out, err := trial.Run(ctx, spec, ag)
	if errors.Is(err, llm.ErrDivergence) {
		res.Divergence = err.Error()
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Replayed = out.Verdict
	res.Diffs = Diff(res.Stored, res.Replayed)
	if res.Diffs == nil {
		res.Diffs = []string{}
	}
	return res, nil
}

// Diff lists the outcomes and checks whose verdicts differ.
func Diff(a, b grade.Verdict) []string {
	var out []string
	for _, m := range outcome.Graded {
		if x, y := mark(a.Metric(m)), mark(b.Metric(m)); x != y {
			out = append(out, fmt.Sprintf("%s: stored %s, replayed %s", m, x, y))
		}
	}
	status := func(v grade.Verdict) map[string]grade.Status {
		m := map[string]grade.Status{}
		for _, c := range v.Checks {
			m[c.Name] = c.Status
		}
		return m
	}
	sa, sb := status(a), status(b)
	names := make([]string, 0, len(sa))
	for n := range sa {
		names = append(names, n)
	}
	for n := range sb {
		if _, ok := sa[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if sa[n] != sb[n] {
			out = append(out, fmt.Sprintf("check %s: stored %s, replayed %s", n, orNone(sa[n]), orNone(sb[n])))
		}
	}
	return out
}

func orNone(s grade.Status) string {
	if s == "" {
		return "absent"
	}
	return string(s)
}

func mark(b *bool) string {
	switch {
	case b == nil:
		return "not tested"
	case *b:
		return "true"
	}
	return "false"
}
