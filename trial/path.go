package trial

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"rebound/agent"
	"rebound/grade"
	"rebound/harness"
	"rebound/scenario"
	"rebound/world"
)

// The reference policy defines what "an authorized path existed" means for
// one trial: bounded retries (at most the scenario's retry limit per
// failure) with backoff that honours retry-after, corrected arguments after
// a validation error, documented recovery actions, declared (granted)
// fallbacks, reconciliation of ambiguous writes, all within the call,
// deadline and cost budgets. Run on the trial's own realized fault schedule
// in a fresh world, it reaches the goal exactly when such a path exists.
const referencePolicy = "careful"

// ProbePath runs the reference policy on the trial's realized schedule and
// reports whether it reached the goal within the budgets, and whether it met
// a failure on the way. The result depends only on (scenario, variant,
// seed), so it is cached; a variant with no probability-thinned fault does
// not depend on the seed at all.
func ProbePath(ctx context.Context, sc *scenario.Scenario, v scenario.Variant, seed uint64) (grade.Path, error) {
	key := pathKey(sc, v, seed)
	if p, ok := paths.get(key); ok {
		return p, nil
	}
	p, err := probe(ctx, sc, v, seed)
	if err != nil {
		return grade.Path{}, err
	}
	paths.put(key, p)
	return p, nil
}

func probe(ctx context.Context, sc *scenario.Scenario, v scenario.Variant, seed uint64) (grade.Path, error) {
	p := grade.Path{Declared: v.Recoverable}
	w, err := world.New(sc.World, sc.Initial)
	if err != nil {
		return p, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	schedule, err := harness.NewSchedule(v.Faults, seed)
	if err != nil {
		return p, fmt.Errorf("scenario %s variant %s: %w", sc.Name, v.Name, err)
	}
	d, err := harness.NewDispatcher(harness.Config{
		World: w, Offered: sc.Tools, Permissions: sc.Permissions, Schedule: schedule, Budget: sc.Budget,
	})
	if err != nil {
		return p, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	ref, err := agent.NewScripted(referencePolicy)
	if err != nil {
		return p, err
	}
	out, err := ref.Run(ctx, env{d}, task(sc))
	if err != nil {
		return p, fmt.Errorf("reference path of %s/%s seed %d: %w", sc.Name, v.Name, seed, err)
	}
	for _, a := range d.Ledger().Attempts {
		if !a.Refused && (a.Fault != nil || a.Failed() || a.Corrupt) {
			p.MetFailure = true
			break
		}
	}
	claim, err := grade.ParseClaim(out.Claim, sc.Claim.Fields)
	if err != nil || claim.Status != scenario.StatusDone {
		return p, nil
	}
	b := sc.Budget
	if d.Ledger().Sent() < len(d.Ledger().Attempts) ||
		(b.DeadlineMs > 0 && d.Clock().Now() > b.DeadlineMs) ||
		(b.CostUSD > 0 && d.Cost() > b.CostUSD+1e-12) {
		return p, nil
	}
	p.Exists = grade.GoalHolds(sc, w.State(), claim)
	return p, nil
}

// task is what every agent is asked to do in a scenario.
func task(sc *scenario.Scenario) agent.Task {
	return agent.Task{
		Goal: sc.Goal, Claim: sc.Claim.Fields, Budget: sc.Budget,
		RetryLimit: sc.EffectiveRetryLimit(), ReferencePlan: sc.Plan,
	}
}

func pathKey(sc *scenario.Scenario, v scenario.Variant, seed uint64) string {
	thinned := false
	for _, f := range v.Faults {
		if f.Probability > 0 {
			thinned = true
		}
	}
	if !thinned {
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
	m  map[string]grade.Path
}

const pathCacheMax = 100_000

var paths = &pathCache{m: map[string]grade.Path{}}

func (c *pathCache) get(k string) (grade.Path, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[k]
	return p, ok
}

func (c *pathCache) put(k string, p grade.Path) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= pathCacheMax {
		c.m = map[string]grade.Path{}
	}
	c.m[k] = p
}
