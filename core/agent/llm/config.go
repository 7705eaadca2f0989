package llm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"rebound/internal/endpoint"
)

// Defaults applied by Config.withDefaults.
const (
	DefaultMaxTurns       = 24
	DefaultRequestTimeout = 120 * time.Second
	DefaultMaxRetries     = 6
	DefaultRetryBase      = time.Second
	DefaultRetryMaxWait   = 2 * time.Minute
)

// Config is one arm's model configuration: where the OpenAI-compatible
// endpoint is, which model, which sampling settings and which system prompt.
// The API key is never part of it: APIKeyEnv names the environment variable
// that holds the key, and the key itself is read once by New and never
// logged, stored, recorded or put in an error.
type Config struct {
	// Settings are the endpoint, sampling settings and provider limits,
	// one type with the plan's (scenario.LLMArm).
	endpoint.Settings `yaml:",inline"`

	// Prompt is the arm's system prompt (the revision under test);
	// PromptName labels it and PromptHash is endpoint.HashPrompt(Prompt). An empty
	// PromptHash is computed; a given one must match.
	Prompt     string `json:"prompt" yaml:"prompt"`
	PromptName string `json:"prompt_name,omitempty" yaml:"prompt_name,omitempty"`
	PromptHash string `json:"prompt_hash,omitempty" yaml:"prompt_hash,omitempty"`

	// Prices turn token usage into cost.
	Prices Prices `json:"prices" yaml:"prices"`

	// RequestTimeout bounds one HTTP request (default 120s). A timeout is a
	// provider failure and is retried.
	RequestTimeout time.Duration `json:"request_timeout,omitempty" yaml:"request_timeout,omitempty"`
	// MaxRetries is the number of retries of one request after a provider
	// failure (429, 5xx, timeout, connection error); default 6. When they
	// are spent the trial is attrition (ErrAttrition).
	MaxRetries int `json:"max_retries,omitempty" yaml:"max_retries,omitempty"`
	// RetryBase is the first backoff (default 1s), doubled per retry with
	// jitter; RetryMaxWait caps one wait, including a server's Retry-After
	// (default 2m): a server asking for more is treated as persistent.
	RetryBase    time.Duration `json:"retry_base,omitempty" yaml:"retry_base,omitempty"`
	RetryMaxWait time.Duration `json:"retry_max_wait,omitempty" yaml:"retry_max_wait,omitempty"`
}

// Prices are per one million tokens, in USD.
type Prices struct {
	InputPerMTok  float64 `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok" yaml:"output_per_mtok"`
}

// Cost returns the cost of the given usage.
func (p Prices) Cost(promptTokens, completionTokens int64) float64 {
	return (float64(promptTokens)*p.InputPerMTok + float64(completionTokens)*p.OutputPerMTok) / 1e6
}

// Validate checks the configuration and reports every problem at once.
func (c Config) Validate() error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, p := range endpoint.Check(c.BaseURL, c.APIKeyEnv, c.Model) {
		add("%s", p)
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2 || math.IsNaN(*c.Temperature)) {
		add("temperature must be in [0, 2], got %v", *c.Temperature)
	}
	if c.TopP != nil && (*c.TopP < 0 || *c.TopP > 1 || math.IsNaN(*c.TopP)) {
		add("top_p must be in [0, 1], got %v", *c.TopP)
	}
	if c.MaxTokens < 0 {
		add("max_tokens must not be negative")
	}
	if c.MaxTurns < 0 {
		add("max_turns must not be negative")
	}
	if c.PromptHash != "" && c.PromptHash != endpoint.HashPrompt(c.Prompt) {
		add("prompt_hash %s does not match the prompt (its hash is %s): the prompt changed since the hash was recorded", c.PromptHash, endpoint.HashPrompt(c.Prompt))
	}
	if c.Prices.InputPerMTok < 0 || c.Prices.OutputPerMTok < 0 {
		add("prices must not be negative")
	}
	if c.RequestTimeout < 0 || c.RetryBase < 0 || c.RetryMaxWait < 0 {
		add("request_timeout, retry_base and retry_max_wait must not be negative")
	}
	if c.MaxRetries < 0 {
		add("max_retries must not be negative")
	}
	if c.RequestsPerMinute < 0 || c.TokensPerMinute < 0 {
		add("requests_per_minute and tokens_per_minute must not be negative")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(errs, "; "))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxTurns == 0 {
		c.MaxTurns = DefaultMaxTurns
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.RetryBase == 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMaxWait == 0 {
		c.RetryMaxWait = DefaultRetryMaxWait
	}
	if c.PromptHash == "" {
		c.PromptHash = endpoint.HashPrompt(c.Prompt)
	}
	return c
}

// Sentinel errors. Run's errors wrap exactly one of them (or the context's
// error when the run was cancelled).
var (
	// ErrAttrition marks a trial lost to the provider: 429, 5xx, timeouts
	// or connection errors that persisted through every retry. The trial is
	// counted as attrition for its arm and never graded.
	ErrAttrition = errors.New("llm: provider failure (attrition)")
	// ErrConfig marks a configuration error: invalid settings, a missing
	// key, or a provider answer that says the configuration is wrong
	// (endpoint.ErrConfig: 400, 401, 403, 404, 422). Retrying does not help.
	ErrConfig = errors.New("llm: configuration error")
	// ErrDivergence marks a replay whose conversation left the recording.
	ErrDivergence = errors.New("llm: replay divergence")
)
