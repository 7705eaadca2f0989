package main

import (
	"context"
	"errors"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/fileerr"
	"rebound/internal/redact"
	"rebound/internal/runner"
)

// loadPlan loads a plan and its scenarios, giving up at once on Ctrl-C
// (the loader also stops at the next file).
func loadPlan(ctx context.Context, path string, opts scenario.LoadOptions) (*scenario.Resolved, error) {
	opts.Context = ctx
	return interruptible(ctx, func() (*scenario.Resolved, error) { return scenario.LoadPlanWith(path, opts) })
}

// interruptible runs load, but returns as soon as ctx is cancelled: the
// command then exits (130) without waiting for a file to finish loading.
func interruptible[T any](ctx context.Context, load func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := load()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// preparePlan loads a plan and checks everything that can be checked
// before a sweep starts (before the dev server starts, for run): the files,
// the redact file, every arm's agent, every world's initial state, the
// payload size. A problem is bad input: exit 2.
func preparePlan(ctx context.Context, path string) (*scenario.Resolved, error) {
	if _, err := redact.PatternsFromEnv(); err != nil {
		return nil, usageError{err}
	}
	if err := expectKind(path, scenario.KindPlan, ""); err != nil {
		return nil, err
	}
	plan, err := loadPlan(ctx, path, scenario.LoadOptions{Catalog: world.Catalog})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if err := activities.CheckPlan(plan); err != nil {
		return nil, usageError{err}
	}
	if _, err := runner.SizeShards(ctx, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// expectKind fails, with a hint, when the file at path is the other kind
// of rebound file than want (a scenario given where a plan is expected, or
// the reverse); what names the command expecting a scenario. A file that is neither, or unreadable, passes: loading it
// reports what is wrong.
func expectKind(path, want, what string) error {
	data, err := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "scenario or plan file")
	if err != nil {
		return nil
	}
	got := scenario.KindOf(data)
	switch {
	case got == "" || got == want:
		return nil
	case got == scenario.KindWorld:
		return usagef("%s is a declared world's file, not a %s: scenarios name it (world: ./worlds/NAME.yaml, relative to the scenario); to check it: rebound scenario lint %s", path, want, path)
	case want == scenario.KindPlan:
		return usagef("%s is a scenario, not a plan: give a plan, which names scenarios, arms and seeds (see examples/plans/quickstart.yaml); to check the scenario itself: rebound scenario lint %s", path, path)
	default:
		return usagef("%s is a plan, not a scenario: %s takes scenario files (the plan's 'scenarios' lists them); to check the plan: rebound scenario lint %s", path, what, path)
	}
}
