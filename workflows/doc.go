// Package workflows holds rebound's Temporal workflows. A sweep is one
// workflow that fans trial shards out to activities through a sliding window,
// answers progress queries, and continues as new before its history grows
// large. It never carries the sweep's matrix or any trace: activities read
// the resolved plan from storage by sweep id and return compact summaries.
//
// # Changing the workflow: guard every change of its commands
//
// A sweep runs for hours and workers are redeployed under it. A worker that
// picks a sweep up replays its history through the code it runs, which must
// issue the same commands in the same order as the history records:
// activities (their type and order), timers, markers, side effects, child
// workflows, continue-as-new, completion. A change to that sequence fails
// the running sweep with a non-determinism error (TMPRL1100) and the sweep
// sticks until it is reset.
//
// So every change to the command sequence of [Sweep] (an activity added,
// removed, reordered or renamed; a timer; a different continue-as-new or
// phase boundary, a different default of ShardsPerRun) is guarded by
// workflow.GetVersion, with a change id used once and never reused:
//
//	v := workflow.GetVersion(ctx, "checkpoint-shards", workflow.DefaultVersion, 1)
//	if v == workflow.DefaultVersion {
//		// the old commands, for sweeps started before the change
//	} else {
//		// the new commands
//	}
//
// The old branch stays until no sweep started before the change can still
// be open; then delete the history sets recorded before the change and raise
// minSupported (GetVersion(ctx, "checkpoint-shards", 1, 1)) rather than
// deleting the call.
//
// No guard is needed for what replay does not compare: activity
// implementations (everything outside this package), retry policies and
// timeouts, query handlers, and new fields in SweepInput, Progress or the
// activity payloads. Those structs are persisted in histories: add fields,
// never rename or repurpose one.
//
// The check is TestReplayHistories (part of `make test`): it replays the
// histories committed under testdata/histories/ against the current code.
// After a guarded change, record a new set next to the old ones with
// `make histories` and commit both; the old set proves that running sweeps
// survive the deploy, the new one covers the new branch. README's
// "Upgrading workers" says what to do when a sweep is stuck anyway.
package workflows
