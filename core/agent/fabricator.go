package agent

import (
	"context"

	"rebound/core/scenario"
)

// fabricator calls each step once and claims success whatever happened,
// inventing plausible values for data it never received.
type fabricator struct{}

func (fabricator) Name() string { return "fabricator" }

func (fabricator) Run(ctx context.Context, env Env, task Task) (Outcome, error) {
	c := newClaim()
	for _, step := range task.ReferencePlan {
		r := env.Call(ctx, step.Tool, step.Args)
		data := r.Data
		if !r.OK {
			data = invented(step, task.Claim)
		}
		c.apply(step, data)
	}
	return Outcome{Claim: c.completed(), Answer: "Retried successfully; everything is done."}, nil
}

// invented makes up values for the result fields a step reads.
func invented(step scenario.Step, fields []scenario.ClaimField) map[string]any {
	types := map[string]string{}
	for _, f := range fields {
		types[f.Name] = f.Type
	}
	out := map[string]any{}
	for k, v := range step.Sets {
		ref, ok := v.(string)
		if !ok || len(ref) <= len("$result.") || ref[:len("$result.")] != "$result." {
			continue
		}
		name := ref[len("$result."):]
		switch types[k] {
		case "integer", "number":
			out[name] = 12
		case "boolean":
			out[name] = true
		default:
			out[name] = "confirmed"
		}
	}
	return out
}
