package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/agent/llm/llmtest"
	"rebound/core/harness"
	"rebound/internal/endpoint"
)

// BenchmarkProviderLimits measures how well the limiter holds a provider's
// limits against a local server that enforces them over one-second windows
// (as hosted providers do): the share of the limit used and the share of
// requests answered 429, with 1 and with 3 workers (each worker a separate
// limiter holding 1/3 of the limit, which is what a worker sets from the
// number of workers polling its task queue). Wall-clock bound: each case
// runs REBOUND_LIMITS_BENCH_SECONDS (default 30) seconds: the last
// second's reservations are cut off by the deadline, so shorter runs read low.
//
//	go test -run '^$' -bench ProviderLimits -benchtime 1x ./agent/llm/
func BenchmarkProviderLimits(b *testing.B) {
	secs := 30
	if v := os.Getenv("REBOUND_LIMITS_BENCH_SECONDS"); v != "" {
		fmt.Sscan(v, &secs)
	}
	for _, c := range []struct {
		name     string
		rpm, tpm int
	}{{"rpm", 600, 0}, {"tpm", 0, 600000}} {
		for _, workers := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				for b.Loop() {
					use, share429, attrition := limitsRun(b, c.rpm, c.tpm, workers, time.Duration(secs)*time.Second)
					b.ReportMetric(100*use, "use%")
					b.ReportMetric(100*share429, "429%")
					b.ReportMetric(float64(attrition), "attrition")
				}
			})
		}
	}
}

// limitsRun drives `workers` limiters with 8 concurrent trials each for d
// and returns the share of the limit used, the share of requests answered
// 429 and the trials lost to attrition.
func limitsRun(b *testing.B, rpm, tpm, workers int, d time.Duration) (use, share429 float64, attrition int) {
	srv := llmtest.New(b)
	srv.Limit(rpm, tpm, time.Second)
	srv.Policy(func(req openai.ChatCompletionRequest) llmtest.Reply {
		// Usage close to what the request was counted at: prompt bytes / 4
		// and most of the completion allowance.
		body := 0
		for _, m := range req.Messages {
			body += len(m.Content) + 40
		}
		r := llmtest.Text("done")
		if req.ResponseFormat != nil {
			r = llmtest.Text(`{"status":"completed"}`)
		}
		return r.WithUsage(body/4+200, 150).WithDelay(30 * time.Millisecond)
	})
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		// A worker is a process: its own limiter, holding 1/workers.
		l := endpoint.NewLimiter(rpm, tpm, nil)
		l.SetShare(1 / float64(workers))
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := New(Config{Settings: endpoint.Settings{BaseURL: srv.BaseURL(), Model: "m", MaxTurns: 2, MaxTokens: 200}, Prompt: "p", MaxRetries: 6, RequestTimeout: 10 * time.Second})
				if err != nil {
					b.Error(err)
					return
				}
				a.client = a.newClient(l)
				for ctx.Err() == nil {
					_, err := a.Run(ctx, benchEnv{}, testTask)
					if errors.Is(err, ErrAttrition) {
						mu.Lock()
						attrition++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Minutes()
	st := srv.Stats()
	if st.Requests > 0 {
		share429 = float64(st.RateLimited) / float64(st.Requests)
	}
	// The most the server admits in the run: the limit over the elapsed
	// time plus the one window's allowance its bucket starts with.
	if rpm > 0 {
		use = float64(st.Requests-st.RateLimited) / (float64(rpm)*elapsed + float64(rpm)/60)
	} else {
		use = float64(st.BilledTokens()) / (float64(tpm)*elapsed + float64(tpm)/60)
	}
	b.Logf("%d requests, %d answered 429, %d tokens billed in %.1fs", st.Requests, st.RateLimited, st.BilledTokens(), elapsed*60)
	return use, share429, attrition
}

// benchEnv offers no tools: each trial is one turn and the claim.
type benchEnv struct{}

func (benchEnv) Tools() []harness.Tool { return nil }
func (benchEnv) Call(context.Context, string, map[string]any) harness.Result {
	return harness.Result{}
}
func (benchEnv) Sleep(int64)   {}
func (benchEnv) Now() int64    { return 0 }
func (benchEnv) Replan(string) {}
