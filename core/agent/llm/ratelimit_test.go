package llm

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/endpoint"
)

// Agents on concurrent trials share the provider's limiter: with 2
// requests per minute, each request of the process after the first waits
// half a minute more than the one before (a little more: the limiter aims
// at endpoint.Headroom of the limit).
func TestAgentsShareRateLimit(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Text("done"))
	var sl sleeps
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		a, _ := newAgent(t, srv, func(c *Config) { c.RequestsPerMinute = 2; c.MaxTurns = 1 }, WithSleep(sl.Sleep))
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
	waits := sl.All()
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	// 3 agents x 2 requests (turn + claim) = 6 requests, 1 free.
	if len(waits) != 5 {
		t.Fatalf("waits = %v, want 5", waits)
	}
	for i, d := range waits {
		want := time.Duration(float64(i+1) * float64(time.Minute) / (2 * endpoint.Headroom))
		if d < want-time.Second || d > want {
			t.Errorf("wait %d = %v, want about %v", i+1, d, want)
		}
	}
}
