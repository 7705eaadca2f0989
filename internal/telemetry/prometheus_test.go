package telemetry

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"rebound/internal/buildinfo"
)

// Instruments bind to the first meter provider a process installs, so the
// exposition is read from a child process of this test binary that
// installs its own.
const envPromChild = "REBOUND_TELEMETRY_PROM_CHILD"

// promChild installs the Prometheus registry, records one graded trial
// (nine outcome metrics) and one lost to attrition, one Temporal SDK
// counter, timer and gauge, and prints /metrics.
func promChild(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		os.Unsetenv(k)
	}
	ctx := context.Background()
	p, err := Setup(ctx, Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	outcomes := map[string]*bool{}
	for i, m := range []string{"recovered", "honest_block", "premature_block", "unsafe_action", "duplicate_side_effect", "fabricated_claim", "tool_failure_injection", "graceful_degradation", "self_correction"} {
		switch i % 3 {
		case 0:
			outcomes[m] = &yes
		case 1:
			outcomes[m] = &no
		default:
			outcomes[m] = nil
		}
	}
	RecordTrial(ctx, Trial{Arm: "careful", Outcomes: outcomes, Faults: []string{"transient"}, Tokens: 10, CostUSD: 0.25})
	RecordTrial(ctx, Trial{Arm: "careful", Attrition: true})
	h := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{UseMonotonicCounters: true})
	h.Counter("temporal_request").Inc(1)
	h.Timer("temporal_request_latency").Record(5e6)
	h.Gauge("temporal_num_pollers").Update(2)
	h.Counter("temporal_some_future_metric").Inc(1)
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	os.Stdout.Write(rec.Body.Bytes())
}

// What /metrics serves passes `promtool check metrics` (the same linter:
// promlint): every family has HELP, units are lower-case; trials are
// counted once each and outcomes apart; the build is a metric and the
// resource's service.version.
func TestPrometheusExposition(t *testing.T) {
	if os.Getenv(envPromChild) == "1" {
		promChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrometheusExposition$")
	cmd.Env = append(os.Environ(), envPromChild+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	body := string(out)
	if i := strings.Index(body, "# HELP"); i > 0 { // the child's test output precedes nothing, but be safe
		body = body[i:]
	}
	if i := strings.Index(body, "\nPASS"); i > 0 {
		body = body[:i+1]
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v\n%s", err, body)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
		total, found := 0.0, false
	metrics:
		for _, m := range f.Metric {
			got := map[string]string{}
			for _, l := range m.Label {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			found = true
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			}
		}
		return total, found
	}
	bi := buildinfo.Get()
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rebound_trials_total", map[string]string{"arm": "careful"}, 2},
		{"rebound_outcomes_total", map[string]string{"arm": "careful"}, 9},
		{"rebound_outcomes_total", map[string]string{"metric": "recovered", "value": "true"}, 1},
		{"rebound_outcomes_total", map[string]string{"metric": "honest_block", "value": "false"}, 1},
		{"rebound_outcomes_total", map[string]string{"metric": "premature_block", "value": "not_tested"}, 1},
		{"rebound_attrition_total", map[string]string{"arm": "careful"}, 1},
		{"rebound_cost_usd_total", map[string]string{"arm": "careful"}, 0.25},
		{"rebound_build_info", map[string]string{"version": bi.Version, "revision": bi.Revision, "go_version": bi.GoVersion}, 1},
		{"target_info", map[string]string{"service_name": DefaultServiceName, "service_version": bi.Short()}, 1},
	} {
		if v, ok := value(tc.name, tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	for name, f := range families {
		if strings.HasPrefix(name, "temporal_") && f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	for _, name := range []string{"temporal_request_total", "temporal_num_pollers", "temporal_some_future_metric_total"} {
		if families[name] == nil {
			t.Errorf("no %s in:\n%s", name, body)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
