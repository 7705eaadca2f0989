package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"rebound/internal/redact"
	"rebound/storage"
)

// Waiting for a store that is full or unreachable. A shard whose write (or
// read) fails because the disk is full or the server does not answer does
// not fail its attempt: it keeps what it ran, retries with backoff (1 s
// doubling to StoreBackoff), heartbeats so Temporal knows it is alive, and
// says so in its heartbeat details, which `rebound sweep status` shows
// ("waiting for the store since ..."). An attempt waits until its own
// deadline is a minute away (Temporal's StartToCloseTimeout of a shard,
// 30 min), then gives up that one attempt; the wait is counted from the
// first failure across attempts, and once it passed StoreWait the error is
// returned for good.
const (
	// DefaultStoreWait is the default of StoreWait (REBOUND_STORE_WAIT,
	// --store-wait).
	DefaultStoreWait = 4 * time.Hour
	// MaxStoreWait bounds StoreWait: a shard retried ten times at about
	// 29 minutes of waiting each.
	MaxStoreWait = 4 * time.Hour
	// DefaultStoreBackoff caps the pause between two tries.
	DefaultStoreBackoff = time.Minute
	// attemptMargin is kept free before an attempt's deadline.
	attemptMargin = time.Minute
)

func (a *Activities) storeWait() time.Duration {
	switch {
	case a.StoreWait <= 0:
		return DefaultStoreWait
	case a.StoreWait > MaxStoreWait:
		return MaxStoreWait
	}
	return a.StoreWait
}

func (a *Activities) storeBackoff() time.Duration {
	if a.StoreBackoff > 0 {
		return a.StoreBackoff
	}
	return DefaultStoreBackoff
}

// storeWaiter retries one store operation while the store is unavailable.
type storeWaiter struct {
	limit, backoff time.Duration
	// since is when the store first failed (an earlier attempt's, from its
	// heartbeat details); zero while it answers.
	since time.Time
	red   *redact.Redactor
	// report records the waiting line ("" once the store answers again).
	report func(waiting string, since time.Time)
	// stop, when closed, ends the wait at once (Halt).
	stop <-chan struct{}
}

// do runs op until it succeeds, fails for another reason than
// unavailability, ctx ends, the attempt's deadline nears, or the store has
// been unavailable for longer than the limit.
func (w *storeWaiter) do(ctx context.Context, what string, op func(context.Context) error) error {
	delay := min(time.Second, w.backoff)
	for {
		err := op(ctx)
		if err == nil {
			if !w.since.IsZero() {
				w.since = time.Time{}
				w.report("", time.Time{})
			}
			return nil
		}
		if ctx.Err() != nil || !storage.IsUnavailable(err) {
			return err
		}
		if w.since.IsZero() {
			w.since = time.Now()
		}
		waited := time.Since(w.since)
		if waited >= w.limit {
			return fmt.Errorf("%s: the store stayed unavailable for %s, the limit (--store-wait): %w", what, waited.Round(time.Second), err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < attemptMargin+delay {
			return fmt.Errorf("%s: the store has been unavailable for %s; this attempt ends, the next one waits on: %w", what, waited.Round(time.Second), err)
		}
		msg := err.Error()
		if w.red != nil {
			msg = w.red.String(msg)
		}
		line := fmt.Sprintf("waiting for the store since %s (%s): %s", w.since.UTC().Format(time.RFC3339), what, msg)
		// The pause heartbeats every few seconds: an activity that beats
		// nothing else stays alive under its heartbeat timeout.
		for end := time.Now().Add(delay); time.Now().Before(end); {
			w.report(line, w.since)
			select {
			case <-ctx.Done():
				return err
			case <-w.stop:
				return err
			case <-time.After(min(time.Until(end), 5*time.Second)):
			}
		}
		delay = min(delay*2, w.backoff)
	}
}

// waiter returns a storeWaiter for an activity that heartbeats nothing else
// (register, finish): its waiting line is its heartbeat detail.
func (a *Activities) waiter(ctx context.Context) *storeWaiter {
	return &storeWaiter{limit: a.storeWait(), backoff: a.storeBackoff(), report: func(waiting string, since time.Time) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, ShardCheckpoint{Waiting: waiting, WaitingSince: since})
		}
	}}
}
