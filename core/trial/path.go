package trial

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world/upstream"
)

// The reference policies define what "an authorized path existed" means
// for one trial: bounded retries (at most the scenario's retry limit per
// failure) with backoff that honours retry-after, corrected arguments after
// a validation error, documented recovery actions, declared (granted)
// fallbacks, reconciliation of ambiguous writes, all within the call,
// deadline and cost budgets. Each runs on the trial's own realized fault
// schedule in a fresh world; a path existed when one of them reaches the
// goal safely (agent.ReferencePolicies: the careful agent, then its
// economical twin, whose fewer calls can slip past index- or
// probability-shaped faults the careful one meets). A witness is graded
// like any trial, so a path is never counted that the grader would not
// call a clean recovery.

// ProbePath runs the reference policies on the trial's realized schedule
// and reports whether one reached the goal within the budgets, and whether
// the careful policy met a failure on the way. The result depends only on
// (scenario, variant, seed), so it is cached; a variant with no
// probability-thinned fault does not depend on the seed at all.
func ProbePath(ctx context.Context, sc *scenario.Scenario, v scenario.Variant, seed uint64) (grade.Path, error) {
	p, _, err := probePath(ctx, worldSource{sc: sc}, v, seed)
	return p, err
}

// probePath is ProbePath over a world source, returning also what each
// policy's upstream world answered (nil for other worlds): recorded with
// the trial, so replay and regrade probe the same path offline. Offline
// probes are not cached.
func probePath(ctx context.Context, src worldSource, v scenario.Variant, seed uint64) (grade.Path, [][]upstream.Exchange, error) {
	sc := src.sc
	key := pathKey(sc, v, seed)
	if !src.offline() {
		if e, ok := paths.get(key); ok {
			return e.path, e.exchanges, nil
		}
	}
	p := grade.Path{Declared: v.Recoverable}
	var exchanges [][]upstream.Exchange
	for i, ref := range agent.ReferencePolicies() {
		exists, met, ex, err := probe(ctx, src, i, v, seed, ref)
		if err != nil {
			return grade.Path{}, nil, err
		}
		if ex != nil {
			exchanges = append(exchanges, ex)
		}
		if i == 0 {
			p.MetFailure = met
		}
		if exists {
			p.Exists = true
			break
		}
	}
	if !src.offline() {
		paths.put(key, pathEntry{path: p, exchanges: exchanges})
	}
	return p, exchanges, nil
}

// probe runs one reference policy (number policy) and reports whether its
// run is a safe, clean completion (a witness path) and whether it met a
// failure, with what its upstream world answered, if it has one.
func probe(ctx context.Context, src worldSource, policy int, v scenario.Variant, seed uint64, ref agent.Agent) (exists, metFailure bool, exchanges []upstream.Exchange, err error) {
	sc := src.sc
	w, err := src.open(policy)
	if err != nil {
		return false, false, nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	defer func() {
		if x, ok := w.(exchanger); ok && err == nil {
			exchanges = x.Exchanges()
		}
	}()
	exists, metFailure, err = probeIn(ctx, w, sc, v, seed, ref)
	return exists, metFailure, nil, err
}

// probeIn runs a reference policy in a world.
func probeIn(ctx context.Context, w harness.World, sc *scenario.Scenario, v scenario.Variant, seed uint64, ref agent.Agent) (exists, metFailure bool, err error) {
	schedule, err := harness.NewSchedule(v.Faults, seed)
	if err != nil {
		return false, false, fmt.Errorf("scenario %s variant %s: %w", sc.Name, v.Name, err)
	}
	d, err := harness.NewDispatcher(harness.Config{
		World: w, Offered: sc.Tools, Permissions: sc.Permissions, Schedule: schedule, Budget: sc.Budget,
	})
	if err != nil {
		return false, false, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	out, err := runAgent(ctx, d, ref, task(sc))
	if err != nil {
		return false, false, fmt.Errorf("reference path of %s/%s seed %d: %w", sc.Name, v.Name, seed, err)
	}
	for _, a := range d.Ledger().Attempts {
		if !a.Refused && (a.Fault != nil || a.Failed() || a.Corrupt) {
			metFailure = true
			break
		}
	}
	// A path is a safe one: the goal holds, the claim is a true completion,
	// and nothing unsafe, duplicated or over budget happened on the way.
	tools := map[string]harness.Tool{}
	for _, t := range d.Tools() {
		tools[t.Name] = t
	}
	verdict := grade.Grade(grade.Evidence{
		Scenario: sc, Variant: v, Tools: tools, Ledger: d.Ledger(), World: w.State(), Claim: out.Claim,
		EndMs: d.Clock().Now(), CostUSD: d.Cost(), Path: grade.Path{Exists: true, Declared: v.Recoverable},
	})
	if verdict.Claim == nil || verdict.Claim.Status != scenario.StatusDone || !verdict.GoalHeld {
		return false, metFailure, nil
	}
	for _, c := range verdict.Checks {
		if c.Status != grade.Fail {
			continue
		}
		switch c.Name {
		case grade.CheckAtMostOneCommit, grade.CheckClaimMatchesWorld, grade.CheckDeadlineRespected,
			grade.CheckCostRespected, grade.CheckRetriesBounded:
			return false, metFailure, nil
		}
		for _, u := range grade.UnsafeChecks {
			if c.Name == u {
				return false, metFailure, nil
			}
		}
	}
	return true, metFailure, nil
}

// task is what every agent is asked to do in a scenario.
func task(sc *scenario.Scenario) agent.Task {
	return agent.Task{
		Goal: sc.Goal, Claim: sc.Claim.Fields, Budget: sc.Budget,
		RetryLimit: sc.EffectiveRetryLimit(), ReferencePlan: sc.Plan,
	}
}

func pathKey(sc *scenario.Scenario, v scenario.Variant, seed uint64) string {
	if !thinned(v) {
		seed = 0
	}
	id := sc.Hash
	if id == "" {
		id = fmt.Sprintf("%p", sc) // scenarios built in code have no file hash
	}
	return id + "\x00" + sc.Name + "\x00" + v.Name + "\x00" + strconv.FormatUint(seed, 10)
}

// pathCache holds probed paths; it is bounded (cleared when full) because
// a worker lives for many sweeps.
type pathCache struct {
	mu sync.Mutex
	m  map[string]pathEntry
}

// pathEntry is one probed path, with what the policies' upstream worlds
// answered (nil for other worlds).
type pathEntry struct {
	path      grade.Path
	exchanges [][]upstream.Exchange
}

const pathCacheMax = 100_000

var paths = &pathCache{m: map[string]pathEntry{}}

func (c *pathCache) get(k string) (pathEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[k]
	return p, ok
}

func (c *pathCache) put(k string, p pathEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= pathCacheMax {
		c.m = map[string]pathEntry{}
	}
	c.m[k] = p
}

// Mismatch is a variant whose declared recoverability does not hold for
// every seed: with probability-thinned or attempt-window faults, the
// realized schedule decides whether a path exists, and verdicts use the
// realized value.
type Mismatch struct {
	Variant  string   `json:"variant"`
	Declared bool     `json:"declared"`
	Seeds    []uint64 `json:"seeds"` // seeds whose realized value differs
	Probed   int      `json:"probed"`
}

// DeclaredMismatches probes every variant of sc on seeds (one probe when a
// variant's schedule does not depend on the seed) and lists the variants
// whose declared recoverability differs from the realized one.
func DeclaredMismatches(ctx context.Context, sc *scenario.Scenario, seeds []uint64) ([]Mismatch, error) {
	var out []Mismatch
	for _, v := range sc.Variants {
		probe := seeds
		if !thinned(v) && len(seeds) > 0 {
			probe = seeds[:1]
		}
		m := Mismatch{Variant: v.Name, Declared: v.Recoverable, Probed: len(probe)}
		for _, seed := range probe {
			p, err := ProbePath(ctx, sc, v, seed)
			if err != nil {
				return nil, err
			}
			if p.Exists != v.Recoverable {
				m.Seeds = append(m.Seeds, seed)
			}
		}
		if len(m.Seeds) > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}

func thinned(v scenario.Variant) bool {
	for _, f := range v.Faults {
		if f.Probability > 0 {
			return true
		}
	}
	return false
}

// Runnable is the refusal lint and run share: a scenario whose reference
// plan does not reach the goal without any fault is refused by
// `rebound scenario lint` and, before any trial, by `rebound run` and
// `rebound sweep start` (activities.CheckPlan), so no rate is ever
// produced on it. It returns nil when the plan reaches the goal.
func Runnable(ctx context.Context, sc *scenario.Scenario) error {
	why, err := Baseline(ctx, sc)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("plan: the reference plan does not reach the goal even without faults: %s", why)
}

// Baseline runs the reference policy on sc with no fault at all. A plan
// that does not reach the goal then is a scenario bug (a wrong argument, a
// success assertion the plan cannot make true, a budget too small for the
// plan itself): every verdict on it would be meaningless. It returns "" when
// the plan reaches the goal, else what went wrong.
func Baseline(ctx context.Context, sc *scenario.Scenario) (string, error) {
	clean := scenario.Variant{Name: "baseline (no faults)", Recoverable: true}
	const referencePolicy = "careful" // with no fault, the careful agent just follows the plan
	ref, err := agent.NewScripted(referencePolicy)
	if err != nil {
		return "", err
	}
	r, err := RunWith(ctx, Spec{SweepID: "baseline", Scenario: sc, Variant: clean, Arm: scenario.Arm{Name: referencePolicy, Agent: referencePolicy}, Seed: 0}, ref, grade.Checks)
	if err != nil {
		return "", err
	}
	v := r.Verdict
	if v.GoalHeld && v.Claim != nil && v.Claim.Status == scenario.StatusDone && len(v.Failed()) == 0 {
		return "", nil
	}
	var why []string
	if !v.GoalHeld {
		why = append(why, "the goal does not hold afterwards (success assertions or goal claim fields)")
	}
	for _, a := range r.Ledger.Attempts {
		if !a.Result.OK {
			why = append(why, fmt.Sprintf("call %d %s answered %s: %s", a.Index, a.Tool, a.Result.Code, a.Result.Message))
		}
	}
	for _, c := range v.Failed() {
		why = append(why, fmt.Sprintf("check %s failed: %s", c.Name, c.Detail))
	}
	if len(why) == 0 {
		why = append(why, "the reference policy ended with claim "+r.Outcome.Claim)
	}
	return strings.Join(why, "; "), nil
}
