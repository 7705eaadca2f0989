package llm

import (
	"testing"

	"rebound/core/trial"
	"rebound/internal/endpoint"
)

// The LLM agent is a trial.Recorder: its prompt hash and recording reach the
// trial row.
var _ trial.Recorder = (*Agent)(nil)

func TestPromptHashDefaultsToContent(t *testing.T) {
	a := &Agent{cfg: Config{Prompt: "be careful"}}
	if a.PromptHash() != endpoint.HashPrompt("be careful") {
		t.Fatalf("prompt hash = %q", a.PromptHash())
	}
	if js, err := a.RecordingJSON(); err != nil || js != "" {
		t.Fatalf("recording before any run = %q, %v", js, err)
	}
}
