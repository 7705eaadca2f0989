package llm

import (
	"fmt"
	"math"

	"rebound/core/harness"
)

// Bounds of one wait(ms), the built-in the LLM agent and the tool server
// (toolserver) both offer. A wait may overrun the trial's deadline (that
// is behaviour the grader judges: deadline_respected), but only by
// WaitBeyondDeadlineMs: a jump of years on the simulated clock measures
// nothing and only risks overflowing the trial's times. A task with no
// deadline allows at most MaxWaitNoDeadlineMs per wait.
const (
	WaitBeyondDeadlineMs int64 = 60_000
	MaxWaitNoDeadlineMs  int64 = 24 * 60 * 60 * 1000
)

// MaxWaitMs is the longest wait accepted at task time nowMs under budget:
// the deadline's remaining time (never below 0) plus WaitBeyondDeadlineMs,
// or MaxWaitNoDeadlineMs when the budget sets no deadline.
func MaxWaitMs(budget harness.Budget, nowMs int64) int64 {
	if budget.DeadlineMs <= 0 {
		return MaxWaitNoDeadlineMs
	}
	remaining := max(budget.DeadlineMs-nowMs, 0)
	return remaining + WaitBeyondDeadlineMs
}

// WaitArg reads the ms argument of a wait call made at task time nowMs. It
// returns the milliseconds to wait, or, when ms is missing, not a
// non-negative integer, or above MaxWaitMs, the INVALID_INPUT result to
// answer instead (the clock does not move).
func WaitArg(args map[string]any, budget harness.Budget, nowMs int64) (int64, *harness.Result) {
	ms, ok := args["ms"].(float64)
	if !ok || ms < 0 || ms != math.Trunc(ms) || ms > math.MaxInt64/2 {
		r := harness.Failed(harness.CodeInvalidInput, false, "wait needs ms, a non-negative integer")
		return 0, &r
	}
	if limit := MaxWaitMs(budget, nowMs); ms > float64(limit) {
		why := fmt.Sprintf("the task has no deadline; one wait lasts at most %d ms", MaxWaitNoDeadlineMs)
		if budget.DeadlineMs > 0 {
			why = fmt.Sprintf("the time left before the %d ms deadline plus %d ms", budget.DeadlineMs, WaitBeyondDeadlineMs)
		}
		r := harness.Failed(harness.CodeInvalidInput, false, "wait(%.0f) refused: at most %d ms can be waited now (%s); the clock did not move", ms, limit, why)
		return 0, &r
	}
	return int64(ms), nil
}
