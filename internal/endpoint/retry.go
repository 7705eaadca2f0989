package endpoint

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how often and after which waits a transient failure is
// retried. It is the one policy of the model client layer; callers differ
// only in its numbers.
type RetryPolicy struct {
	// MaxRetries is the number of retries after the first attempt.
	MaxRetries int
	// Base is the first wait; each further one is Multiplier times the
	// last (Multiplier 0 means 2), capped at MaxWait.
	Base       time.Duration
	Multiplier float64
	// MaxWait caps one wait, a provider's Retry-After included: a provider
	// that asks for more is treated as persistently failing.
	MaxWait time.Duration
	// Jitter spreads each backoff over [d/2, d], so concurrent callers hit
	// by one outage do not retry in lockstep. A Retry-After is honoured
	// as given.
	Jitter bool
}

// Backoff is the wait before retry number attempt+1 (attempt 0: the first
// retry) when the provider named no wait.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	m := p.Multiplier
	if m == 0 {
		m = 2
	}
	d := p.Base
	for i := 0; i < attempt && (p.MaxWait <= 0 || d < p.MaxWait); i++ {
		d = time.Duration(float64(d) * m)
	}
	if p.MaxWait > 0 && d > p.MaxWait {
		d = p.MaxWait
	}
	if p.Jitter && d > 0 {
		return d/2 + rand.N(d/2+1)
	}
	return d
}

// Wait is the wait before retrying f, the failure of attempt number
// attempt (0: the first): the provider's Retry-After when it named one,
// else Backoff. It returns an error wrapping ErrExhausted when no retry
// is due (the retries are spent, or the provider asked for more than
// MaxWait), and ErrConfig (f itself) when f is not transient.
func (p RetryPolicy) Wait(attempt int, f *Failure) (time.Duration, error) {
	if !f.Transient {
		return 0, f
	}
	if attempt >= p.MaxRetries {
		return 0, &Exhausted{Last: f, Detail: fmt.Sprintf(" (still failing after %d attempts)", attempt+1)}
	}
	if f.HasRetryAfter {
		if p.MaxWait > 0 && f.RetryAfter > p.MaxWait {
			return 0, &Exhausted{Last: f, Detail: fmt.Sprintf("; the provider asked to wait %s, more than retry_max_wait %s", f.RetryAfter, p.MaxWait)}
		}
		return f.RetryAfter, nil
	}
	return p.Backoff(attempt), nil
}

// Exhausted is a transient failure the policy gave up on.
type Exhausted struct {
	Last   *Failure
	Detail string // why the policy stopped
}

func (e *Exhausted) Error() string        { return e.Last.Msg + e.Detail }
func (e *Exhausted) Is(target error) bool { return target == ErrExhausted }
func (e *Exhausted) Unwrap() error        { return e.Last }
