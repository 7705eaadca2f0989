// Package telemetry installs the OpenTelemetry SDK for a rebound process:
// traces and metrics exported over OTLP, configured only by the standard
// OTEL_* environment variables, and optionally a Prometheus registry the
// worker serves on /metrics.
//
// Nothing is exported unless the environment asks for it: with no
// OTEL_EXPORTER_OTLP_*ENDPOINT and no OTEL_TRACES_EXPORTER or
// OTEL_METRICS_EXPORTER set to otlp, Setup installs nothing and the process
// never opens a connection for telemetry.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"rebound/internal/buildinfo"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise.
const DefaultServiceName = "rebound"

// Options says what the process wants beyond the environment.
type Options struct {
	// Prometheus adds a pull reader whose registry Provider.MetricsHandler
	// serves (the worker's --listen).
	Prometheus bool
}

// Provider is what Setup installed.
type Provider struct {
	// Traces and Metrics say whether spans and metrics are exported over
	// OTLP.
	Traces, Metrics bool

	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	registry *prometheus.Registry
}

// Config is the export configuration read from the environment.
type Config struct {
	Traces, Metrics                 bool   // export over OTLP
	TracesProtocol, MetricsProtocol string // http/protobuf or grpc
	// TraceTrials is the fraction of trials whose spans are kept
	// (REBOUND_TRACE_TRIALS, default 1); TrialSampling says it is under 1.
	TraceTrials   float64
	TrialSampling bool
	// FailedTrials keeps every failed trial's spans on top of the
	// TraceTrials fraction (REBOUND_TRACE_FAILED_TRIALS): the decision is
	// made when the trial ends.
	FailedTrials bool
}

// ReadConfig reads the OTEL_* variables that decide whether and how to
// export. An exporter is on when OTEL_<SIGNAL>_EXPORTER is otlp, or when it
// is unset and an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or the
// signal's own) is set; OTEL_SDK_DISABLED=true turns everything off.
func ReadConfig(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var cfg Config
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return cfg, nil
	}
	var err error
	if cfg.Traces, err = exporterOn(getenv, "TRACES"); err != nil {
		return cfg, err
	}
	if cfg.Metrics, err = exporterOn(getenv, "METRICS"); err != nil {
		return cfg, err
	}
	if cfg.TracesProtocol, err = protocol(getenv, "TRACES"); err != nil {
		return cfg, err
	}
	if cfg.MetricsProtocol, err = protocol(getenv, "METRICS"); err != nil {
		return cfg, err
	}
	if cfg.TraceTrials, cfg.TrialSampling, err = traceTrials(getenv); err != nil {
		return cfg, err
	}
	if cfg.FailedTrials, err = traceFailedTrials(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func exporterOn(getenv func(string) string, signal string) (bool, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%s=%q: rebound exports otlp or none", name, v)
	}
}

func protocol(getenv func(string) string, signal string) (string, error) {
	v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if v == "" {
		v = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch v {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	default:
		return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: rebound supports http/protobuf and grpc", v)
	}
}

// Setup installs the global tracer and meter providers the environment
// asks for, and the W3C trace-context propagator. Call it once per process
// (instruments bind to the first providers installed) and Shutdown before
// the process exits: it flushes what is buffered. The OTLP exporters read
// the rest of their configuration (endpoint, headers, timeout, TLS,
// compression) from the OTEL_EXPORTER_OTLP_* variables themselves.
func Setup(ctx context.Context, opts Options) (*Provider, error) {
	cfg, err := ReadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	p := &Provider{Traces: cfg.Traces, Metrics: cfg.Metrics}
	if !cfg.Traces && !cfg.Metrics && !opts.Prometheus {
		return p, nil
	}
	res, err := resource.New(ctx,
		// service.version: the build (internal/buildinfo); the
		// environment may override either.
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(buildinfo.Get().Short())),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	if cfg.Traces {
		var exp sdktrace.SpanExporter
		if cfg.TracesProtocol == "grpc" {
			exp, err = otlptracegrpc.New(ctx)
		} else {
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		topts, err := traceOptions(cfg, sdktrace.NewBatchSpanProcessor(exp), os.Getenv)
		if err != nil {
			return nil, err
		}
		topts = append(topts, sdktrace.WithResource(res))
		p.tp = sdktrace.NewTracerProvider(topts...)
		otel.SetTracerProvider(p.tp)
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	}
	var readers []sdkmetric.Option
	if cfg.Metrics {
		var exp sdkmetric.Exporter
		if cfg.MetricsProtocol == "grpc" {
			exp, err = otlpmetricgrpc.New(ctx)
		} else {
			exp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			p.shutdownTraces(ctx)
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		// The interval follows OTEL_METRIC_EXPORT_INTERVAL.
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if opts.Prometheus {
		p.registry = prometheus.NewRegistry()
		p.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(p.registry))
		if err != nil {
			p.shutdownTraces(ctx)
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
	}
	if len(readers) > 0 {
		p.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res), sdkmetric.WithView(temporalHelpView))...)
		otel.SetMeterProvider(p.mp)
	}
	return p, nil
}

// traceOptions are the tracer provider's sampler and processor for cfg,
// in front of the exporting processor export. The sampler and batching
// follow OTEL_TRACES_SAMPLER and OTEL_BSP_*; REBOUND_TRACE_TRIALS samples
// the trials' spans on top, when they start, or, with
// REBOUND_TRACE_FAILED_TRIALS, when they end, keeping every failed one.
func traceOptions(cfg Config, export sdktrace.SpanProcessor, getenv func(string) string) ([]sdktrace.TracerProviderOption, error) {
	if !cfg.TrialSampling && !cfg.FailedTrials {
		return []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(export)}, nil
	}
	base, err := envSampler(getenv)
	if err != nil {
		return nil, err
	}
	if cfg.FailedTrials {
		return []sdktrace.TracerProviderOption{
			sdktrace.WithSampler(recordTrials{base: base}),
			sdktrace.WithSpanProcessor(newFailedTrials(export, cfg.TraceTrials)),
		}, nil
	}
	return []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(trialSampler{ratio: cfg.TraceTrials, base: base}),
		sdktrace.WithSpanProcessor(export),
	}, nil
}

// MetricsHandler serves the Prometheus registry, or is nil when Setup was
// not asked for it.
func (p *Provider) MetricsHandler() http.Handler {
	if p == nil || p.registry == nil {
		return nil
	}
	return promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{})
}

// ForceFlush exports what is buffered now.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.ForceFlush(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the exporters.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func (p *Provider) shutdownTraces(ctx context.Context) {
	if p.tp != nil {
		_ = p.tp.Shutdown(ctx)
	}
}
