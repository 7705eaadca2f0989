// Package judge is rebound's optional LLM judge of error handling. It scores
// how an agent communicated and decided around the failures of a trial, on
// five dimensions of 1..5 with justifications (error_detection,
// retry_decision, backoff_behavior, escalation_correctness,
// context_preservation), their mean, a failure-mode summary and a
// pass/review/fail recommendation (>= 4.0 / >= 3.0 / below).
//
// The executable checks (package grade) stay the authority on counts,
// order, permissions and idempotency. The judge never sees their verdicts;
// its disagreement with them on the dimensions they share is reported as a
// calibration figure (Agreement, Mappings).
//
// # Scoring
//
// Score renders the trial as one canonical JSON document (Input.Document:
// the scenario, the fault schedule in words, the tool catalog, the retry
// policy, the escalation path and the redacted trace: calls with the
// results the agent saw, the answer and the claim). Its SHA-256 is the
// trace hash. The cache (scenario, trace hash, model, prompt hash) is
// consulted first. Otherwise the model gets the rubric (DefaultPrompt,
// prompt.md, identified by PromptHash) as the system message and the
// document as the user message, with a strict json_schema response format
// (OutputSchema). The answer is validated strictly (ParseOutput): every
// field and no other, integer scores 1..5, non-empty justifications, the
// aggregate within 0.01 of the mean, the recommendation the thresholds give.
//
// Requests go through the model client layer shared with the LLM arms
// (package endpoint): one error taxonomy, Retry-After honoured, the
// provider's process-wide limiter. An invalid answer or a transient
// provider failure is retried twice under Retry, after 1 s and 4 s or
// after the provider's Retry-After; a retry after an invalid answer tells
// the model what was wrong. After the third failure the Result is
// ReviewNeeded, with every attempt's reason and the last partial output,
// for the review queue; a trial is never given a default score. 400, 401,
// 403, 404 and 422 are configuration errors (ErrConfig), returned at once. Every Result carries the model and
// the prompt hash.
//
// The API key is read from the environment variable Config.APIKeyEnv names;
// it is redacted from every output, reason and error, and never stored.
//
// # Storage
//
// The judge reads and writes nothing itself (a test holds it to that):
// package judgestore is its edge: StoreCache over storage's judge_cache
// table, TraceFromStored from stored rows, Record writing a Judged result to
// judgements and a ReviewNeeded one to review_queue, and PairsFromStore,
// which with Agreement computes the calibration of a sweep.
package judge
