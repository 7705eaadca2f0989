// Package endpoint is rebound's one model client layer, used by the LLM
// arms (agent/llm) and the judge alike:
//
//   - Check validates an OpenAI-compatible endpoint as it is configured
//     everywhere: a base URL without credentials, the NAME of the
//     environment variable that holds the key (APIKey reads it; the key
//     never appears in configuration), and a model; Settings is the arm
//     configuration the plan and the agent share;
//   - Client sends a request, classifies its failure with one taxonomy
//     (ErrConfig: 400, 401, 403, 404, 422, never retried; ErrTransient:
//     408, 409, 429, 5xx, timeouts, connection errors, malformed answers),
//     and retries under a RetryPolicy that honours Retry-After;
//   - Limiter paces the requests to a provider, one per provider and
//     process (LimiterFor), slowed by every 429;
//   - HashPrompt identifies a prompt by its text; Sleep is the seam every
//     wait goes through.
package endpoint

import (
	"fmt"
	"net/url"
	"regexp"
)

// Problem is one invalid setting, by its configuration field name.
type Problem struct {
	Field string // base_url, api_key_env or model
	Msg   string
}

func (p Problem) String() string { return p.Field + ": " + p.Msg }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check reports every problem with an endpoint's settings.
func Check(baseURL, apiKeyEnv, model string) []Problem {
	var out []Problem
	switch u, err := url.Parse(baseURL); {
	case baseURL == "":
		out = append(out, Problem{"base_url", "required (an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1)"})
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		out = append(out, Problem{"base_url", fmt.Sprintf("%q is not an http(s) URL", baseURL)})
	case u.User != nil:
		out = append(out, Problem{"base_url", "must not carry credentials: put the key in the environment variable named by api_key_env"})
	}
	if apiKeyEnv != "" && !envName.MatchString(apiKeyEnv) {
		out = append(out, Problem{"api_key_env", "must be the NAME of an environment variable (letters, digits, underscore), never the key itself"})
	}
	if model == "" {
		out = append(out, Problem{"model", "required"})
	}
	return out
}
