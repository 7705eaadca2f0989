package endpoint_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"rebound/core/agent/llm/llmtest"
	"rebound/internal/endpoint"
)

// Each model.call span carries the GenAI semantic conventions beside the
// HTTP attributes: the model asked for, the tokens billed and why the
// model stopped; a failed request carries what was asked.
func TestModelCallSpanGenAIAttributes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	srv := llmtest.New(t)
	srv.Push(llmtest.Error(http.StatusBadGateway), llmtest.Text("hello").WithUsage(120, 20).WithFinish("stop"))
	var sl llmtest.Sleeps
	if _, _, _, err := newClient(t, srv, "", &sl).Complete(context.Background(), request, 0, policy); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (a 502, then the answer)", len(spans))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	failed, ok := attrs(spans[0]), attrs(spans[1])
	for _, s := range spans {
		if s.Name() != endpoint.ModelCallSpan {
			t.Errorf("span %q, want %q", s.Name(), endpoint.ModelCallSpan)
		}
	}
	if failed[endpoint.AttrGenAIRequestModel].AsString() != "m" || failed[endpoint.AttrGenAIOperation].AsString() != "chat" {
		t.Errorf("the 502's span: %v", failed)
	}
	if _, has := failed[endpoint.AttrGenAIInputTokens]; has {
		t.Errorf("the 502's span counts tokens: %v", failed)
	}
	if ok[endpoint.AttrGenAIRequestModel].AsString() != "m" || ok[endpoint.AttrGenAIInputTokens].AsInt64() != 120 || ok[endpoint.AttrGenAIOutputTokens].AsInt64() != 20 {
		t.Errorf("the answer's span: %v", ok)
	}
	if r := ok[endpoint.AttrGenAIFinishReasons].AsStringSlice(); len(r) != 1 || r[0] != "stop" {
		t.Errorf("finish reasons %v", r)
	}
	if ok["http.response.status_code"].AsInt64() != 200 {
		t.Errorf("the HTTP attributes are gone: %v", ok)
	}
}
