package llm

import (
	"strings"
	"sync"
	"time"
)

// limiter enforces a provider's requests-per-minute and tokens-per-minute
// limits for one process. It is a pair of token buckets in reservation
// style: a request takes its tokens at once (the balance may go negative)
// and waits until the balance it left behind has refilled, so concurrent
// callers are served in arrival order and the rate holds exactly, however
// many goroutines share it. A bucket holds at most ten seconds' allowance
// (at least one request): providers enforce per-minute limits over shorter
// windows, so a full minute's burst at the start of a sweep would trip
// them.
//
// Tokens are not known before a response arrives: a request reserves an
// estimate (prompt bytes / 4 plus max_tokens) and settle corrects the
// balance with the usage the provider reports.
type limiter struct {
	mu  sync.Mutex
	now func() time.Time
	req bucket
	tok bucket
}

type bucket struct {
	perMin float64
	burst  float64
	avail  float64
	last   time.Time
}

// burstSeconds is the allowance a bucket can save up.
const burstSeconds = 10

func newBucket(perMin int) bucket {
	b := bucket{}
	b.setLimit(float64(perMin))
	return b
}

func (b *bucket) setLimit(perMin float64) {
	b.perMin = perMin
	b.burst = perMin * burstSeconds / 60
	if b.burst < 1 {
		b.burst = 1
	}
	if b.avail > b.burst {
		b.avail = b.burst
	}
}

func (b *bucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.avail, b.last = b.burst, now
		return
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.avail += dt.Minutes() * b.perMin
		if b.avail > b.burst {
			b.avail = b.burst
		}
		b.last = now
	}
}

// take debits n and returns how long until the balance is back to zero.
func (b *bucket) take(now time.Time, n float64) time.Duration {
	if b.perMin <= 0 {
		return 0
	}
	b.refill(now)
	if n > b.perMin {
		n = b.perMin // a request larger than the whole allowance waits one minute, not forever
	}
	b.avail -= n
	if b.avail >= 0 {
		return 0
	}
	// Rounded to the microsecond: float noise must not turn 31s into
	// 31.000000001s.
	return time.Duration(-b.avail / b.perMin * float64(time.Minute)).Round(time.Microsecond)
}

func (b *bucket) give(n float64) {
	if b.perMin <= 0 {
		return
	}
	b.avail += n
	if b.avail > b.burst {
		b.avail = b.burst
	}
}

func newLimiter(rpm, tpm int, now func() time.Time) *limiter {
	if now == nil {
		now = time.Now
	}
	return &limiter{now: now, req: newBucket(rpm), tok: newBucket(tpm)}
}

// reserve takes one request and tokens estimated tokens, and returns the
// wait before the request may be sent. A caller that then does not send
// (cancelled while waiting) gives them back with cancel.
func (l *limiter) reserve(tokens int) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	d := l.req.take(now, 1)
	if t := l.tok.take(now, float64(tokens)); t > d {
		d = t
	}
	return d
}

func (l *limiter) cancel(tokens int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.req.give(1)
	l.tok.give(float64(tokens))
}

// settle replaces a request's token estimate with its actual usage.
func (l *limiter) settle(estimate, actual int) {
	if l == nil || l.tok.perMin <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tok.refill(l.now())
	l.tok.give(float64(estimate - actual))
}

// tighten lowers the limits to the given ones where they are stricter.
func (l *limiter) tighten(rpm, tpm int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range []struct {
		b   *bucket
		lim int
	}{{&l.req, rpm}, {&l.tok, tpm}} {
		if lim := float64(x.lim); lim > 0 && (x.b.perMin <= 0 || lim < x.b.perMin) {
			x.b.setLimit(lim)
		}
	}
}

// The process-wide registry: one limiter per provider, keyed by base URL
// and API-key variable name (two keys of one provider have separate
// limits; two arms sharing a key share one). When configs of one provider
// disagree, the strictest limit holds.
var limiters = struct {
	sync.Mutex
	m map[string]*limiter
}{m: map[string]*limiter{}}

func limiterFor(baseURL, keyEnv string, rpm, tpm int) *limiter {
	key := strings.TrimRight(baseURL, "/") + "\x00" + keyEnv
	limiters.Lock()
	defer limiters.Unlock()
	l, ok := limiters.m[key]
	if !ok {
		if rpm <= 0 && tpm <= 0 {
			return nil
		}
		l = newLimiter(rpm, tpm, nil)
		limiters.m[key] = l
		return l
	}
	l.tighten(rpm, tpm)
	return l
}
