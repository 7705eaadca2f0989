package telemetry

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A sweep of 60,000 trials is one trace; with a span per trial (and one per
// model call under it) that trace holds 60,000+ spans. REBOUND_TRACE_TRIALS
// keeps a fraction of the trials' spans, chosen per trial, while the
// sweep's own spans (sweep, the workflow, its activities, shards) are
// always kept, so the trace's shape and timing survive.

// EnvTraceTrials names the fraction of trials traced: 0..1, default 1
// (every trial). A trial is in or out by a hash of its scenario, variant,
// arm and seed, so a retried shard traces the same trials, and a trial's
// model calls go with it.
const EnvTraceTrials = "REBOUND_TRACE_TRIALS"

// TrialSpan is the name of a trial's span (activities start it with the
// trial's scenario, variant, arm and seed as attributes).
const TrialSpan = "trial"

// trialKeys are the trial span's attributes that identify the trial.
var trialKeys = []attribute.Key{"rebound.scenario", "rebound.variant", "rebound.arm", "rebound.seed"}

// traceTrials reads EnvTraceTrials: the fraction, and whether it was set
// to anything but 1.
func traceTrials(getenv func(string) string) (float64, bool, error) {
	v := strings.TrimSpace(getenv(EnvTraceTrials))
	if v == "" {
		return 1, false, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return 0, false, fmt.Errorf("%s=%q: want a fraction of trials to trace, from 0 to 1 (e.g. 0.01)", EnvTraceTrials, v)
	}
	return f, f < 1, nil
}

// trialSampler samples trial spans at ratio, per trial, under a sampled
// parent; every other span is base's to decide (children of a dropped
// trial follow their parent under the parent-based samplers).
type trialSampler struct {
	ratio float64
	base  sdktrace.Sampler
}

func (s trialSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	parent := trace.SpanContextFromContext(p.ParentContext)
	if p.Name != TrialSpan || !parent.IsSampled() {
		return s.base.ShouldSample(p)
	}
	res := sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: parent.TraceState()}
	if trialFraction(p.Attributes) < s.ratio {
		res.Decision = sdktrace.RecordAndSample
	}
	return res
}

func (s trialSampler) Description() string {
	return fmt.Sprintf("TrialSampler{%g,%s}", s.ratio, s.base.Description())
}

// trialFraction maps a trial's identifying attributes to [0, 1).
func trialFraction(attrs []attribute.KeyValue) float64 {
	h := fnv.New64a()
	for _, k := range trialKeys {
		for _, kv := range attrs {
			if kv.Key == k {
				h.Write([]byte(kv.Value.String()))
			}
		}
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11) / (1 << 53)
}

// envSampler is the sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// name, as the SDK reads them (which it does only when no sampler is
// given, so rebound reads them itself when it gives one).
func envSampler(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	ratio := func() (float64, error) {
		arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
		if arg == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		return f, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: rebound supports always_on, always_off, traceidratio and their parentbased_ forms", name)
}
