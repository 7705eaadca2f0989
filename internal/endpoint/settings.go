package endpoint

// Settings are an LLM arm's model settings: where the model is served,
// how it samples and how fast this worker may call it. The plan
// (scenario.LLMArm) and the agent (agent/llm.Config) embed this one type,
// so a setting added here reaches the agent without a copy to forget.
type Settings struct {
	// BaseURL is the OpenAI-compatible base URL, up to and including the
	// API version segment: https://api.openai.com/v1,
	// https://RESOURCE.openai.azure.com/openai/v1 (Azure OpenAI's v1 API),
	// http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama),
	// http://localhost:8080/v1 (llama.cpp server).
	BaseURL string `json:"base_url" yaml:"base_url"`
	// APIKeyEnv is the NAME of the environment variable holding the API
	// key; empty for local servers that need none.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	Model     string `json:"model" yaml:"model"`

	// Temperature and TopP are sent when set; nil leaves the provider's
	// default. Seed is sent when set (providers that support it sample
	// reproducibly).
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty" yaml:"top_p,omitempty"`
	Seed        *int     `json:"seed,omitempty" yaml:"seed,omitempty"`
	// MaxTokens bounds each completion (0: provider default). It is sent as
	// max_tokens, which vLLM, Ollama and llama.cpp read; for OpenAI
	// reasoning models, which reject max_tokens, as max_completion_tokens.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// MaxTurns bounds the model requests of the tool loop (default 24). The
	// final claim request is one more, made only when the model stopped
	// calling tools within MaxTurns; when MaxTurns is exhausted the trial
	// ends with no claim.
	MaxTurns int `json:"max_turns,omitempty" yaml:"max_turns,omitempty"`
	// ParallelToolCalls is forwarded as parallel_tool_calls when set; nil
	// leaves the provider's default. Whatever the provider does, the agent
	// executes every tool call of a response, one after the other, in order.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty" yaml:"parallel_tool_calls,omitempty"`

	// RequestsPerMinute and TokensPerMinute are the provider's limits as
	// this worker may use them (0: unlimited). They are enforced by one
	// Limiter per (BaseURL, APIKeyEnv) shared by every client of the
	// process (LimiterFor).
	RequestsPerMinute int `json:"requests_per_minute,omitempty" yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   int `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute,omitempty"`
}
