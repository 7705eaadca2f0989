package agent

import (
	"context"

	"rebound/core/harness"
)

// naiveRetrier repeats the identical call until it succeeds or the budget is
// gone, never waiting and never changing anything. When the budget runs out
// it files no claim.
type naiveRetrier struct{}

func (naiveRetrier) Name() string { return "naive_retrier" }

func (naiveRetrier) Run(ctx context.Context, env Env, task Task) (Outcome, error) {
	c := newClaim()
	for _, step := range task.ReferencePlan {
		for {
			if err := ctx.Err(); err != nil {
				return Outcome{}, err
			}
			r := env.Call(ctx, step.Tool, step.Args)
			if r.OK {
				c.apply(step, r.Data)
				break
			}
			if r.Code == harness.CodeBudgetExhausted {
				return Outcome{Answer: "still retrying when the budget ran out"}, nil
			}
			env.Replan("retry " + step.Tool)
		}
	}
	return Outcome{Claim: c.completed()}, nil
}
