package judge

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"rebound/internal/endpoint"
)

// DefaultPrompt is the judge's rubric (prompt.md): five error-handling
// dimensions scored 1..5 with justifications, the aggregate, a failure-mode
// summary and a pass/review/fail recommendation.
//
//go:embed prompt.md
var DefaultPrompt string

// DefaultRequestTimeout bounds one request to the judge model.
const DefaultRequestTimeout = 120 * time.Second

// Retry is the judge's retry policy: a judge call that fails (invalid
// output or a transient provider failure) is retried twice, after 1 s and
// then 4 s, or after the provider's Retry-After when it names one (up to
// MaxWait); after that the trial goes to human review.
var Retry = endpoint.RetryPolicy{MaxRetries: 2, Base: time.Second, Multiplier: 4, MaxWait: 2 * time.Minute}

// Config is the judge's model configuration. The API key is never part of
// it: APIKeyEnv names the environment variable that holds it; New reads it
// once and it is never logged, stored, returned or put in an error.
type Config struct {
	// BaseURL is the OpenAI-compatible base URL up to the API version
	// (https://api.openai.com/v1, http://localhost:8000/v1, ...).
	BaseURL string `json:"base_url" yaml:"base_url"`
	// APIKeyEnv is the NAME of the environment variable holding the key;
	// empty for local servers that need none.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	// Model is the judge model. Use a capable one: a small model is only
	// acceptable once its agreement with the checks (Agreement) is known.
	Model string `json:"model" yaml:"model"`
	// Prompt is the rubric (the system message); empty means DefaultPrompt.
	Prompt string `json:"prompt,omitempty" yaml:"prompt,omitempty"`
	// PromptHash is HashPrompt(Prompt): the prompt version logged with every
	// result and part of the cache key. Empty is computed; a given one must
	// match the prompt.
	PromptHash string `json:"prompt_hash,omitempty" yaml:"prompt_hash,omitempty"`
	// Temperature is sent with every request (default 0: as repeatable as
	// the provider allows).
	Temperature float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	// MaxTokens bounds the judge's answer (0: the provider's default).
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// RequestTimeout bounds one request (default 120 s); a timeout is a
	// provider failure, retried like the others.
	RequestTimeout time.Duration `json:"request_timeout,omitempty" yaml:"request_timeout,omitempty"`
}

// ErrConfig marks a configuration error: invalid settings, a missing key,
// or a provider answer that says the configuration is wrong
// (endpoint.ErrConfig: 400, 401, 403, 404, 422: bad request, bad key, no
// access, unknown model). Retrying does not help and queueing
// every trial for review would not either: fix the configuration.
var ErrConfig = errors.New("judge: configuration error")

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, p := range endpoint.Check(c.BaseURL, c.APIKeyEnv, c.Model) {
		add("%s", p)
	}
	prompt := c.prompt()
	if strings.TrimSpace(prompt) == "" {
		add("prompt is blank")
	}
	if c.PromptHash != "" && c.PromptHash != endpoint.HashPrompt(prompt) {
		add("prompt_hash %s does not match the prompt (its hash is %s): the prompt changed since the hash was recorded", c.PromptHash, endpoint.HashPrompt(prompt))
	}
	if math.IsNaN(c.Temperature) || c.Temperature < 0 || c.Temperature > 2 {
		add("temperature must be in [0, 2], got %v", c.Temperature)
	}
	if c.MaxTokens < 0 {
		add("max_tokens must not be negative")
	}
	if c.RequestTimeout < 0 {
		add("request_timeout must not be negative")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(errs, "; "))
	}
	return nil
}

func (c Config) prompt() string {
	if c.Prompt == "" {
		return DefaultPrompt
	}
	return c.Prompt
}

func (c Config) withDefaults() Config {
	c.Prompt = c.prompt()
	if c.PromptHash == "" {
		c.PromptHash = endpoint.HashPrompt(c.Prompt)
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}
