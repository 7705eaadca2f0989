package runner

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"rebound/core/scenario"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// ErrNotResumable is matched (errors.Is) when a sweep asked to resume has
// already ended for good (completed, or stopped by its max_usd).
var ErrNotResumable = errors.New("sweep is not resumable")

// MarkStopped records a running sweep as stopped (interrupted on purpose,
// resumable) before its workflow is cancelled: the workflow's last
// activity then keeps stopped rather than writing cancelled. A sweep not
// stored as running is left as it is.
func MarkStopped(ctx context.Context, store storage.Store, sweepID string) error {
	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		return err
	}
	if sw.Status != sweepstatus.Running {
		return nil
	}
	sw.Status = sweepstatus.Stopped
	return store.PutSweep(ctx, sw)
}

// ResumeSweep continues a sweep whose workflow has closed (stopped with
// Ctrl-C, cancelled, failed, or gone): it starts a new run of the sweep's
// workflow, with the same id, on queue, from the plan stored when the sweep
// registered (opened with redactionKey), and records the sweep as running
// again. Nothing done before is redone: its shards skip the trials the
// store holds, and its LLM trials answer the requests they already paid
// for from the model journal. Its max_usd counts the spend already stored
// (exact + estimated): a trial the run finishes from journaled answers adds
// its whole cost again, so the count errs high, never low. A completed
// sweep, or one stopped by its max_usd, is ErrNotResumable; an unknown one
// record.ErrNotFound.
func ResumeSweep(ctx context.Context, c client.Client, store storage.Store, redactionKey []byte, queue, sweepID string) (client.WorkflowRun, error) {
	sw, err := store.Sweep(ctx, sweepID)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return nil, fmt.Errorf("no sweep %q in this store (list them with 'rebound sweeps'): %w", sweepID, err)
		}
		return nil, err
	}
	if !sweepstatus.Resumable(sw.Status) {
		return nil, fmt.Errorf("sweep %s ended %s; nothing to resume: %w", sweepID, sw.Status, ErrNotResumable)
	}
	plan, err := scenario.OpenStoredPlan(sw.PlanJSON, redactionKey)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: its stored plan: %w", sweepID, err)
	}
	// The new run's max_usd counts from what the sweep already spent, the
	// estimate of requests lost in flight included: resuming never spends
	// past the cap.
	spent, err := store.Spend(ctx, sweepID)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: its stored spend: %w", sweepID, err)
	}
	sw.Status = sweepstatus.Running
	if err := store.PutSweep(ctx, sw); err != nil {
		return nil, err
	}
	in := workflows.SweepInput{
		SweepID: sweepID, Trials: plan.TrialCount(), ShardSize: plan.ShardSize, Concurrency: plan.Concurrency,
		Judge: plan.Judge != nil, MaxUSD: plan.MaxUSD,
		Progress: workflows.Progress{SpentUSD: spent.TotalUSD()},
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID(sweepID), TaskQueue: queue}, workflows.SweepWorkflowName, in)
}
