package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"rebound/internal/endpoint"
	"rebound/internal/telemetry"
)

// ModelCallSpan names the span of one provider request.
const ModelCallSpan = endpoint.ModelCallSpan

// newClient is the agent's model client: the shared client layer
// (endpoint) with the arm's timeout, the provider's process-wide limiter
// and the provider metrics.
func (a *Agent) newClient(limiter *endpoint.Limiter) *endpoint.Client {
	return endpoint.NewClient(endpoint.ClientConfig{
		BaseURL: a.cfg.BaseURL, Key: a.key, Model: a.cfg.Model,
		RequestTimeout: a.cfg.RequestTimeout, HTTPClient: a.opts.httpClient,
		Limiter: limiter, Sleep: a.opts.sleep,
		Observe: func(ctx context.Context, status int, elapsed time.Duration) {
			telemetry.RecordProviderRequest(ctx, a.cfg.Model, status, elapsed)
		},
	})
}

// retryPolicy is the arm's retry policy: MaxRetries retries, backoff from
// RetryBase doubling with jitter, no wait (a Retry-After included) above
// RetryMaxWait.
func (c Config) retryPolicy() endpoint.RetryPolicy {
	return endpoint.RetryPolicy{MaxRetries: c.MaxRetries, Base: c.RetryBase, MaxWait: c.RetryMaxWait, Jitter: true}
}

// complete sends one chat-completion request through the client layer,
// retrying provider failures. It returns the response, its raw body and
// the number of retries; a failure maps onto the agent's errors: a
// configuration error is ErrConfig, a provider failure that outlasted the
// retries is ErrAttrition.
func (r *run) complete(ctx context.Context, req openai.ChatCompletionRequest, estimate int) (openai.ChatCompletionResponse, []byte, int, error) {
	resp, raw, retries, err := r.a.client.Complete(ctx, req, estimate, r.a.cfg.retryPolicy())
	switch {
	case err == nil:
		return resp, raw, retries, nil
	case errors.Is(err, endpoint.ErrExhausted):
		return resp, nil, retries, fmt.Errorf("%w: %s", ErrAttrition, err.Error())
	case errors.Is(err, endpoint.ErrConfig):
		return resp, nil, retries, fmt.Errorf("%w: %s", ErrConfig, err.Error())
	}
	return resp, nil, retries, err
}
