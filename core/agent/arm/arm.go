// Package arm turns a plan's arm into a runnable agent: the edge where a
// name in a plan becomes a scripted policy, a command-line agent or an LLM
// client. Workers, the offline replay and the shard-size probe all resolve
// arms here, so none of them needs the Temporal activities to do it.
package arm

import (
	"fmt"
	"time"

	"rebound/core/agent"
	"rebound/core/agent/command"
	"rebound/core/agent/llm"
	"rebound/core/scenario"
)

// Resolve builds a fresh agent for one trial of an arm: the command
// agent, a scripted reference agent, or the LLM agent configured by the
// arm. Each call returns a new agent, since an agent records its run.
// CheckPlan resolves every arm once before a sweep starts, so a bad arm
// fails before any trial runs.
func Resolve(arm scenario.Arm, opts ...llm.Option) (agent.Agent, error) {
	if arm.Agent == scenario.AgentCommand {
		return command.New(command.FromArm(arm))
	}
	if arm.Agent != scenario.AgentLLM {
		return agent.NewScripted(arm.Agent)
	}
	cfg, err := LLMConfig(arm)
	if err != nil {
		return nil, err
	}
	return llm.New(cfg, opts...)
}

// LLMConfig converts an arm's plan settings into the LLM agent's config.
func LLMConfig(arm scenario.Arm) (llm.Config, error) {
	l := arm.LLM
	if l == nil {
		return llm.Config{}, fmt.Errorf("arm %s: agent llm without llm settings", arm.Name)
	}
	cfg := llm.Config{
		Settings: l.Settings,
		Prompt:   l.PromptText, PromptName: l.PromptName, PromptHash: l.PromptHash,
		Prices: llm.Prices{InputPerMTok: l.InputPerMTok, OutputPerMTok: l.OutputPerMTok},
	}
	if l.RequestTimeout != "" {
		d, err := time.ParseDuration(l.RequestTimeout)
		if err != nil {
			return llm.Config{}, fmt.Errorf("arm %s: request_timeout: %w", arm.Name, err)
		}
		cfg.RequestTimeout = d
	}
	return cfg, nil
}
