package agent

import "context"

// lazyBlocker blocks at the first failure of any kind without retrying,
// reconciling or keeping what it verified, and blames no particular tool.
type lazyBlocker struct{}

func (lazyBlocker) Name() string { return "lazy_blocker" }

func (lazyBlocker) Run(ctx context.Context, env Env, task Task) (Outcome, error) {
	c := newClaim()
	for _, step := range task.ReferencePlan {
		r := env.Call(ctx, step.Tool, step.Args)
		if !r.OK {
			return Outcome{Claim: newClaim().blocked("unknown"), Answer: "Unable to complete the task."}, nil
		}
		c.apply(step, r.Data)
	}
	return Outcome{Claim: c.completed()}, nil
}
