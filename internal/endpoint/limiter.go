package endpoint

import (
	"strings"
	"sync"
	"time"
)

// Limiter enforces a provider's requests-per-minute and tokens-per-minute
// limits for one process. It is a pair of token buckets in reservation
// style: a request takes its tokens at once (the balance may go negative)
// and waits until the balance it left behind has refilled, so concurrent
// callers are served in arrival order and the rate holds exactly, however
// many goroutines share it. A bucket holds at most one second's allowance
// (at least one request): providers enforce per-minute limits over short
// windows, so allowance saved up while idle must not leave as a burst.
//
// Tokens are not known before a response arrives: a request reserves an
// estimate (EstimateTokens: request bytes / 4 plus max_tokens, the way
// providers count it) and settle corrects the balance with the usage the
// provider reports.
//
// The limit is adaptive: a 429 slows every request of the provider, not
// only the one that got it. It cuts the rate (×0.8, at most once per
// second) and holds every request until the provider's Retry-After has
// passed; each success then wins back 2% of the configured rate. The rate
// is also scaled by the process's share of the provider (SetShare: 1/W
// with W workers).
type Limiter struct {
	mu  sync.Mutex
	now func() time.Time
	req bucket
	tok bucket
	// factor is the adaptive fraction of the limit in use (0.1..1);
	// pauseUntil holds requests after a 429.
	factor     float64
	lastCut    time.Time
	pauseUntil time.Time
	share      float64
}

type bucket struct {
	base   float64 // configured per minute
	perMin float64 // in force: base × share × factor
	burst  float64
	avail  float64
	last   time.Time
}

// burstSeconds is the allowance a bucket can save up.
const burstSeconds = 1

// headroom is the fraction of a limit the Limiter aims at: requests leave
// at the limit's pace, but reach the provider with a jitter of their own
// (connection reuse, queueing), and a provider that counts over short
// windows answers an early arrival 429. Variable so tests can pin exact
// arithmetic at 1.
var headroom = Headroom

// Headroom is the fraction of a configured limit the limiter aims at.
const Headroom = 0.97

func newBucket(perMin int) bucket {
	b := bucket{base: float64(perMin)}
	b.setRate(float64(perMin))
	return b
}

func (b *bucket) setRate(perMin float64) {
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

// NewLimiter returns a limiter of its own (not the process-wide one of
// LimiterFor) for rpm requests and tpm tokens per minute (0: unlimited);
// now is the clock (nil: time.Now).
func NewLimiter(rpm, tpm int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now, req: newBucket(rpm), tok: newBucket(tpm), factor: 1, share: 1}
	l.apply()
	return l
}

// apply sets the rates in force from the configured limits, the share and
// the adaptive factor.
func (l *Limiter) apply() {
	for _, b := range []*bucket{&l.req, &l.tok} {
		if b.base > 0 {
			b.setRate(b.base * l.share * l.factor * headroom)
		}
	}
}

// maxPause bounds how long a 429 holds the limiter. A provider asking for
// longer is failing for good as far as a sweep is concerned: every request
// that would wait more than its retry policy's MaxWait gives up at once
// (Client.Complete), so holding longer would change nothing but the clock
// arithmetic.
const maxPause = 24 * time.Hour

// Throttle reacts to a 429: every request waits out retryAfter (at most
// maxPause), and the rate drops (at most once per second, so one burst of
// 429s counts once).
func (l *Limiter) Throttle(retryAfter time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if until := now.Add(min(max(retryAfter, 0), maxPause)); until.After(l.pauseUntil) {
		l.pauseUntil = until
	}
	if now.Sub(l.lastCut) >= time.Second {
		l.lastCut = now
		l.refillAll(now)
		l.factor = max(0.1, l.factor*0.8)
		l.apply()
	}
}

// Paused is how long every request of the provider is still held by the
// last 429's Retry-After (0: not held). A nil limiter is never paused.
func (l *Limiter) Paused() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.pauseUntil.Sub(l.now()), 0)
}

// Recover wins back part of the rate after a success.
func (l *Limiter) Recover() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.factor < 1 {
		l.refillAll(l.now())
		l.factor = min(1, l.factor+0.02)
		l.apply()
	}
}

func (l *Limiter) refillAll(now time.Time) {
	for _, b := range []*bucket{&l.req, &l.tok} {
		if b.perMin > 0 {
			b.refill(now)
		}
	}
}

// SetShare scales the limits to this process's share of the provider.
func (l *Limiter) SetShare(share float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if share <= 0 || share > 1 {
		share = 1
	}
	if share != l.share {
		l.refillAll(l.now())
		l.share = share
		l.apply()
	}
}

// SetShare tells every provider Limiter of the process that it holds share
// (0 < share <= 1) of each provider's limits: with W workers sharing a
// provider, each sets 1/W (the worker does it from the number of workers
// polling its task queue).
func SetShare(share float64) {
	limiters.Lock()
	defer limiters.Unlock()
	defaultShare = share
	for _, l := range limiters.m {
		l.SetShare(share)
	}
}

var defaultShare = 1.0

// Share is the share of every provider's limits this process holds.
func Share() float64 {
	limiters.Lock()
	defer limiters.Unlock()
	return defaultShare
}

// Reserve takes one request and tokens estimated tokens, and returns the
// wait before the request may be sent. A caller that then does not send
// (cancelled while waiting) gives them back with Cancel. A nil limiter
// never waits.
func (l *Limiter) Reserve(tokens int) time.Duration {
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
	if p := l.pauseUntil.Sub(now); p > d {
		d = p
	}
	return d
}

// Cancel gives back what Reserve took for a request that was not sent.
func (l *Limiter) Cancel(tokens int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.req.give(1)
	l.tok.give(float64(tokens))
}

// Settle replaces a request's token estimate with its actual usage.
func (l *Limiter) Settle(estimate, actual int) {
	if l == nil || l.tok.perMin <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tok.refill(l.now())
	l.tok.give(float64(estimate - actual))
}

// tighten lowers the limits to the given ones where they are stricter.
func (l *Limiter) tighten(rpm, tpm int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range []struct {
		b   *bucket
		lim int
	}{{&l.req, rpm}, {&l.tok, tpm}} {
		if lim := float64(x.lim); lim > 0 && (x.b.base <= 0 || lim < x.b.base) {
			x.b.base = lim
		}
	}
	l.apply()
}

// The process-wide registry: one Limiter per provider, keyed by base URL
// and API-key variable name (two keys of one provider have separate
// limits; two arms sharing a key share one). When configs of one provider
// disagree, the strictest limit holds.
var limiters = struct {
	sync.Mutex
	m map[string]*Limiter
}{m: map[string]*Limiter{}}

// LimiterFor returns the process-wide limiter of the provider at baseURL
// used with the key in keyEnv, tightened to rpm and tpm where they are
// stricter; nil when the provider has none and rpm and tpm are 0.
func LimiterFor(baseURL, keyEnv string, rpm, tpm int) *Limiter {
	key := strings.TrimRight(baseURL, "/") + "\x00" + keyEnv
	limiters.Lock()
	defer limiters.Unlock()
	l, ok := limiters.m[key]
	if !ok {
		if rpm <= 0 && tpm <= 0 {
			return nil
		}
		l = NewLimiter(rpm, tpm, nil)
		l.SetShare(defaultShare)
		limiters.m[key] = l
		return l
	}
	l.tighten(rpm, tpm)
	return l
}
