package runner

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

var tracer = otel.Tracer("rebound/internal/runner")

// SweepSpan names the span of a sweep started and followed by this process.
const SweepSpan = "sweep"

// tracerOptions configure the Temporal tracing interceptors of clients and
// workers alike. Queries are not traced: following a sweep asks for its
// progress every half second, which made two spans per poll in the
// follower's trace (about 7,200 an hour) and, from commands that ask once
// (sweep status), one-span orphan traces. Both halves must agree: a worker
// tracing queries a client does not would start a root span per query.
var tracerOptions = temporalotel.TracerOptions{DisableQueryTracing: true}

// clientOnly hides the WorkerInterceptor half of the tracing interceptor:
// the SDK would otherwise also install it on every worker built from the
// client, and NewWorker installs its own (workers may be built from clients
// that were not instrumented).
type clientOnly struct{ interceptor.ClientInterceptor }

// InstrumentClientOptions adds OpenTelemetry to a Temporal client: a span
// per client call (StartWorkflow:Sweep, ...) carrying the trace context into
// the workflow, through the global tracer provider; and the SDK's metrics
// (temporal_* : requests, latencies, task slots, ...) through the global
// meter provider. Both are no-ops until telemetry.Setup installs providers.
func InstrumentClientOptions(opts client.Options) (client.Options, error) {
	tracing, err := temporalotel.NewTracingInterceptor(tracerOptions)
	if err != nil {
		return opts, fmt.Errorf("tracing interceptor: %w", err)
	}
	opts.Interceptors = append(opts.Interceptors, clientOnly{tracing})
	opts.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		UseMonotonicCounters: true,
		OnError:              otel.Handle, // the default panics
	})
	return opts, nil
}

// StartSweepSpan starts the span of a sweep this process starts and
// follows; the workflow's spans (StartWorkflow:Sweep, RunWorkflow:Sweep,
// its shards, trials and model calls) descend from it.
func StartSweepSpan(ctx context.Context, sweepID, planName string) (context.Context, trace.Span) {
	return tracer.Start(ctx, SweepSpan, trace.WithAttributes(
		attribute.String("rebound.sweep_id", sweepID), attribute.String("rebound.plan", planName)))
}
