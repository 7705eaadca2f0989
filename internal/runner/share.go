package runner

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"rebound/internal/endpoint"
)

// ShareProviderLimits keeps this worker's share of every provider's limits
// at 1/W, W being the workers polling queue for activities (read from
// Temporal every interval; a poller not seen for a minute is gone). The
// provider's limit then holds across all W workers, each pacing its own
// requests, without a shared counter. It returns when ctx ends.
func ShareProviderLimits(ctx context.Context, c client.Client, queue string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tq, err := c.DescribeTaskQueue(qctx, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		cancel()
		if err == nil {
			workers := map[string]bool{}
			for _, p := range tq.GetPollers() {
				if at := p.GetLastAccessTime(); at == nil || time.Since(at.AsTime()) < time.Minute {
					workers[p.GetIdentity()] = true
				}
			}
			if n := len(workers); n > 0 {
				endpoint.SetShare(1 / float64(n))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
