package llmtest

import (
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// EstimateTokens is how the server counts a request against its
// tokens-per-minute limit when it arrives, the way hosted providers do:
// about one token per 4 bytes of the request plus the completion allowance
// (max_tokens). Usage reported in the response replaces the estimate.
func EstimateTokens(body []byte, req openai.ChatCompletionRequest) int {
	//lint:ignore SA1019 a server counts the allowance a client sends, in either field
	return len(body)/4 + max(req.MaxTokens, req.MaxCompletionTokens)
}

// Limit makes the server enforce a provider's requests-per-minute and
// tokens-per-minute limits (0: no limit) the way hosted providers do:
// continuously refilled buckets holding window's worth of allowance (limits
// are enforced over windows shorter than a minute). A request that does not
// fit is answered 429 with retry-after-ms, counted in Stats.RateLimited.
func (s *Server) Limit(rpm, tpm int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if window <= 0 {
		window = time.Second
	}
	s.limits = &limits{req: newServerBucket(float64(rpm), window), tok: newServerBucket(float64(tpm), window)}
}

type limits struct{ req, tok *serverBucket }

type serverBucket struct {
	perSec, capacity, avail float64
	last                    time.Time
}

func newServerBucket(perMin float64, window time.Duration) *serverBucket {
	if perMin <= 0 {
		return nil
	}
	b := &serverBucket{perSec: perMin / 60}
	b.capacity = max(b.perSec*window.Seconds(), 1)
	b.avail = b.capacity
	return b
}

func (b *serverBucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.avail = min(b.capacity, b.avail+dt*b.perSec)
		b.last = now
	}
}

// need returns how long until n fits (0: it fits now).
func (b *serverBucket) need(n float64) time.Duration {
	if b == nil || b.avail >= n {
		return 0
	}
	return time.Duration((n - b.avail) / b.perSec * float64(time.Second))
}

// admit takes one request and tokens when both fit, else reports the wait.
func (l *limits) admit(now time.Time, tokens int) (time.Duration, bool) {
	for _, b := range []*serverBucket{l.req, l.tok} {
		if b != nil {
			b.refill(now)
		}
	}
	n := float64(tokens)
	if l.tok != nil && n > l.tok.capacity {
		n = l.tok.capacity // a request bigger than the window waits for a full one
	}
	wait := max(l.req.need(1), l.tok.need(n))
	if wait > 0 {
		return wait, false
	}
	if l.req != nil {
		l.req.avail--
	}
	if l.tok != nil {
		l.tok.avail -= n
	}
	return 0, true
}

// settle replaces a request's estimate with its reported usage.
func (l *limits) settle(now time.Time, estimate, actual int) {
	if l.tok == nil || actual <= 0 {
		return
	}
	l.tok.refill(now)
	l.tok.avail = min(l.tok.capacity, l.tok.avail+float64(min(estimate, int(l.tok.capacity))-actual))
}
