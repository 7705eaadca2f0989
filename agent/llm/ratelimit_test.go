package llm

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"rebound/agent/llm/llmtest"
)

// 100 concurrent requests on a 60-requests-per-minute limiter at a frozen
// clock: the first 10 (the burst: ten seconds' allowance) go at once, the
// other 90 are given distinct slots one second apart. Run with -race.
func TestLimiterConcurrentRequests(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := newLimiter(60, 0, func() time.Time { return now })
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := l.reserve(0)
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	for i, d := range waits {
		want := time.Duration(0)
		if i >= 10 {
			want = time.Duration(i-9) * time.Second
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
	l := newLimiter(0, 6000, func() time.Time { return now }) // 100/s, burst 1000
	if d := l.reserve(800); d != 0 {
		t.Fatalf("first reservation waits %v", d)
	}
	l.settle(800, 100) // it used 100: 900 left
	if d := l.reserve(900); d != 0 {
		t.Fatalf("after settling, waits %v", d)
	}
	if d := l.reserve(300); d != 3*time.Second { // 300 short at 100/s
		t.Fatalf("over budget: waits %v, want 3s", d)
	}
	l.cancel(300)
	now = now.Add(5 * time.Second) // +500
	if d := l.reserve(500); d != 0 {
		t.Fatalf("after refill: waits %v", d)
	}
	if d := l.reserve(100000); d != time.Minute { // capped at one minute's allowance
		t.Fatalf("oversized request waits %v", d)
	}
}

// Many goroutines over a real clock never exceed the rate: at 2 requests
// per second with a burst of 20, the 100th request gets the slot 40s out.
func TestLimiterHoldsRateUnderConcurrency(t *testing.T) {
	l := newLimiter(120, 0, nil)
	var mu sync.Mutex
	var latest time.Duration
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := l.reserve(0)
			mu.Lock()
			if d > latest {
				latest = d
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if latest < 39900*time.Millisecond || latest > 40*time.Second {
		t.Fatalf("last slot at %v, want about 40s", latest)
	}
}

// One limiter per (base URL, key variable), shared by every agent of the
// process; the strictest limit wins.
func TestLimiterRegistry(t *testing.T) {
	a := limiterFor("http://registry-test/v1/", "KEY_A", 100, 0)
	b := limiterFor("http://registry-test/v1", "KEY_A", 50, 1000)
	c := limiterFor("http://registry-test/v1", "KEY_B", 100, 0)
	if a != b || a == c {
		t.Fatalf("registry: a=%p b=%p c=%p", a, b, c)
	}
	if a.req.perMin != 50 || a.tok.perMin != 1000 {
		t.Errorf("limits = %v rpm %v tpm, want the strictest", a.req.perMin, a.tok.perMin)
	}
	if limiterFor("http://registry-test-none/v1", "K", 0, 0) != nil {
		t.Errorf("a provider without limits got a limiter")
	}
}

// Agents on concurrent trials share the provider's limiter: with 1
// request per minute, the second request of the process waits a minute.
func TestAgentsShareRateLimit(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Text("done"))
	var sl sleeps
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		a, _ := newAgent(t, srv, func(c *Config) { c.RequestsPerMinute = 1; c.MaxTurns = 1 }, WithSleep(sl.sleep))
		env, _ := newEnv(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Run(context.Background(), env, testTask); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	waits := sl.all()
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	// 3 agents x 2 requests (turn + claim) = 6 requests, 1 free.
	if len(waits) != 5 {
		t.Fatalf("waits = %v, want 5", waits)
	}
	for i, d := range waits {
		want := time.Duration(i+1) * time.Minute
		if d < want-time.Second || d > want {
			t.Errorf("wait %d = %v, want about %v", i+1, d, want)
		}
	}
}
