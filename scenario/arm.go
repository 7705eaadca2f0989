package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"rebound/endpoint"
	"rebound/fileerr"
	"time"
)

// AgentLLM is the Agent value of an arm run by an LLM over an
// OpenAI-compatible API; its settings are in Arm.LLM.
const AgentLLM = "llm"

// LLMArm configures an LLM arm: which endpoint and model, which prompt
// revision, which sampling settings. The API key is never in the plan: the
// plan names the environment variable that holds it.
type LLMArm struct {
	// BaseURL of an OpenAI-compatible API (OpenAI, Azure OpenAI, vLLM,
	// Ollama, a llama.cpp server), e.g. http://127.0.0.1:11434/v1.
	BaseURL string `json:"base_url" yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key ("" for
	// endpoints without authentication).
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	Model     string `json:"model" yaml:"model"`
	// Prompt is the system prompt file, relative to the plan. Its content
	// is loaded into the resolved plan with its hash, so workers need no
	// files and two revisions of one prompt compare cleanly.
	Prompt     string `json:"prompt" yaml:"prompt"`
	PromptName string `json:"prompt_name,omitempty" yaml:"-"`
	PromptText string `json:"prompt_text,omitempty" yaml:"-"`
	PromptHash string `json:"prompt_hash,omitempty" yaml:"-"`

	Temperature       *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty" yaml:"top_p,omitempty"`
	Seed              *int     `json:"seed,omitempty" yaml:"seed,omitempty"`
	MaxTokens         int      `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	MaxTurns          int      `json:"max_turns,omitempty" yaml:"max_turns,omitempty"`
	ParallelToolCalls *bool    `json:"parallel_tool_calls,omitempty" yaml:"parallel_tool_calls,omitempty"`
	// RequestTimeout bounds one model request, e.g. "60s".
	RequestTimeout string `json:"request_timeout,omitempty" yaml:"request_timeout,omitempty"`
	// Provider limits, held across all concurrent trials of a worker.
	RequestsPerMinute int `json:"requests_per_minute,omitempty" yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   int `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute,omitempty"`
	// Prices per million tokens, for cost accounting.
	InputPerMTok  float64 `json:"input_usd_per_mtok,omitempty" yaml:"input_usd_per_mtok,omitempty"`
	OutputPerMTok float64 `json:"output_usd_per_mtok,omitempty" yaml:"output_usd_per_mtok,omitempty"`
}

// JudgeSpec configures the optional LLM judge of a sweep (seed 003).
type JudgeSpec struct {
	BaseURL   string `json:"base_url" yaml:"base_url"`
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	Model     string `json:"model" yaml:"model"`
	// Prompt is an optional rubric file relative to the plan; empty uses
	// the built-in rubric.
	Prompt     string `json:"prompt,omitempty" yaml:"prompt,omitempty"`
	PromptText string `json:"prompt_text,omitempty" yaml:"-"`
}

// PromptHash identifies a prompt revision by content: the first 16 hex
// digits of its SHA-256 (the same function as agent/llm.HashPrompt).
func PromptHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

func validateEndpoint(prefix, baseURL, keyEnv, model string) []pathError {
	var errs []pathError
	for _, p := range endpoint.Check(baseURL, keyEnv, model) {
		errs = append(errs, pathError{prefix + "." + p.Field, p.Msg})
	}
	return errs
}

func (a *Arm) validate(i int) []pathError {
	p := fmt.Sprintf("arms[%d]", i)
	if a.Agent != AgentLLM {
		if a.LLM != nil {
			return []pathError{{p + ".llm", fmt.Sprintf("llm settings need agent: %s", AgentLLM)}}
		}
		return nil
	}
	if a.LLM == nil {
		return []pathError{{p + ".llm", "an llm arm needs its llm settings (base_url, model, prompt)"}}
	}
	l := a.LLM
	errs := validateEndpoint(p+".llm", l.BaseURL, l.APIKeyEnv, l.Model)
	if l.Prompt == "" {
		errs = append(errs, pathError{p + ".llm.prompt", "required: a prompt file relative to the plan"})
	}
	if l.Temperature != nil && (*l.Temperature < 0 || *l.Temperature > 2) {
		errs = append(errs, pathError{p + ".llm.temperature", "must be between 0 and 2"})
	}
	if l.TopP != nil && (*l.TopP <= 0 || *l.TopP > 1) {
		errs = append(errs, pathError{p + ".llm.top_p", "must be in (0, 1]"})
	}
	if l.MaxTokens < 0 || l.MaxTurns < 0 || l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 || l.InputPerMTok < 0 || l.OutputPerMTok < 0 {
		errs = append(errs, pathError{p + ".llm", "limits and prices must not be negative"})
	}
	if l.RequestTimeout != "" {
		if d, err := time.ParseDuration(l.RequestTimeout); err != nil || d <= 0 {
			errs = append(errs, pathError{p + ".llm.request_timeout", fmt.Sprintf("%q is not a positive duration like 60s", l.RequestTimeout)})
		}
	}
	return errs
}

// loadPrompts reads the prompt files of LLM arms and the judge's rubric,
// relative to the plan file.
func (r *Resolved) loadPrompts(planFile string, judge *JudgeSpec) []pathError {
	var errs []pathError
	read := func(field, rel string) (string, bool) {
		path := rel
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(planFile), rel)
		}
		b, err := fileerr.ReadRegular(path, MaxPromptBytes, "prompt file")
		if err != nil {
			errs = append(errs, pathError{field, fmt.Sprintf("cannot read prompt file: %v", err)})
			return "", false
		}
		if len(b) == 0 {
			errs = append(errs, pathError{field, fmt.Sprintf("prompt file %s is empty", rel)})
			return "", false
		}
		return string(b), true
	}
	for i := range r.Arms {
		l := r.Arms[i].LLM
		if l == nil || l.Prompt == "" {
			continue
		}
		if text, ok := read(fmt.Sprintf("arms[%d].llm.prompt", i), l.Prompt); ok {
			cp := *l
			cp.PromptText, cp.PromptHash = text, PromptHash(text)
			cp.PromptName = filepath.Base(l.Prompt)
			r.Arms[i].LLM = &cp
		}
	}
	if judge != nil {
		cp := *judge
		if judge.Prompt != "" {
			if text, ok := read("judge.prompt", judge.Prompt); ok {
				cp.PromptText = text
			}
		}
		r.Judge = &cp
	}
	return errs
}
