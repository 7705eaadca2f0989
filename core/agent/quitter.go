package agent

import "context"

// quitter gives up at the first failure of any kind, blocking on the tool.
type quitter struct{}

func (quitter) Name() string { return "quitter" }

func (quitter) Run(ctx context.Context, env Env, task Task) (Outcome, error) {
	c := newClaim()
	for _, step := range task.ReferencePlan {
		r := env.Call(ctx, step.Tool, step.Args)
		if !r.OK {
			if !r.Uncertain {
				c.deny(step)
			}
			return Outcome{Claim: c.blocked(step.Tool), Answer: "Something went wrong."}, nil
		}
		c.apply(step, r.Data)
	}
	return Outcome{Claim: c.completed()}, nil
}
