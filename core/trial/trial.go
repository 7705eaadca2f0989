// Package trial runs one trial: one arm on one scenario variant with one
// seed. It builds the world and the fault schedule, runs the agent through
// the harness dispatcher, and grades the evidence. A trial in a unit test and
// a trial in a 60,000-trial sweep execute this same function.
package trial

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"rebound/core/agent"
	"rebound/core/bounds"
	"rebound/core/grade"
	"rebound/core/harness"
	"rebound/core/scenario"
)

// Spec identifies one trial.
type Spec struct {
	SweepID  string
	Scenario *scenario.Scenario
	Variant  scenario.Variant
	Arm      scenario.Arm
	Seed     uint64
	// Recorded, for an upstream scenario, replays the trial's worlds from
	// a stored recording instead of the upstream (rebound replay).
	Recorded *WorldRecording
}

// ID derives the trial id from its coordinates: a retried activity writes
// the same id, so storage can deduplicate.
func ID(sweep, scenarioName, variant, arm string, seed uint64) string {
	h := sha256.New()
	for _, part := range []string{sweep, scenarioName, variant, arm, strconv.FormatUint(seed, 10)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ID returns the spec's derived trial id.
func (s Spec) ID() string {
	return ID(s.SweepID, s.Scenario.Name, s.Variant.Name, s.Arm.Name, s.Seed)
}

// Result is everything a trial produced.
type Result struct {
	TrialID      string `json:"trial_id"`
	SweepID      string `json:"sweep_id"`
	Scenario     string `json:"scenario"`
	ScenarioHash string `json:"scenario_hash"`
	Variant      string `json:"variant"`
	// Recoverable is realized per trial: whether an authorized path to the
	// goal existed under this trial's schedule (ProbePath);
	// DeclaredRecoverable is what the variant declares.
	Recoverable         bool `json:"recoverable"`
	DeclaredRecoverable bool `json:"declared_recoverable"`
	// GraderVersion is grade.Version at grading time.
	GraderVersion  int              `json:"grader_version"`
	Arm            string           `json:"arm"`
	Agent          string           `json:"agent"`
	Seed           uint64           `json:"seed"`
	CatalogVersion string           `json:"catalog_version"`
	Weight         float64          `json:"weight"`
	Schedule       harness.Schedule `json:"fault_schedule"`
	Ledger         harness.Ledger   `json:"ledger"`
	Outcome        agent.Outcome    `json:"outcome"`
	Verdict        grade.Verdict    `json:"verdict"`
	EndMs          int64            `json:"sim_elapsed_ms"`
	// World is the world's final state; ToolCostUSD what the tools cost
	// (the model's spend is Outcome.Cost, apart).
	World       map[string]any `json:"world"`
	ToolCostUSD float64        `json:"tool_cost_usd"`
	Wall        time.Duration  `json:"wall"`
	// PromptHash identifies the prompt revision of an LLM arm; Recording
	// holds its model responses (JSON) for offline replay.
	PromptHash string `json:"prompt_hash,omitempty"`
	Recording  string `json:"recording,omitempty"`
	// Upstream is what an upstream world answered (world: mcp), for
	// offline replay and regrade.
	Upstream *WorldRecording `json:"upstream,omitempty"`
}

// Recorder is implemented by agents whose answers can be recorded for
// replay (the LLM agent).
type Recorder interface {
	// RecordingJSON returns the last run's recording as JSON.
	RecordingJSON() (string, error)
	// PromptHash identifies the agent's prompt revision.
	PromptHash() string
}

// Run executes one trial with the given agent, graded by every check.
func Run(ctx context.Context, spec Spec, ag agent.Agent) (*Result, error) {
	return RunWith(ctx, spec, ag, grade.Checks)
}

// RunWith executes one trial graded by the given checks (calibration uses
// it to prove that a broken check is caught).
func RunWith(ctx context.Context, spec Spec, ag agent.Agent, checks []grade.Check) (*Result, error) {
	sc := spec.Scenario
	src := worldSource{sc: sc, rec: spec.Recorded}
	w, err := src.open(-1)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close() // e.g. the files world's temporary workspace, an upstream
	}
	catalog, err := src.catalogVersion()
	if err != nil {
		return nil, err
	}
	schedule, err := harness.NewSchedule(spec.Variant.Faults, spec.Seed)
	if err != nil {
		return nil, fmt.Errorf("scenario %s variant %s: %w", sc.Name, spec.Variant.Name, err)
	}
	d, err := harness.NewDispatcher(harness.Config{
		World: w, Offered: sc.Tools, Permissions: sc.Permissions, Schedule: schedule, Budget: sc.Budget,
	})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	start := time.Now()
	t := task(sc)
	t.TrialID = spec.ID() // external agents key their own records by it
	out, err := runAgent(ctx, d, ag, t)
	if err != nil {
		return nil, fmt.Errorf("agent %s on %s/%s seed %d: %w", ag.Name(), sc.Name, spec.Variant.Name, spec.Seed, err)
	}
	tools := map[string]harness.Tool{}
	for _, t := range d.Tools() {
		tools[t.Name] = t
	}
	path, pathExchanges, err := probePath(ctx, src, spec.Variant, spec.Seed)
	if err != nil {
		return nil, err
	}
	final := boundState(w.State())
	verdict := grade.GradeWith(checks, grade.Evidence{
		Scenario: sc, Variant: spec.Variant, Tools: tools, Ledger: d.Ledger(),
		World: final, Claim: out.Claim, EndMs: d.Clock().Now(), CostUSD: d.Cost(), Path: path,
	})
	res := &Result{
		TrialID: spec.ID(), SweepID: spec.SweepID, Scenario: sc.Name, ScenarioHash: sc.Hash,
		Variant: spec.Variant.Name, Recoverable: verdict.Recoverable, DeclaredRecoverable: spec.Variant.Recoverable,
		Arm: spec.Arm.Name, Agent: ag.Name(), GraderVersion: grade.Version,
		Seed: spec.Seed, CatalogVersion: catalog, Weight: sc.WeightOf(spec.Variant), Schedule: schedule,
		Ledger: *d.Ledger(), Outcome: out, Verdict: verdict, EndMs: d.Clock().Now(), Wall: time.Since(start),
		World: final, ToolCostUSD: d.Cost(),
	}
	if x, ok := w.(exchanger); ok {
		res.Upstream = &WorldRecording{CatalogVersion: catalog, Tools: w.Tools(), Trial: x.Exchanges(), Paths: pathExchanges}
	}
	if rec, ok := ag.(Recorder); ok {
		res.PromptHash = rec.PromptHash()
		if res.Recording, err = rec.RecordingJSON(); err != nil {
			return nil, fmt.Errorf("recording of %s: %w", ag.Name(), err)
		}
	}
	return res, nil
}

// boundState keeps a world's state snapshot within bounds.WorldState (as
// JSON): a larger one (an agent that filled a world) is graded and stored
// with its largest values shrunk (core/bounds). A state within the bound is
// returned as it is.
func boundState(st map[string]any) map[string]any {
	if bounds.SizeOf(st) <= bounds.WorldState {
		return st
	}
	b, err := bounds.Encode(st)
	if err != nil {
		return st
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return st
	}
	if out, ok := bounds.Shrink(v, bounds.WorldState).(map[string]any); ok {
		return out
	}
	return st
}

// runAgent runs the agent under the harness's hard cap: when the dispatcher
// halts the trial (the agent kept calling after its budget was spent), the
// agent's context is cancelled and, if it still does not stop, the
// dispatcher's Halt panic unwinds it. Either way the trial ends without a
// claim and is graded on its bounded ledger.
func runAgent(ctx context.Context, d *harness.Dispatcher, ag agent.Agent, task agent.Task) (out agent.Outcome, err error) {
	actx, stop := d.Bind(ctx)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			h, ok := r.(harness.Halt)
			if !ok {
				panic(r)
			}
			out, err = agent.Outcome{Answer: h.Error()}, nil
		}
	}()
	out, err = ag.Run(actx, env{d}, task)
	if err != nil && d.IsHalted() && ctx.Err() == nil {
		return agent.Outcome{Answer: harness.ErrHalted.Error()}, nil
	}
	return out, err
}

// env adapts the dispatcher to the agent's view of the world.
type env struct{ d *harness.Dispatcher }

func (e env) Tools() []harness.Tool { return e.d.Tools() }
func (e env) Call(_ context.Context, tool string, args map[string]any) harness.Result {
	return e.d.Call(tool, args)
}
func (e env) Sleep(ms int64)        { e.d.Clock().Advance(ms) }
func (e env) Now() int64            { return e.d.Clock().Now() }
func (e env) Replan(summary string) { e.d.Replan(summary) }

// UpdatePlan implements harness.PlanUpdater: a refused plan update (over
// bounds.PlanSummary) is answered to the agent.
func (e env) UpdatePlan(summary string) harness.Result { return e.d.UpdatePlan(summary) }

// Status implements harness.StatusReporter: what is left of the budgets.
func (e env) Status() harness.Status { return e.d.Status() }
