package telemetry_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"rebound/activities"
	"rebound/core/agent"
	armpkg "rebound/core/agent/arm"
	"rebound/core/agent/llm"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/runner"
	"rebound/internal/telemetry"
	"rebound/storage"
	"rebound/workflows"
)

func TestMain(m *testing.M) { devstacktest.Main(m) }

// collector is an in-process OTLP/HTTP receiver: it decodes the protobuf
// export requests the SDK sends and keeps what they carried.
type collector struct {
	mu       sync.Mutex
	spans    []span
	metrics  map[string][]*metricpb.Metric
	services map[string]bool
}

type span struct {
	name            string
	traceID, parent string
	id              string
	attrs           map[string]*commonpb.AnyValue
}

func newCollector(t *testing.T) (*collector, *httptest.Server) {
	c := &collector{metrics: map[string][]*metricpb.Metric{}, services: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req coltracepb.ExportTraceServiceRequest
		if !decode(t, w, r, &req) {
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			c.services[serviceName(rs.Resource.GetAttributes())] = true
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					attrs := map[string]*commonpb.AnyValue{}
					for _, kv := range s.Attributes {
						attrs[kv.Key] = kv.Value
					}
					c.spans = append(c.spans, span{name: s.Name, traceID: fmt.Sprintf("%x", s.TraceId), id: fmt.Sprintf("%x", s.SpanId), parent: fmt.Sprintf("%x", s.ParentSpanId), attrs: attrs})
				}
			}
		}
		c.mu.Unlock()
		reply(t, w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		var req colmetricpb.ExportMetricsServiceRequest
		if !decode(t, w, r, &req) {
			return
		}
		c.mu.Lock()
		for _, rm := range req.ResourceMetrics {
			c.services[serviceName(rm.Resource.GetAttributes())] = true
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics[m.Name] = append(c.metrics[m.Name], m)
				}
			}
		}
		c.mu.Unlock()
		reply(t, w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return c, srv
}

func decode(t *testing.T, w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		t.Errorf("OTLP request with Content-Type %q", ct)
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("gzip: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		t.Errorf("decode OTLP request: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(t *testing.T, w http.ResponseWriter, m proto.Message) {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Error(err)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func serviceName(attrs []*commonpb.KeyValue) string {
	for _, kv := range attrs {
		if kv.Key == "service.name" {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// sumPoint finds the data point of a sum metric whose attributes include
// want, and returns its value summed over every export.
func (c *collector) sum(name string, want map[string]string) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total, found := 0.0, false
	for _, m := range c.metrics[name] {
		s := m.GetSum()
		if s == nil {
			continue
		}
	points:
		for _, dp := range s.DataPoints {
			got := map[string]string{}
			for _, kv := range dp.Attributes {
				got[kv.Key] = kv.Value.GetStringValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue points
				}
			}
			found = true
			total += dp.GetAsDouble() + float64(dp.GetAsInt())
		}
	}
	return total, found
}

// A small LLM sweep on a real dev server and chDB, with the SDK configured
// only by OTEL_* variables pointing at an in-process OTLP receiver: the
// spans of the sweep, its workflow, shards, trials and model calls arrive
// in one trace, and the metrics arrive with their attributes.
func TestOTLPExportOfASweep(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	col, otlp := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_SERVICE_NAME", "rebound-otlp-test")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000") // exported at shutdown
	tel, err := telemetry.Setup(ctx, telemetry.Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Traces || !tel.Metrics {
		t.Fatalf("an OTLP endpoint is set but traces=%v metrics=%v", tel.Traces, tel.Metrics)
	}

	model := llmtest.New(t)
	lookup := func(id string) llmtest.Reply {
		return llmtest.Calls(llmtest.Call(id, "inventory__lookup", map[string]any{"sku": "KB-104"}))
	}
	recovered := []llmtest.Reply{
		lookup("c1"), // times out (the scenario's fault)
		llmtest.Calls(llmtest.Call("c2", "wait", map[string]any{"ms": 1000})),
		lookup("c3"),
		llmtest.Text("KB-104 has 7 units available."),
		llmtest.Text(`{"status":"completed","blocked_on":null,"available":7}`).WithUsage(120, 20),
	}
	model.Push(llmtest.Error(429, "Retry-After", "1")) // seed 1: a provider 429 first
	model.Push(recovered...)
	model.Always(llmtest.Error(429, "Retry-After", "1")) // seed 2: attrition

	dir := t.TempDir()
	abs, err := filepath.Abs("../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("Recover from tool failures carefully.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), fmt.Appendf(nil, `name: otlp
scenarios: [%s]
seeds: [1, 2]
shard_size: 10
concurrency: 1
arms:
  - name: local-model
    agent: llm
    llm: {base_url: %q, model: test-model, prompt: prompt.md, input_usd_per_mtok: 1, output_usd_per_mtok: 2}
`, abs, model.BaseURL()), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadPlan(filepath.Join(dir, "plan.yaml"), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}

	key := []byte("otlp-test-redaction-key-0123456789abcdef")
	store, err := storage.Open(ctx, storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "otlp"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	opts, err := runner.SecureClientOptions(srv.ClientOptions(), key)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = runner.InstrumentClientOptions(opts); err != nil {
		t.Fatal(err)
	}
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	noSleep := llm.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() })
	acts := &activities.Activities{Store: store, RedactionKey: key, Agents: func(arm scenario.Arm) (agent.Agent, error) { return armpkg.Resolve(arm, noSleep) }}
	queue := "otlp-" + t.Name()
	w, err := runner.NewWorker(c, queue, acts, runner.WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	sweepID := runner.NewSweepID(plan.Name, time.Now())
	sctx, sweepSpan := runner.StartSweepSpan(ctx, sweepID, plan.Name)
	run, err := runner.StartSweep(sctx, c, queue, sweepID, plan)
	if err != nil {
		t.Fatal(err)
	}
	final, err := runner.Follow(sctx, c, run, sweepID, 200*time.Millisecond, nil)
	sweepSpan.End()
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != workflows.StatusCompleted || final.TrialsDone != 2 || final.Attrition != 1 {
		t.Fatalf("final progress = %+v", final)
	}
	for _, r := range model.Requests() {
		if r.Header.Get("traceparent") != "" {
			t.Fatalf("the trace context was sent to the model provider: %q", r.Header.Get("traceparent"))
		}
	}

	// The Prometheus registry serves the same instruments.
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{"rebound_trials_total{", "rebound_outcomes_total{", "rebound_attrition_total{", "rebound_provider_rate_limited_total{", "rebound_provider_request_duration_seconds_bucket{", "rebound_build_info{", "temporal_request_total{"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// `promtool check metrics` (promlint) passes on what a real worker
	// serves: the Temporal SDK's families have HELP too.
	problems, err := promlint.New(strings.NewReader(rec.Body.String())).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}

	w.Stop()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown (flush): %v", err)
	}

	col.mu.Lock()
	names := map[string]int{}
	var sweepTrace string
	for _, s := range col.spans {
		names[s.name]++
		if s.name == runner.SweepSpan {
			sweepTrace = s.traceID
		}
	}
	var metricNames []string
	for n := range col.metrics {
		metricNames = append(metricNames, n)
	}
	services := col.services
	col.mu.Unlock()
	sort.Strings(metricNames)
	var spanNames []string
	for n := range names {
		spanNames = append(spanNames, n)
	}
	sort.Strings(spanNames)
	t.Logf("received spans: %s", strings.Join(spanNames, ", "))
	t.Logf("received metrics: %s", strings.Join(metricNames, ", "))

	if len(services) != 1 || !services["rebound-otlp-test"] {
		t.Errorf("service names %v, want only OTEL_SERVICE_NAME's", services)
	}
	for _, want := range []string{
		runner.SweepSpan,
		"StartWorkflow:" + workflows.SweepWorkflowName,
		"RunWorkflow:" + workflows.SweepWorkflowName,
		"StartActivity:" + workflows.RunShardActivity,
		"RunActivity:" + workflows.RunShardActivity,
		"shard", "trial", llm.ModelCallSpan,
	} {
		if names[want] == 0 {
			t.Errorf("no %q span received", want)
		}
	}
	if names["trial"] != 2 {
		t.Errorf("%d trial spans, want 2", names["trial"])
	}
	// Each trial span says whether it failed (REBOUND_TRACE_FAILED_TRIALS
	// keeps those): the recovered trial did not, the attrition trial did.
	failed := map[bool]int{}
	for _, s := range col.spans {
		if s.name == "trial" {
			v, ok := s.attrs[string(telemetry.FailedAttr)]
			if !ok {
				t.Errorf("a trial span without %s: %v", telemetry.FailedAttr, s.attrs)
				continue
			}
			failed[v.GetBoolValue()]++
		}
	}
	if failed[true] != 1 || failed[false] != 1 {
		t.Errorf("trial spans by %s: %v, want one failed (the attrition) and one not", telemetry.FailedAttr, failed)
	}
	// Two model requests answered 429 for seed 1 and the 5 turns, plus the
	// attrition seed's attempts: every one is a span.
	if names[llm.ModelCallSpan] < 7 {
		t.Errorf("%d model call spans, want at least 7", names[llm.ModelCallSpan])
	}
	// Model calls carry the GenAI semantic conventions; an answered one its
	// usage and finish reasons.
	answered := false
	for _, s := range col.spans {
		if s.name != llm.ModelCallSpan {
			continue
		}
		if s.attrs["gen_ai.request.model"].GetStringValue() != "test-model" || s.attrs["gen_ai.operation.name"].GetStringValue() != "chat" {
			t.Errorf("model.call span without the GenAI request attributes: %v", s.attrs)
		}
		if s.attrs["gen_ai.usage.input_tokens"].GetIntValue() == 120 && s.attrs["gen_ai.usage.output_tokens"].GetIntValue() == 20 &&
			len(s.attrs["gen_ai.response.finish_reasons"].GetArrayValue().GetValues()) == 1 {
			answered = true
		}
	}
	if !answered {
		t.Error("no model.call span carries the usage (120 in, 20 out) and the finish reason of the last answer")
	}
	// One trace: the worker's spans descend from the sweep's.
	for _, s := range col.spans {
		if s.traceID != sweepTrace && (s.name == "trial" || s.name == llm.ModelCallSpan || s.name == "shard") {
			t.Errorf("span %s is in trace %s, not the sweep's %s", s.name, s.traceID, sweepTrace)
			break
		}
	}

	for _, m := range []string{
		telemetry.MetricTrials, telemetry.MetricOutcomes, telemetry.MetricFaults, telemetry.MetricProviderLatency, telemetry.MetricProvider429,
		telemetry.MetricTokens, telemetry.MetricCost, telemetry.MetricAttrition,
		"temporal_request", "temporal_activity_execution_latency",
	} {
		if len(col.metrics[m]) == 0 {
			t.Errorf("no metric %s received", m)
		}
	}
	if v, ok := col.sum(telemetry.MetricOutcomes, map[string]string{"arm": "local-model", "metric": "recovered", "value": "true"}); !ok || v != 1 {
		t.Errorf("%s{arm=local-model,metric=recovered,value=true} = %v (found %v), want 1", telemetry.MetricOutcomes, v, ok)
	}
	if v, ok := col.sum(telemetry.MetricTrials, map[string]string{"arm": "local-model"}); !ok || v != 2 {
		t.Errorf("%s{arm=local-model} = %v (found %v), want 2: every trial once", telemetry.MetricTrials, v, ok)
	}
	if v, ok := col.sum(telemetry.MetricAttrition, map[string]string{"arm": "local-model"}); !ok || v != 1 {
		t.Errorf("%s{arm=local-model} = %v, want 1", telemetry.MetricAttrition, v)
	}
	if v, ok := col.sum(telemetry.MetricTokens, map[string]string{"arm": "local-model"}); !ok || v < 140 {
		t.Errorf("%s{arm=local-model} = %v, want at least 140", telemetry.MetricTokens, v)
	}
	if v, ok := col.sum(telemetry.MetricFaults, map[string]string{"class": "transient"}); !ok || v < 1 {
		t.Errorf("%s{class=transient} = %v (found %v)", telemetry.MetricFaults, v, ok)
	}
	if v, ok := col.sum(telemetry.MetricProvider429, map[string]string{"model": "test-model"}); !ok || v < 2 {
		t.Errorf("%s{model=test-model} = %v, want at least 2", telemetry.MetricProvider429, v)
	}
}
