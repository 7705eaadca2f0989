package endpoint

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The OpenTelemetry GenAI semantic conventions on each model.call span,
// beside otelhttp's HTTP attributes: what was asked of which model, and
// what it answered and cost.
const (
	AttrGenAIOperation     = attribute.Key("gen_ai.operation.name")          // "chat"
	AttrGenAIProvider      = attribute.Key("gen_ai.provider.name")           // "openai": the API rebound speaks
	AttrGenAIRequestModel  = attribute.Key("gen_ai.request.model")           // the model asked for
	AttrGenAIResponseModel = attribute.Key("gen_ai.response.model")          // the model that answered
	AttrGenAIResponseID    = attribute.Key("gen_ai.response.id")             // the completion's id
	AttrGenAIFinishReasons = attribute.Key("gen_ai.response.finish_reasons") // one per choice
	AttrGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	AttrGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
)

// genaiTransport sits under otelhttp's transport, so the span in a
// request's context is the model.call span: it sets the request's GenAI
// attributes before the request is sent, and the response's (read from its
// body, which it hands on unchanged) before the span ends.
type genaiTransport struct{ base http.RoundTripper }

func (t genaiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	span := trace.SpanFromContext(req.Context())
	if !span.IsRecording() {
		return t.base.RoundTrip(req)
	}
	span.SetAttributes(AttrGenAIOperation.String("chat"), AttrGenAIProvider.String("openai"))
	if c, _ := req.Context().Value(captureKey{}).(*capture); c != nil && c.model != "" {
		span.SetAttributes(AttrGenAIRequestModel.String(c.model))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	span.SetAttributes(genaiResponse(body)...)
	return resp, nil
}

// genaiResponse reads a chat completion's GenAI attributes; a body that is
// not one gives none.
func genaiResponse(body []byte) []attribute.KeyValue {
	var r struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	var out []attribute.KeyValue
	if r.ID != "" {
		out = append(out, AttrGenAIResponseID.String(r.ID))
	}
	if r.Model != "" {
		out = append(out, AttrGenAIResponseModel.String(r.Model))
	}
	reasons := make([]string, 0, len(r.Choices))
	for _, c := range r.Choices {
		if c.FinishReason != "" {
			reasons = append(reasons, c.FinishReason)
		}
	}
	if len(reasons) > 0 {
		out = append(out, AttrGenAIFinishReasons.StringSlice(reasons))
	}
	if r.Usage != nil {
		out = append(out, AttrGenAIInputTokens.Int(r.Usage.PromptTokens), AttrGenAIOutputTokens.Int(r.Usage.CompletionTokens))
	}
	return out
}
