package telemetry

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"rebound/internal/buildinfo"
)

// Metric names, documented in docs/configuration.md ("Observability").
// Over the Prometheus endpoint dots become underscores, the unit is
// appended and counters end in _total: rebound_trials_total,
// rebound_outcomes_total, rebound_cost_usd_total, rebound_build_info.
const (
	MetricTrials          = "rebound.trials"                    // attribute arm: every stored trial once (attrition included)
	MetricOutcomes        = "rebound.outcomes"                  // attributes arm, metric, value (true, false, not_tested): one per graded trial and outcome metric
	MetricFaults          = "rebound.faults.injected"           // attribute class
	MetricProviderLatency = "rebound.provider.request.duration" // seconds; attributes model, status
	MetricProvider429     = "rebound.provider.rate_limited"     // attribute model
	MetricTokens          = "rebound.tokens"                    // attribute arm
	MetricCost            = "rebound.cost"                      // usd; attribute arm
	MetricAttrition       = "rebound.attrition"                 // attribute arm
	MetricBuildInfo       = "rebound.build.info"                // 1, attributes version, revision, go_version
)

// UnitUSD is the cost's unit, lower-case as Prometheus names want it
// (rebound_cost_usd_total).
const UnitUSD = "usd"

// The instruments are created on the global meter provider: they are no-ops
// until Setup installs one, and follow it once it does.
var inst = func() (i struct {
	trials, outcomes, faults, rateLimited, tokens, attrition metric.Int64Counter
	cost                                                     metric.Float64Counter
	latency                                                  metric.Float64Histogram
}) {
	m := otel.Meter("rebound")
	i.trials, _ = m.Int64Counter(MetricTrials, metric.WithUnit("{trial}"), metric.WithDescription("Stored trials by arm, each counted once (those lost to attrition included: rebound.attrition counts them apart)"))
	i.outcomes, _ = m.Int64Counter(MetricOutcomes, metric.WithUnit("{outcome}"), metric.WithDescription("Outcomes of graded trials by arm and outcome metric (one per trial and metric): value is true, false or not_tested"))
	i.faults, _ = m.Int64Counter(MetricFaults, metric.WithUnit("{fault}"), metric.WithDescription("Faults injected into tool calls, by fault class"))
	i.latency, _ = m.Float64Histogram(MetricProviderLatency, metric.WithUnit("s"), metric.WithDescription("Latency of each model provider request, retries included one by one"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
	i.rateLimited, _ = m.Int64Counter(MetricProvider429, metric.WithUnit("{request}"), metric.WithDescription("Model provider requests answered 429 Too Many Requests"))
	i.tokens, _ = m.Int64Counter(MetricTokens, metric.WithUnit("{token}"), metric.WithDescription("Model tokens billed (prompt + completion) by arm"))
	i.cost, _ = m.Float64Counter(MetricCost, metric.WithUnit(UnitUSD), metric.WithDescription("Model spend in US dollars by arm"))
	i.attrition, _ = m.Int64Counter(MetricAttrition, metric.WithUnit("{trial}"), metric.WithDescription("Trials lost to attrition (the provider or the agent's infrastructure failed), by arm"))
	bi := buildinfo.Get()
	build := metric.WithAttributes(attribute.String("version", bi.Version), attribute.String("revision", bi.Revision), attribute.String("go_version", bi.GoVersion))
	_, _ = m.Int64ObservableGauge(MetricBuildInfo, metric.WithDescription("The build of this rebound process (always 1): its version, VCS revision and Go toolchain"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(1, build)
			return nil
		}))
	return i
}()

// Trial is what a finished trial contributes to the metrics.
type Trial struct {
	Arm string
	// Outcomes maps each outcome metric to its verdict; nil is not tested.
	Outcomes map[string]*bool
	// Faults lists the fault class of every call that had one.
	Faults    []string
	Tokens    uint64
	CostUSD   float64
	Attrition bool
}

// RecordTrial counts one stored trial.
func RecordTrial(ctx context.Context, t Trial) {
	arm := attribute.String("arm", t.Arm)
	armSet := metric.WithAttributes(arm)
	inst.trials.Add(ctx, 1, armSet)
	if t.Attrition {
		inst.attrition.Add(ctx, 1, armSet)
	} else {
		for name, v := range t.Outcomes {
			value := "not_tested"
			if v != nil {
				value = strconv.FormatBool(*v)
			}
			inst.outcomes.Add(ctx, 1, metric.WithAttributes(arm, attribute.String("metric", name), attribute.String("value", value)))
		}
	}
	for _, class := range t.Faults {
		inst.faults.Add(ctx, 1, metric.WithAttributes(attribute.String("class", class)))
	}
	if t.Tokens > 0 {
		inst.tokens.Add(ctx, int64(t.Tokens), armSet)
	}
	if t.CostUSD > 0 {
		inst.cost.Add(ctx, t.CostUSD, armSet)
	}
}

// RecordProviderRequest records one model provider request: its latency,
// and a 429 when the provider throttled it. status is the HTTP status, 0
// when no response arrived.
func RecordProviderRequest(ctx context.Context, model string, status int, d time.Duration) {
	s := "error"
	if status > 0 {
		s = strconv.Itoa(status)
	}
	m := attribute.String("model", model)
	inst.latency.Record(ctx, d.Seconds(), metric.WithAttributes(m, attribute.String("status", s)))
	if status == 429 {
		inst.rateLimited.Add(ctx, 1, metric.WithAttributes(m))
	}
}
