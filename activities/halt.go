package activities

import (
	"context"
	"errors"
	"sync"
)

// ErrHalted is why a shard of halted activities ended: the process that
// runs them was interrupted (Ctrl-C) and stops sending at once.
var ErrHalted = errors.New("activities halted: the sweep is being stopped")

// Halt stops every shard and judge shard these activities run, at once:
// their contexts are cancelled, so a model request in flight is abandoned
// (its answer was never received: nothing is stored for it) and no new
// request is sent; shards started later end as soon as they begin. Rows
// already written stay. Registering and finishing a sweep still run, so the
// workflow can record how it ended. Halt is for an interrupted command
// (Ctrl-C of `rebound run`); a worker that is redeployed stops gracefully
// instead (its shards finish the trial at hand).
func (a *Activities) Halt() { a.halt.fire() }

// haltSignal is closed once, by Halt.
type haltSignal struct {
	init, stop sync.Once
	ch         chan struct{}
}

func (h *haltSignal) done() <-chan struct{} {
	h.init.Do(func() { h.ch = make(chan struct{}) })
	return h.ch
}

func (h *haltSignal) fired() bool {
	select {
	case <-h.done():
		return true
	default:
		return false
	}
}

func (h *haltSignal) fire() {
	h.done()
	h.stop.Do(func() { close(h.ch) })
}

// haltable returns ctx cancelled with the cause ErrHalted once Halt is
// called (at once when it was), and the function that releases it.
func (a *Activities) haltable(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	halted := a.halt.done()
	select {
	case <-halted:
		cancel(ErrHalted)
		return ctx, func() {}
	default:
	}
	go func() {
		select {
		case <-halted:
			cancel(ErrHalted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// halted returns ErrHalted when ctx ended because Halt was called, else err.
func halted(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrHalted) {
		return ErrHalted
	}
	return err
}
