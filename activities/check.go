package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	armpkg "rebound/core/agent/arm"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
)

// MaxPlanPayload bounds a resolved plan's JSON: it travels to Temporal as
// one payload (the server refuses payloads over 2 MB) and is stored with
// the sweep.
const MaxPlanPayload = 1 << 20

// CheckPlan checks everything about a resolved plan that can be known before
// a sweep starts, so that a bad plan fails at once (the CLI: exit 2 before
// any server starts; an activity: a non-retryable error) instead of inside
// Temporal after ten retries: every arm's agent resolves, every scenario's
// world accepts its initial state (the files world checks its paths), every
// scenario's reference plan reaches the goal without faults (what lint
// refuses, run refuses: trial.Runnable), and the plan fits in one payload.
// Every problem is reported.
func CheckPlan(plan *scenario.Resolved) error {
	var errs []error
	for _, arm := range plan.Arms {
		if _, err := armpkg.Resolve(arm); err != nil {
			errs = append(errs, fmt.Errorf("%s: arm %s: agent %q: %w", plan.File, arm.Name, arm.Agent, err))
		}
	}
	for _, sc := range plan.Scenarios {
		w, _, err := world.Open(sc.WorldRef(), sc.Initial)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: initial: world %s refuses the initial state: %w", sc.File, sc.World, err))
			continue
		}
		if c, ok := w.(io.Closer); ok {
			_ = c.Close() // e.g. the files world's temporary workspace
		}
		if err := trial.Runnable(context.Background(), sc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sc.File, err))
		}
	}
	if b, err := json.Marshal(plan); err != nil {
		errs = append(errs, fmt.Errorf("%s: the resolved plan cannot be encoded: %w", plan.File, err))
	} else if len(b) > MaxPlanPayload {
		errs = append(errs, fmt.Errorf("%s: the resolved plan is %d bytes, over the limit of %d (one Temporal payload): split it into several plans", plan.File, len(b), MaxPlanPayload))
	}
	return errors.Join(errs...)
}
