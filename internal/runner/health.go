package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// Defaults of WatchTemporal.
const (
	DefaultHealthInterval = 5 * time.Second
	DefaultHealthGrace    = 15 * time.Second
)

// TemporalHealth says whether a worker can still reach its Temporal
// frontend: the readiness a /readyz probe reports. The SDK's pollers retry
// forever and report nothing, so the frontend is asked directly (its gRPC
// health check) every interval; the worker is unready once no check has
// succeeded for longer than the grace period. The grace keeps a blip (a
// frontend restart in a rolling deploy) from pulling every worker out of
// service at once.
type TemporalHealth struct {
	grace time.Duration

	mu      sync.Mutex
	lastOK  time.Time
	lastErr error
}

// WatchTemporal checks c every interval until ctx ends (zero values take
// DefaultHealthInterval and DefaultHealthGrace). The first check runs
// before it returns.
func WatchTemporal(ctx context.Context, c client.Client, interval, grace time.Duration) *TemporalHealth {
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	if grace <= 0 {
		grace = DefaultHealthGrace
	}
	h := &TemporalHealth{grace: grace}
	check := func() {
		cctx, cancel := context.WithTimeout(ctx, interval)
		defer cancel()
		_, err := c.CheckHealth(cctx, &client.CheckHealthRequest{})
		h.mu.Lock()
		defer h.mu.Unlock()
		if err == nil {
			h.lastOK, h.lastErr = time.Now(), nil
		} else if ctx.Err() == nil {
			h.lastErr = err
		}
	}
	check()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				check()
			}
		}
	}()
	return h
}

// Err is nil while the frontend answered within the grace period.
func (h *TemporalHealth) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastOK.IsZero() && time.Since(h.lastOK) <= h.grace {
		return nil
	}
	if h.lastOK.IsZero() {
		if h.lastErr != nil {
			return fmt.Errorf("temporal unreachable: %w", h.lastErr)
		}
		return errors.New("temporal not checked yet")
	}
	return fmt.Errorf("temporal unreachable for %s (last error: %v)", time.Since(h.lastOK).Round(time.Second), h.lastErr)
}
