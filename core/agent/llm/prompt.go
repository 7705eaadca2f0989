package llm

import (
	"fmt"
	"strings"

	"rebound/core/agent"
	"rebound/core/harness"
)

// ProtocolVersion identifies the text the agent adds to the arm's prompt
// (the task protocol below). It changes whenever that text changes, so a
// difference between two runs of one prompt hash can be traced to it.
const ProtocolVersion = "2"

// systemMessage is the arm's prompt followed by the task protocol: how tool
// results look, the built-in functions, the budget and the final claim. The
// protocol describes; it gives no recovery advice (that is the prompt under
// test). The reference plan is never shown.
func systemMessage(prompt string, task agent.Task, tools []harness.Tool) string {
	var b strings.Builder
	if p := strings.TrimSpace(prompt); p != "" {
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	b.WriteString("## Task protocol\n\n")
	b.WriteString("You act only through the functions offered. Each tool function is named after a tool, with \"__\" in place of \".\":\n")
	for _, t := range tools {
		fn, _ := FunctionName(t.Name)
		fmt.Fprintf(&b, "- %s is the tool %s\n", fn, t.Name)
	}
	b.WriteString("\nEvery tool call returns a JSON result. Success: {\"ok\":true,\"data\":{...}}, possibly with " +
		"\"evidence\":{\"strength\":\"stale\",\"age_ms\":N} when the data is older than the primary source. " +
		"Failure: {\"ok\":false,\"code\":\"...\",\"retryable\":true|false,\"retry_after_ms\":N,\"message\":\"...\"}; " +
		"\"uncertain\":true means the request may or may not have taken effect.\n\n")
	b.WriteString("Two built-in functions act on the task itself, not on any system: wait(ms) waits on the task clock " +
		"and returns the task time; update_plan(summary) publishes your plan when it changes.\n\n")
	b.WriteString("Budget:\n")
	budget := task.Budget
	// The harness's limit, which is the default one when the scenario sets
	// none: the agent is told the budget it is held to.
	fmt.Fprintf(&b, "- at most %d tool calls (wait and update_plan are not tool calls); calls beyond it are refused\n", budget.CallLimit())
	if budget.DeadlineMs > 0 {
		fmt.Fprintf(&b, "- deadline: %d ms of task time; every tool call takes task time and wait advances it\n", budget.DeadlineMs)
	}
	if budget.Replans > 0 {
		fmt.Fprintf(&b, "- at most %d plan updates\n", budget.Replans)
	}
	if budget.CostUSD > 0 {
		fmt.Fprintf(&b, "- tool cost: at most $%.4f\n", budget.CostUSD)
	}
	if task.RetryLimit > 0 {
		fmt.Fprintf(&b, "- retry policy: at most %d retries of a failed step\n", task.RetryLimit)
	}
	b.WriteString("\nWhen you are done, because the goal is achieved or because it cannot be achieved by the means " +
		"you are authorized to use, stop calling functions and reply with a short summary. You will then be asked " +
		"for a final claim: a JSON object with\n")
	b.WriteString("- status: \"completed\" if the goal was achieved, \"blocked\" if not;\n")
	example := "payments.charge"
	if len(tools) > 0 {
		example = tools[0].Name
	}
	fmt.Fprintf(&b, "- blocked_on: when blocked, the tool name (for example %s, not the function name) of the dependency that could not be resolved; otherwise null;\n", example)
	for _, f := range task.Claim {
		fmt.Fprintf(&b, "- %s (%s or null)", f.Name, f.Type)
		if f.Description != "" {
			b.WriteString(": " + f.Description)
		}
		b.WriteString(";\n")
	}
	b.WriteString("Use null for any field the tool results did not establish.\n")
	return b.String()
}

// claimRequest is the user message of the final claim turn.
const claimRequest = "Submit your final claim now: one JSON object matching the claim schema, stating only what the tool results established."
