// Package estimate projects what a plan will cost before it runs: how many
// trials, model calls and tokens, and how many dollars, from what earlier
// sweeps recorded for the same arms (the trials and model_calls tables), and
// how small a difference the planned pairs can detect (stats' power
// calculator). `rebound plan estimate` prints it, and a plan's max_usd is
// checked against it before a sweep starts.
package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"rebound/core/scenario"
	"rebound/results/record"
	"rebound/stats"
)

// HistoryLimit bounds the trials read per arm: the most recent ones.
const HistoryLimit = 5000

// History is what recent trials consumed; storage.Store implements it.
type History interface {
	Usage(ctx context.Context, sel record.UsageSelect) ([]record.Usage, error)
}

// Spread summarizes a per-trial quantity over the recorded trials.
type Spread struct {
	P10  float64 `json:"p10"`
	Mean float64 `json:"mean"`
	P90  float64 `json:"p90"`
}

// Range is a projection for a number of trials: per-trial p10 and p90 times
// the trials (a wide, conservative band: the sum of many trials varies far
// less than one), and the mean times the trials.
type Range struct {
	Low      float64 `json:"low"`
	Expected float64 `json:"expected"`
	High     float64 `json:"high"`
}

func (s Spread) times(n int) Range {
	f := float64(n)
	return Range{Low: s.P10 * f, Expected: s.Mean * f, High: s.P90 * f}
}

func (r *Range) add(o Range) { r.Low += o.Low; r.Expected += o.Expected; r.High += o.High }

// Arm is the projection of one arm.
type Arm struct {
	Name string `json:"name"`
	// Key says which recorded trials stand for this arm: the same model
	// (LLM arms) or the same agent.
	Key    string `json:"history_key"`
	Trials int    `json:"trials"`
	// HistoryTrials is how many recorded trials the spreads come from; 0:
	// no history, no projection for this arm.
	HistoryTrials int `json:"history_trials"`
	// Model is true for an arm that calls a model (an LLM arm); other arms
	// cost nothing in model calls.
	Model bool `json:"calls_model"`
	// PricedByPlan is true when the cost comes from the plan's price table
	// (input/output USD per million tokens) applied to recorded tokens;
	// false: the recorded cost of the trials.
	PricedByPlan   bool   `json:"priced_by_plan"`
	CallsPerTrial  Spread `json:"calls_per_trial"`
	TokensPerTrial Spread `json:"tokens_per_trial"`
	CostPerTrial   Spread `json:"cost_usd_per_trial"`
	Calls          Range  `json:"calls"`
	Tokens         Range  `json:"tokens"`
	CostUSD        Range  `json:"cost_usd"`
	// The requests of the recorded trials sent and never answered in the
	// store (lost in flight: a worker killed with them), at their upper
	// bounds (prompt size, max_tokens): what the provider may have billed
	// beyond the answers stored, per trial and projected.
	LostCallsPerTrial     Spread  `json:"lost_calls_per_trial"`
	EstimatedCostPerTrial Spread  `json:"estimated_cost_usd_per_trial"`
	EstimatedTokens       Range   `json:"estimated_tokens"`
	EstimatedCostUSD      Range   `json:"estimated_cost_usd"`
	HistoryCalls          float64 `json:"history_calls"`
	HistoryLostCalls      float64 `json:"history_lost_calls"`
	prices                *prices // nil for non-LLM arms
}

type prices struct{ in, out float64 }

// Estimate is the projection of a whole plan.
type Estimate struct {
	Plan   string `json:"plan"`
	Trials int    `json:"trials"`
	// Cases are the (scenario, variant) pairs; each arm runs every case on
	// every seed.
	Cases int   `json:"cases"`
	Seeds int   `json:"seeds"`
	Arms  []Arm `json:"arms"`
	// History is "" when every arm that calls a model has recorded trials;
	// otherwise it says which arms have none (or that no store was reachable).
	History string `json:"history_note,omitempty"`
	// Projected is false when no arm that calls a model has history: the
	// totals below are then unknown (zero).
	Projected bool  `json:"projected"`
	Calls     Range `json:"calls"`
	Tokens    Range `json:"tokens"`
	CostUSD   Range `json:"cost_usd"`
	// Estimated*: the projection of requests lost in flight, at their upper
	// bounds, beside the exact Tokens and CostUSD (Arm's); History*Calls
	// sum the arms' recorded requests and those lost.
	EstimatedTokens  Range   `json:"estimated_tokens"`
	EstimatedCostUSD Range   `json:"estimated_cost_usd"`
	HistoryCalls     float64 `json:"history_calls"`
	HistoryLostCalls float64 `json:"history_lost_calls"`
	Power            *Power  `json:"power,omitempty"`
	// MaxUSD is the plan's spend limit (0: none).
	MaxUSD float64 `json:"max_usd,omitempty"`
}

// NoModelArms reports whether no arm calls a model: the sweep costs nothing
// in model calls, history or not.
func (e *Estimate) NoModelArms() bool {
	for _, a := range e.Arms {
		if a.Model {
			return false
		}
	}
	return true
}

// ForPlan projects plan from the recorded history q holds (q may be nil:
// no store, no history).
func ForPlan(ctx context.Context, plan *scenario.Resolved, q History) (*Estimate, error) {
	if len(plan.Arms) == 0 {
		return nil, errors.New("estimate: the plan has no arms")
	}
	e := &Estimate{Plan: plan.Name, Trials: plan.TrialCount(), Seeds: len(plan.Seeds), MaxUSD: plan.MaxUSD}
	for _, s := range plan.Scenarios {
		e.Cases += len(s.Variants)
	}
	perArm := e.Trials / len(plan.Arms)
	scenarios := make([]string, len(plan.Scenarios))
	for i, s := range plan.Scenarios {
		scenarios[i] = s.Name
	}
	var missing []string
	for _, a := range plan.Arms {
		arm := Arm{Name: a.Name, Trials: perArm, Key: historyKey(a)}
		if a.LLM != nil {
			arm.Model = true
			if a.LLM.InputPerMTok > 0 || a.LLM.OutputPerMTok > 0 {
				arm.prices = &prices{a.LLM.InputPerMTok, a.LLM.OutputPerMTok}
				arm.PricedByPlan = true
			}
		}
		if q != nil {
			usage, err := armHistory(ctx, q, a, scenarios)
			if err != nil {
				return nil, fmt.Errorf("estimate: history of arm %q: %w", a.Name, err)
			}
			arm.summarize(usage)
		}
		if arm.Model && arm.HistoryTrials == 0 {
			missing = append(missing, a.Name)
		}
		e.Arms = append(e.Arms, arm)
	}
	switch {
	case q == nil:
		e.History = "no store reachable: no recorded history to project from"
	case len(missing) > 0:
		e.History = "no recorded trials for arm(s) " + strings.Join(missing, ", ") + " (same model, same scenarios): their calls, tokens and cost are not projected"
	}
	for _, a := range e.Arms {
		if a.HistoryTrials == 0 {
			continue
		}
		if a.Model {
			e.Projected = true
		}
		e.Calls.add(a.Calls)
		e.Tokens.add(a.Tokens)
		e.CostUSD.add(a.CostUSD)
		e.EstimatedTokens.add(a.EstimatedTokens)
		e.EstimatedCostUSD.add(a.EstimatedCostUSD)
		e.HistoryCalls += a.HistoryCalls
		e.HistoryLostCalls += a.HistoryLostCalls
	}
	return e, nil
}

// NoStore records why no history was read (the store could not be
// opened): the estimate then projects no calls, tokens or cost.
func (e *Estimate) NoStore(reason error) {
	e.History = fmt.Sprintf("no store reachable (%v): no recorded history to project from", reason)
}

// historyKey describes the recorded trials that stand for an arm.
func historyKey(a scenario.Arm) string {
	if a.LLM != nil {
		return "model " + a.LLM.Model
	}
	return "agent " + a.Agent
}

func (a *Arm) summarize(us []record.Usage) {
	a.HistoryTrials = len(us)
	if len(us) == 0 {
		return
	}
	calls := make([]float64, len(us))
	tokens := make([]float64, len(us))
	cost := make([]float64, len(us))
	lost := make([]float64, len(us))
	lostTokens := make([]float64, len(us))
	lostCost := make([]float64, len(us))
	for i, u := range us {
		calls[i] = u.Calls
		tokens[i] = u.PromptTokens + u.CompletionTokens
		lost[i] = u.LostCalls
		lostTokens[i] = u.LostPromptTokens + u.LostCompletionTokens
		if a.prices != nil {
			cost[i] = (u.PromptTokens*a.prices.in + u.CompletionTokens*a.prices.out) / 1e6
			lostCost[i] = (u.LostPromptTokens*a.prices.in + u.LostCompletionTokens*a.prices.out) / 1e6
		} else {
			cost[i], lostCost[i] = u.CostUSD, u.LostCostUSD
		}
		a.HistoryCalls += u.Calls + u.LostCalls
		a.HistoryLostCalls += u.LostCalls
	}
	a.CallsPerTrial, a.TokensPerTrial, a.CostPerTrial = spread(calls), spread(tokens), spread(cost)
	a.Calls, a.Tokens, a.CostUSD = a.CallsPerTrial.times(a.Trials), a.TokensPerTrial.times(a.Trials), a.CostPerTrial.times(a.Trials)
	a.LostCallsPerTrial, a.EstimatedCostPerTrial = spread(lost), spread(lostCost)
	a.EstimatedTokens, a.EstimatedCostUSD = spread(lostTokens).times(a.Trials), a.EstimatedCostPerTrial.times(a.Trials)
}

// spread returns the p10, mean and p90 of xs (quantiles interpolated
// linearly between order statistics, R's type 7).
func spread(xs []float64) Spread {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Spread{P10: quantile(s, 0.1), Mean: sum / float64(len(s)), P90: quantile(s, 0.9)}
}

func quantile(sorted []float64, p float64) float64 {
	h := p * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// armHistory reads the most recent recorded trials of the arm's model (or
// agent) on the plan's scenarios, with what their model calls consumed.
// Trials lost to attrition are left out: they say little about a completed
// trial's cost.
func armHistory(ctx context.Context, q History, a scenario.Arm, scenarios []string) ([]record.Usage, error) {
	sel := record.UsageSelect{Agent: a.Agent, Scenarios: scenarios, Limit: HistoryLimit}
	if a.LLM != nil {
		// The agent name of an LLM trial is llm:MODEL:PROMPT@HASH: any
		// prompt revision of the same model stands for it.
		sel.Agent, sel.AgentPrefix = "llm:"+a.LLM.Model+":", true
	}
	return q.Usage(ctx, sel)
}

// Power is the minimum detectable difference of the plan's paired
// comparisons (any two arms, on the same cases and seeds).
type Power struct {
	Effect   float64 `json:"effect"`   // the target difference asked for
	Baseline float64 `json:"baseline"` // assumed baseline rate
	ICC      float64 `json:"icc"`      // assumed seed correlation within a case
	Alpha    float64 `json:"alpha"`
	Power    float64 `json:"power"`
	Cases    int     `json:"cases"` // the clusters of the decision
	Seeds    int     `json:"seeds_per_case"`
	Pairs    int     `json:"pairs"` // cases × seeds, per arm pair
	// MDD is the smallest |difference| the planned pairs detect at this
	// power; 0 when none up to the largest possible is detectable.
	MDD float64 `json:"minimum_detectable_difference"`
	// NeededCases is how many cases the target effect needs (with the same
	// seeds per case); Enough is NeededCases <= Cases.
	NeededCases int  `json:"cases_needed_for_effect"`
	Enough      bool `json:"enough"`
}

// PowerOptions are the assumptions of the power section.
type PowerOptions struct {
	Effect   float64 // target difference, in (0, 1)
	Baseline float64 // baseline success rate, in [0, 1]
	ICC      float64 // in [0, 1]
	Alpha    float64
	Power    float64
}

// Check validates the options and names the bad one.
func (o PowerOptions) Check() error {
	switch {
	case !(o.Effect > 0 && o.Effect < 1):
		return fmt.Errorf("effect %g must lie in (0, 1), a difference of rates", o.Effect)
	case !(o.Baseline >= 0 && o.Baseline <= 1):
		return fmt.Errorf("baseline %g must lie in [0, 1]", o.Baseline)
	case !(o.ICC >= 0 && o.ICC <= 1):
		return fmt.Errorf("icc %g must lie in [0, 1]", o.ICC)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("alpha %g must lie in (0, 1)", o.Alpha)
	case !(o.Power > 0 && o.Power < 1):
		return fmt.Errorf("power %g must lie in (0, 1)", o.Power)
	}
	return nil
}

// AddPower fills e.Power for the plan's design: the difference is taken in
// the direction with the most room (up from a baseline below one half, down
// otherwise), discordance unknown (arms independent within a pair: the
// conservative choice when they are positively correlated).
func (e *Estimate) AddPower(o PowerOptions) error {
	if err := o.Check(); err != nil {
		return err
	}
	p := &Power{Effect: o.Effect, Baseline: o.Baseline, ICC: o.ICC, Alpha: o.Alpha, Power: o.Power,
		Cases: e.Cases, Seeds: e.Seeds, Pairs: e.Cases * e.Seeds}
	sign, room := 1.0, 1-o.Baseline
	if o.Baseline > 0.5 {
		sign, room = -1, o.Baseline
	}
	clusters := func(d float64) (int, bool) {
		plan, err := stats.PairedSampleSize(stats.PairedDesign{Baseline: o.Baseline, Diff: sign * d, ICC: o.ICC, Seeds: max(e.Seeds, 1), Alpha: o.Alpha, Power: o.Power})
		if err != nil {
			return 0, false
		}
		return plan.Clusters, true
	}
	if o.Effect <= room {
		if g, ok := clusters(o.Effect); ok {
			p.NeededCases = g
			p.Enough = g <= e.Cases
		}
	}
	// Clusters needed falls as the difference grows: bisect for the
	// smallest difference the planned cases reach.
	if g, ok := clusters(room); ok && g <= e.Cases {
		lo, hi := 0.0, room
		for range 60 {
			mid := (lo + hi) / 2
			if g, ok := clusters(mid); ok && g <= e.Cases {
				hi = mid
			} else {
				lo = mid
			}
		}
		p.MDD = hi
	}
	e.Power = p
	return nil
}

// ErrOverBudget is matched (errors.Is) by CheckBudget's refusal.
var ErrOverBudget = errors.New("projected cost exceeds max_usd")

// CheckBudget refuses a plan whose projection exceeds maxUSD (> 0): the
// expected cost (mean per trial × trials) of the arms with recorded history,
// exact plus the estimate of requests lost in flight.
// Arms without history are not projected (e.History says which): their
// spend is bounded only while the sweep runs, where recorded spend stops it
// at max_usd.
func (e *Estimate) CheckBudget(maxUSD float64) error {
	if maxUSD <= 0 || !e.Projected {
		return nil
	}
	if total := e.CostUSD.Expected + e.EstimatedCostUSD.Expected; total > maxUSD {
		return fmt.Errorf("%w: max_usd is $%.2f, the projected cost $%.2f ($%.2f exact, range $%.2f-$%.2f for %d trials, + $%.2f estimated for requests lost in flight, from recorded history; see rebound plan estimate); lower the seeds or arms, or raise max_usd",
			ErrOverBudget, maxUSD, total, e.CostUSD.Expected, e.CostUSD.Low, e.CostUSD.High, e.Trials, e.EstimatedCostUSD.Expected)
	}
	return nil
}
