// Package llm is the LLM agent under test: a tool-calling loop over any
// OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI's v1
// API, vLLM, Ollama, llama.cpp server), built on go-openai. It implements
// agent.Agent, so a trial runs it exactly like a scripted reference agent.
//
// # The loop
//
// The system message is the arm's prompt (Config.Prompt, identified by
// PromptHash) followed by a task protocol the agent generates: the tool
// names, the shape of tool results, the built-in functions, the budget
// (tool calls, deadline, replans, cost, retry policy) and the claim. The
// user message is the goal. The reference plan is never shown.
//
// Each offered tool becomes a function whose JSON-Schema parameters come
// from harness.Param metadata and whose description documents its effect,
// idempotency key, status tool, permission and documented errors. Tool
// names contain dots, which function names may not: payments.charge is
// offered as payments__charge (FunctionName, ToolName). Two built-ins are
// offered as well: wait(ms), which advances the trial's simulated clock
// (Env.Sleep) so a model can honour retry_after_ms, and update_plan
// (Env.Replan). They are not tool calls and are not in the ledger's
// attempts. One wait reaches at most WaitBeyondDeadlineMs past the task's
// deadline (MaxWaitNoDeadlineMs without one, MaxWaitMs); a longer one is
// INVALID_INPUT and the clock does not move. The tool server's wait shares
// the bound (WaitArg).
//
// Every tool call of a response is executed in order through Env.Call and
// answered with the harness's normalized result, harness.Result.JSON(),
// verbatim. A function name that was not offered is still passed to the
// env under its mapped name: the harness answers TOOL_UNAVAILABLE and
// records the attempt, so a hallucinated tool is visible in the ledger.
// Arguments that are not a JSON object are not sent: the model gets an
// INVALID_INPUT result, the ledger and the tool-call budget are untouched
// (no real tool would have received the call), and the raw arguments stay
// in the recording.
//
// When the model answers without tool calls, one more request asks for the
// final claim with response_format json_schema (strict): status,
// blocked_on (an offered tool name or null) and the scenario's declared
// fields, each nullable. Its content is Outcome.Claim, verbatim; the
// grader parses it. Outcome.Answer is the last assistant prose. When
// MaxTurns is spent first there is no claim.
//
// # Provider failures
//
// A provider's 429, 408, 409, 5xx, timeouts, connection errors and
// malformed responses are not the agent's failures. They are retried with
// exponential backoff and jitter, honouring retry-after-ms and Retry-After
// (seconds or HTTP date), up to Config.MaxRetries (the client layer shared
// with the judge, package endpoint, classifies and retries); then Run returns an
// error wrapping ErrAttrition, and the trial is counted as attrition for
// its arm and not graded. Other 4xx (bad request, authentication, unknown
// model) return ErrConfig at once. Cancelling the context ends Run with
// the context's error. Backoff is wall-clock time (WithSleep replaces it
// in tests).
//
// # Rate limits
//
// Config.RequestsPerMinute and TokensPerMinute are enforced by one token
// bucket pair per provider (endpoint.LimiterFor) (base URL + API-key variable name), shared by
// every Agent in the process, so the concurrent trials of one worker stay
// within the limit together. The limiter knows nothing of other processes.
// Across W workers, either give each worker 1/W of the provider's limit in
// its arms' Config, or bound the rate at the Temporal task queue: run LLM
// trials for one provider on their own task queue (for example
// rebound-llm-openai) and set worker.Options.TaskQueueActivitiesPerSecond
// on its workers, which the Temporal server enforces across all workers of
// that queue. That option counts activity starts, not HTTP requests, so
// set it to the provider's requests per second divided by the requests a
// trial (or a shard of trials) makes, and keep the in-process limiter as
// the per-worker guard. Either way, a 429 that still gets through is
// retried and, if it persists, is attrition, never a graded failure.
//
// # Recording and replay
//
// Every response is recorded in order, with a stable fingerprint of the
// request that produced it (see Recording). Read it with
// (*Agent).Recording after Run. WithReplay answers from a recording
// instead of the network; the same scenario variant and seed then yield
// the same ledger, and a conversation that departs from the recording
// fails with ErrDivergence at the first differing step: "divergence at
// step N: expected request with X, got Y".
//
// # Secrets
//
// The API key is read from the environment variable Config.APIKeyEnv
// names. It is never in Config, a Recording, an error, or the agent's
// printed form; text a provider echoes it in is redacted.
package llm
