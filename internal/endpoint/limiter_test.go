package endpoint

import (
	"math"
	"os"
	"sort"
	"sync"
	"testing"
	"time"
)

// 100 concurrent requests on a 60-requests-per-minute limiter at a frozen
// clock: the first (the burst: one second's allowance) goes at once, the
// other 99 are given distinct slots one second apart. Run with -race.
func TestLimiterConcurrentRequests(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := NewLimiter(60, 0, func() time.Time { return now })
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := l.Reserve(0)
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	for i, d := range waits {
		want := time.Duration(0)
		if i >= 1 {
			want = time.Duration(i) * time.Second
		}
		if d != want {
			t.Fatalf("wait %d = %v, want %v (all: %v)", i, d, want, waits)
		}
	}
}

// The token bucket: reservations use the estimate, settle corrects it with
// the actual usage, and a cancelled reservation is given back.
func TestLimiterTokens(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := NewLimiter(0, 6000, func() time.Time { return now }) // 100/s, burst 100
	if d := l.Reserve(80); d != 0 {
		t.Fatalf("first reservation waits %v", d)
	}
	l.Settle(80, 10) // it used 10: 90 left
	if d := l.Reserve(90); d != 0 {
		t.Fatalf("after settling, waits %v", d)
	}
	if d := l.Reserve(30); d != 300*time.Millisecond { // 30 short at 100/s
		t.Fatalf("over budget: waits %v, want 300ms", d)
	}
	l.Cancel(30)
	now = now.Add(5 * time.Second) // refills to the one-second burst, not 500
	if d := l.Reserve(100); d != 0 {
		t.Fatalf("after refill: waits %v", d)
	}
	if d := l.Reserve(1); d != 10*time.Millisecond {
		t.Fatalf("idle time saved up more than a second's allowance: waits %v", d)
	}
	l.Cancel(1)
	if d := l.Reserve(100000); d != time.Minute { // capped at one minute's allowance
		t.Fatalf("oversized request waits %v", d)
	}
}

// A 429 slows every request of the provider: all wait out its
// Retry-After, the rate drops by a fifth (once per second however many
// 429s arrive), and successes win it back.
func TestLimiterAdaptsToRateLimits(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := NewLimiter(600, 0, func() time.Time { return now }) // 10/s
	l.Throttle(2 * time.Second)
	l.Throttle(2 * time.Second) // the same burst: no second cut
	if d := l.Reserve(0); d != 2*time.Second {
		t.Fatalf("after a 429 with retry-after 2s, a request waits %v", d)
	}
	if l.req.perMin != 480 {
		t.Fatalf("rate after a 429 = %v/min, want 480", l.req.perMin)
	}
	now = now.Add(1100 * time.Millisecond)
	l.Throttle(0)
	if math.Abs(l.req.perMin-384) > 1e-9 {
		t.Fatalf("rate after a second 429 a second later = %v/min, want 384", l.req.perMin)
	}
	for i := 0; i < 100; i++ {
		l.Recover()
	}
	if math.Abs(l.req.perMin-600) > 1e-9 {
		t.Fatalf("rate after 100 successes = %v/min, want the configured 600", l.req.perMin)
	}
	l.SetShare(1.0 / 3)
	if math.Abs(l.req.perMin-200) > 1e-9 {
		t.Fatalf("a third of the provider = %v/min, want 200", l.req.perMin)
	}
}

// Many goroutines over a real clock never exceed the rate: at 2 requests
// per second with a burst of 2, the 100th request gets the slot 49s out.
func TestLimiterHoldsRateUnderConcurrency(t *testing.T) {
	l := NewLimiter(120, 0, nil)
	var mu sync.Mutex
	var latest time.Duration
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := l.Reserve(0)
			mu.Lock()
			if d > latest {
				latest = d
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if latest < 48900*time.Millisecond || latest > 49*time.Second {
		t.Fatalf("last slot at %v, want about 49s", latest)
	}
}

// One limiter per (base URL, key variable), shared by every agent of the
// process; the strictest limit wins.
func TestLimiterRegistry(t *testing.T) {
	a := LimiterFor("http://registry-test/v1/", "KEY_A", 100, 0)
	b := LimiterFor("http://registry-test/v1", "KEY_A", 50, 1000)
	c := LimiterFor("http://registry-test/v1", "KEY_B", 100, 0)
	if a != b || a == c {
		t.Fatalf("registry: a=%p b=%p c=%p", a, b, c)
	}
	if a.req.perMin != 50 || a.tok.perMin != 1000 {
		t.Errorf("limits = %v rpm %v tpm, want the strictest", a.req.perMin, a.tok.perMin)
	}
	if LimiterFor("http://registry-test-none/v1", "K", 0, 0) != nil {
		t.Errorf("a provider without limits got a limiter")
	}
}

// The limiter tests pin exact arithmetic; the headroom is checked on its
// own in TestLimiterHeadroom.
func TestMain(m *testing.M) {
	headroom = 1
	os.Exit(m.Run())
}

// In production the limiter aims at 97% of a limit, so jitter on the way
// to the provider does not turn into 429s (see BenchmarkProviderLimits).
func TestLimiterHeadroom(t *testing.T) {
	defer func(h float64) { headroom = h }(headroom)
	headroom = Headroom
	l := NewLimiter(600, 60000, func() time.Time { return time.Unix(1700000000, 0) })
	if math.Abs(l.req.perMin-582) > 1e-9 || math.Abs(l.tok.perMin-58200) > 1e-9 {
		t.Fatalf("rates in force = %v rpm, %v tpm; want 97%% of 600 and 60000", l.req.perMin, l.tok.perMin)
	}
}
