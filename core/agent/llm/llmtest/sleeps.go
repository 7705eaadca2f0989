package llmtest

import (
	"context"
	"sync"
	"time"
)

// Sleeps records the waits of the model client layer (an endpoint.Sleep:
// backoff, Retry-After, the rate limiter) and returns at once, or with
// ctx's error when ctx is done. Safe for concurrent use.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d.
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// All returns the recorded waits in order.
func (s *Sleeps) All() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}
