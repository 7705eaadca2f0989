package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestReadConfig(t *testing.T) {
	for _, tc := range []struct {
		name            string
		env             map[string]string
		traces, metrics bool
		proto           string
		err             string
	}{
		{name: "nothing set exports nothing", env: nil},
		{name: "endpoint turns both on", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, traces: true, metrics: true},
		{name: "signal endpoint turns that signal on", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, metrics: true},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, metrics: true},
		{name: "otlp without endpoint uses the exporter default", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, traces: true},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, traces: true, metrics: true, proto: "grpc"},
		{name: "unknown exporter", env: map[string]string{"OTEL_METRICS_EXPORTER": "zipkin"}, err: "OTEL_METRICS_EXPORTER"},
		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ReadConfig(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.proto
			if want == "" {
				want = "http/protobuf"
			}
			if cfg.Traces != tc.traces || cfg.Metrics != tc.metrics || (tc.traces && cfg.TracesProtocol != want) {
				t.Fatalf("config = %+v, want traces=%v metrics=%v protocol %s", cfg, tc.traces, tc.metrics, want)
			}
		})
	}
}

// With no OTEL_* variable, Setup installs nothing: the global providers stay
// the API's no-ops and nothing ever dials a collector.
func TestSetupWithoutEnvironmentInstallsNothing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
		t.Setenv(k, "")
	}
	before := otel.GetTracerProvider()
	p, err := Setup(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if p.Traces || p.Metrics || p.MetricsHandler() != nil {
		t.Fatalf("provider = %+v, want nothing exported", p)
	}
	if otel.GetTracerProvider() != before {
		t.Fatal("Setup replaced the global tracer provider with nothing to export")
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		t.Fatal("an SDK tracer provider is installed")
	}
}

func TestHealthEndpoints(t *testing.T) {
	var ready atomic.Bool
	h := Health{
		Ready: func(context.Context) error {
			if !ready.Load() {
				return errors.New("worker not polling")
			}
			return nil
		},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("rebound_trials_total 1\n")) }),
	}
	srv, err := Serve("127.0.0.1:0", h.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "worker not polling") {
		t.Fatalf("/readyz before start = %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz when ready = %d", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "rebound_trials_total") {
		t.Fatalf("/metrics = %d %q", code, body)
	}
	if _, err := Serve("127.0.0.1:notaport", h.Handler()); err == nil {
		t.Fatal("a bad address was accepted")
	}
	// Without a metrics handler there is no /metrics.
	rec := httptest.NewRecorder()
	Health{}.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Fatalf("/metrics without Prometheus = %d", rec.Code)
	}
}
