package telemetry

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// REBOUND_TRACE_FAILED_TRIALS with REBOUND_TRACE_TRIALS=ratio on a sweep of
// 2,000 trials, every seventh of which fails (by its verdict, or by an
// error status): every failed trial is kept with all its spans, about
// ratio of the others are, the sweep's spans always are, nothing is kept
// in part, and nothing stays held once the trials have ended.
func TestFailedTrialsKept(t *testing.T) {
	for _, ratio := range []float64{0, 0.1, 1} {
		cfg := Config{TraceTrials: ratio, TrialSampling: ratio < 1, FailedTrials: true}
		rec := tracetest.NewSpanRecorder()
		opts, err := traceOptions(cfg, rec, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(opts...)
		tr := tp.Tracer("test")
		ctx, sweep := tr.Start(context.Background(), "sweep")
		failed, late := map[int64]bool{}, map[int64]bool{}
		var lateCalls []trace.Span
		for shard := range 20 {
			sctx, s := tr.Start(ctx, "shard")
			for i := range 100 {
				seed := int64(shard*100 + i)
				tctx, tspan := tr.Start(sctx, TrialSpan, trace.WithAttributes(attribute.String("rebound.scenario", "charge-502-twice"),
					attribute.String("rebound.variant", "502-twice"), attribute.String("rebound.arm", "careful"), attribute.Int64("rebound.seed", seed)))
				if !tspan.SpanContext().IsSampled() {
					t.Fatalf("a trial span was not recorded: its decision belongs to its end")
				}
				cctx, call := tr.Start(tctx, "model.call")
				_, http := tr.Start(cctx, "http.request")
				http.End()
				call.End()
				if seed%13 == 0 {
					// A child that outlives its trial follows the trial's decision.
					_, c := tr.Start(tctx, "model.call")
					lateCalls = append(lateCalls, c)
					late[seed] = true
				}
				switch {
				case seed%7 == 0:
					failed[seed] = true
					tspan.SetAttributes(FailedAttr.Bool(true))
				case seed%7 == 3:
					failed[seed] = true
					tspan.SetStatus(codes.Error, "retried")
				default:
					tspan.SetAttributes(FailedAttr.Bool(false))
				}
				tspan.End()
			}
			s.End()
		}
		for _, c := range lateCalls {
			c.End()
		}
		sweep.End()

		kept := map[string]int{}
		byTrial := map[trace.SpanID]int64{}
		for _, s := range rec.Ended() {
			kept[s.Name()]++
			if s.Name() == TrialSpan {
				for _, kv := range s.Attributes() {
					if kv.Key == "rebound.seed" {
						byTrial[s.SpanContext().SpanID()] = kv.Value.AsInt64()
					}
				}
			}
		}
		if kept["sweep"] != 1 || kept["shard"] != 20 {
			t.Fatalf("ratio %g: the sweep's spans were not all kept: %v", ratio, kept)
		}
		keptFailed, keptOther, wantLate := 0, 0, 0
		for _, seed := range byTrial {
			if failed[seed] {
				keptFailed++
			} else {
				keptOther++
			}
			if late[seed] {
				wantLate++
			}
		}
		if keptFailed != len(failed) {
			t.Errorf("ratio %g: %d of %d failed trials kept, want all", ratio, keptFailed, len(failed))
		}
		others := 2000 - len(failed)
		switch {
		case ratio == 0 && keptOther != 0, ratio == 1 && keptOther != others:
			t.Errorf("ratio %g: %d of %d trials that passed kept", ratio, keptOther, others)
		case ratio == 0.1 && (keptOther < others/20 || keptOther > others*3/20):
			t.Errorf("ratio 0.1: %d of %d trials that passed kept, want about a tenth", keptOther, others)
		}
		n := len(byTrial)
		if kept["http.request"] != n || kept["model.call"] != n+wantLate {
			t.Errorf("ratio %g: %d trials kept with %d model calls and %d requests, want every kept trial whole (%d calls) and no other's",
				ratio, n, kept["model.call"], kept["http.request"], n+wantLate)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A trial's spans are held only while it runs.
func TestFailedTrialsHoldNothingAfterwards(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	p := newFailedTrials(rec, 0)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(recordTrials{base: sdktrace.AlwaysSample()}), sdktrace.WithSpanProcessor(p))
	tr := tp.Tracer("test")
	ctx, sweep := tr.Start(context.Background(), "sweep")
	tctx, trial := tr.Start(ctx, TrialSpan)
	_, call := tr.Start(tctx, "model.call")
	if p.held() != 2 {
		t.Fatalf("%d spans held while a trial and its call run, want 2", p.held())
	}
	call.End()
	trial.End()
	sweep.End()
	if p.held() != 0 {
		t.Fatalf("%d spans still held after the trial ended", p.held())
	}
	if len(rec.Ended()) != 1 || rec.Ended()[0].Name() != "sweep" {
		t.Fatalf("exported %d spans, want only the sweep's (the trial passed, ratio 0)", len(rec.Ended()))
	}
}

func TestTraceFailedTrialsVariable(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false, " TRUE ": true} {
		got, err := traceFailedTrials(func(string) string { return v })
		if err != nil || got != want {
			t.Errorf("traceFailedTrials(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := traceFailedTrials(func(string) string { return "failed" }); err == nil || !strings.Contains(err.Error(), EnvTraceFailedTrials) {
		t.Errorf("traceFailedTrials(failed) = %v, want an error naming %s", err, EnvTraceFailedTrials)
	}
	cfg, err := ReadConfig(func(k string) string {
		return map[string]string{EnvTraceFailedTrials: "true", EnvTraceTrials: "0"}[k]
	})
	if err != nil || !cfg.FailedTrials || cfg.TraceTrials != 0 {
		t.Fatalf("ReadConfig = %+v, %v", cfg, err)
	}
}
