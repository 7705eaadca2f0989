// Package agent holds the systems under test behind one interface: scripted
// reference agents with known policies (careful, naive retrier, fabricator,
// ...) that calibrate the grader, and the LLM agent.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// Env is what an agent can do during a trial. It is implemented by the
// trial runner over the harness dispatcher; the agent never sees the fault
// schedule or the ledger.
type Env interface {
	// Tools lists the offered tools with their metadata.
	Tools() []harness.Tool
	// Call executes one tool call and returns the normalized result.
	Call(ctx context.Context, tool string, args map[string]any) harness.Result
	// Sleep waits on the trial's simulated clock (backoff, retry-after).
	Sleep(ms int64)
	// Now is the simulated time since the trial started, in ms.
	Now() int64
	// Replan publishes a plan update (counted against the replan budget).
	Replan(summary string)
}

// Task is what the agent is asked to do.
type Task struct {
	Goal   string
	Claim  []scenario.ClaimField
	Budget harness.Budget
	// RetryLimit is the scenario's retry policy bound per failed step.
	RetryLimit int
	// ReferencePlan is the scenario's reference path. Only scripted
	// reference agents use it; it is never shown to an LLM agent.
	ReferencePlan []scenario.Step
	// TrialID is the trial's derived id (stable across retries), for agents
	// that keep records of their own.
	TrialID string
}

// Outcome is what the agent hands back at the end of a trial.
type Outcome struct {
	// Claim is the agent's structured final claim exactly as submitted
	// (JSON); empty when the agent made none.
	Claim string `json:"claim"`
	// Answer is the agent's free-text final message, kept for humans and
	// judges; it is never keyword-matched.
	Answer string  `json:"answer,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost_usd,omitempty"`
	// Process is what an external agent's process did (command arms): its
	// exit, whether it timed out, and its redacted output.
	Process *Process `json:"process,omitempty"`
}

// Process is the record of one run of an external agent's process.
type Process struct {
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"`
	// Signal names the signal that ended the process, if one did.
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	WallMs   int64  `json:"wall_ms"`
	// Stdout and Stderr are the process's output, redacted and bounded
	// (the middle of a long stream is dropped and marked).
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// ClaimsRefused counts the process's submit_claim calls the tool
	// server refused (nothing recorded), and LastClaimRefusal says why the
	// last one was.
	ClaimsRefused    int    `json:"claims_refused,omitempty"`
	LastClaimRefusal string `json:"last_claim_refusal,omitempty"`
	// Sandbox says how the process was confined: SandboxSealed (its own
	// uid and namespaces, see internal/sandbox) or SandboxNone (the arm
	// opted out: the agent could reach the worker, and its trials are
	// stored and reported as unsealed).
	Sandbox string `json:"sandbox,omitempty"`
}

// Values of Process.Sandbox.
const (
	SandboxSealed = "sealed"
	SandboxNone   = "none"
)

// Errors an agent returns when the trial could not be run for reasons that
// are not the agent's behaviour. Trial runners match them with errors.Is.
var (
	// ErrAttrition: the agent's infrastructure failed (a provider that kept
	// failing, an external agent exiting with a declared infrastructure
	// code). The trial is stored as attrition, never graded.
	ErrAttrition = errors.New("agent infrastructure failed (attrition)")
	// ErrConfig: the arm is misconfigured (a command that cannot start);
	// every trial of the arm would fail the same way, so the sweep stops.
	ErrConfig = errors.New("agent configuration error")
)

// Agent is a system under test.
type Agent interface {
	Name() string
	Run(ctx context.Context, env Env, task Task) (Outcome, error)
}

// scripted maps names to the reference agents' constructors.
var scripted = map[string]func() Agent{}

func registerScripted(name string, f func() Agent) { scripted[name] = f }

// NewScripted returns the named scripted reference agent.
func NewScripted(name string) (Agent, error) {
	f, ok := scripted[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (scripted agents: %s)", name, strings.Join(ScriptedNames(), ", "))
	}
	return f(), nil
}

// ReferencePolicies returns the safe policies whose runs witness that an
// authorized path existed on a trial's realized schedule: the careful
// agent, then its economical twin (it reconciles through the plan's own
// status read, acts at once on older data a step may use, and tries an
// optional step once). Neither takes an unsafe shortcut; with index- or
// probability-shaped faults one may find a path the other's extra calls
// miss. Only a safe, clean completion counts as a witness.
func ReferencePolicies() []Agent {
	return []Agent{careful{}, careful{economical: true}}
}

// ScriptedNames lists the scripted reference agents.
func ScriptedNames() []string {
	return slices.Sorted(maps.Keys(scripted))
}

// claim accumulates the fields of a structured claim.
type claim struct {
	fields map[string]any
}

func newClaim() *claim { return &claim{fields: map[string]any{}} }

// apply records what a successful step establishes; "$result.NAME" takes
// the field NAME of the tool's data.
func (c *claim) apply(step scenario.Step, data map[string]any) {
	for k, v := range step.Sets {
		if ref, ok := v.(string); ok && strings.HasPrefix(ref, "$result.") {
			if x, ok := data[strings.TrimPrefix(ref, "$result.")]; ok {
				c.fields[k] = x
			}
			continue
		}
		c.fields[k] = v
	}
}

// applyLiterals records the facts a step establishes by happening (its
// literal values), not the ones it reads from the tool's data.
func (c *claim) applyLiterals(step scenario.Step) {
	for k, v := range step.Sets {
		if ref, ok := v.(string); ok && strings.HasPrefix(ref, "$result.") {
			continue
		}
		c.fields[k] = v
	}
}

// deny records that a step definitively did not happen: boolean facts it
// would have set to true are false. Other fields stay unknown (absent).
func (c *claim) deny(step scenario.Step) {
	for k, v := range step.Sets {
		if b, ok := v.(bool); ok && b {
			c.fields[k] = false
		}
	}
}

func (c *claim) completed() string {
	c.fields[scenario.ClaimStatus] = scenario.StatusDone
	return c.json()
}

func (c *claim) blocked(on string) string {
	c.fields[scenario.ClaimStatus] = scenario.StatusBlocked
	c.fields[scenario.ClaimBlockedOn] = on
	return c.json()
}

func (c *claim) json() string {
	b, err := json.Marshal(c.fields)
	if err != nil {
		return ""
	}
	return string(b)
}

// hasResultFields reports whether data is usable for the step: it passes
// validation (corrupt output is malformed or fails its checksum) and
// carries every field the step's claim reads from the tool's data.
func hasResultFields(step scenario.Step, data map[string]any) bool {
	if _, bad := data["parse_error"]; bad {
		return false
	}
	if ok, present := data["checksum_ok"].(bool); present && !ok {
		return false
	}
	for _, v := range step.Sets {
		if ref, ok := v.(string); ok && strings.HasPrefix(ref, "$result.") {
			if _, ok := data[strings.TrimPrefix(ref, "$result.")]; !ok {
				return false
			}
		}
	}
	return true
}

// retryLimit returns the task's retry bound, defaulting to the scenario's
// default.
func (t Task) retryLimit() int {
	if t.RetryLimit > 0 {
		return t.RetryLimit
	}
	return scenario.DefaultRetryLimit
}
