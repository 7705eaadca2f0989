package telemetry

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// REBOUND_TRACE_TRIALS=0.1 on a sweep of 2,000 trials: about a tenth of
// the trial spans are kept, each with its model calls, the others with
// none; the sweep's and the shards' spans are all kept; the same trial is
// in or out every time (a retried shard traces the same trials).
func TestTrialSampling(t *testing.T) {
	ratio, on, err := traceTrials(func(string) string { return "0.1" })
	if err != nil || !on || ratio != 0.1 {
		t.Fatalf("traceTrials(0.1) = %v %v %v", ratio, on, err)
	}
	base, err := envSampler(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	run := func() map[string]int {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(trialSampler{ratio: ratio, base: base}))
		tr := tp.Tracer("test")
		ctx, sweep := tr.Start(context.Background(), "sweep")
		kept := map[string]int{}
		for shard := range 20 {
			sctx, s := tr.Start(ctx, "shard")
			for seed := range 100 {
				tctx, trial := tr.Start(sctx, TrialSpan, trace.WithAttributes(attribute.String("rebound.scenario", "charge-502-twice"),
					attribute.String("rebound.variant", "502-twice"), attribute.String("rebound.arm", "careful"), attribute.Int64("rebound.seed", int64(shard*100+seed))))
				_, call := tr.Start(tctx, "model.call")
				if call.SpanContext().IsSampled() != trial.SpanContext().IsSampled() {
					t.Fatalf("a model call's sampling differs from its trial's")
				}
				call.End()
				trial.End()
			}
			s.End()
		}
		sweep.End()
		for _, s := range rec.Ended() {
			kept[s.Name()]++
			if s.SpanContext().TraceID() != sweep.SpanContext().TraceID() {
				t.Fatalf("span %s left the sweep's trace", s.Name())
			}
		}
		return kept
	}
	kept := run()
	if kept["sweep"] != 1 || kept["shard"] != 20 {
		t.Fatalf("the sweep's spans were sampled: %v", kept)
	}
	if n := kept[TrialSpan]; n < 150 || n > 250 || kept["model.call"] != n {
		t.Fatalf("%d trial spans and %d model calls kept of 2,000, want about 200 of each", n, kept["model.call"])
	}
	if again := run(); again[TrialSpan] != kept[TrialSpan] {
		t.Fatalf("a second run kept %d trials, the first %d: the choice is not per trial", again[TrialSpan], kept[TrialSpan])
	}
	// 0 keeps no trial, 1 (or unset) keeps them all without a sampler.
	if r, on, err := traceTrials(func(string) string { return "1" }); err != nil || on || r != 1 {
		t.Fatalf("traceTrials(1) = %v %v %v", r, on, err)
	}
	for _, bad := range []string{"1.5", "-0.1", "all", "NaN"} {
		if _, _, err := traceTrials(func(string) string { return bad }); err == nil || !strings.Contains(err.Error(), EnvTraceTrials) {
			t.Errorf("traceTrials(%q) = %v, want an error naming %s", bad, err, EnvTraceTrials)
		}
	}
	if _, err := envSampler(func(k string) string {
		return map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}[k]
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := envSampler(func(string) string { return "jaeger_remote" }); err == nil {
		t.Fatal("an unknown OTEL_TRACES_SAMPLER was accepted")
	}
	if _, err := ReadConfig(func(k string) string { return map[string]string{EnvTraceTrials: "2"}[k] }); err == nil {
		t.Fatal("ReadConfig accepted REBOUND_TRACE_TRIALS=2")
	}
}
