package scenario

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"rebound/internal/endpoint"
	"rebound/internal/fileerr"
	"rebound/internal/redact"
	"rebound/internal/sandbox"
)

// AgentLLM is the Agent value of an arm run by an LLM over an
// OpenAI-compatible API; its settings are in Arm.LLM.
const AgentLLM = "llm"

// LLMArm configures an LLM arm: which endpoint and model, which prompt
// revision, which sampling settings. The API key is never in the plan: the
// plan names the environment variable that holds it.
type LLMArm struct {
	// Settings are shared with the agent's configuration (agent/llm.Config):
	// the endpoint (base_url of an OpenAI-compatible API: OpenAI, Azure
	// OpenAI, vLLM, Ollama, a llama.cpp server; api_key_env naming the
	// variable that holds the key, "" for endpoints without
	// authentication; model), the sampling settings and the provider
	// limits, held across all concurrent trials of a worker.
	endpoint.Settings `yaml:",inline"`
	// Prompt is the system prompt file, relative to the plan. Its content
	// is loaded into the resolved plan with its hash, so workers need no
	// files and two revisions of one prompt compare cleanly.
	Prompt     string `json:"prompt" yaml:"prompt"`
	PromptName string `json:"prompt_name,omitempty" yaml:"-"`
	PromptText string `json:"prompt_text,omitempty" yaml:"-"`
	PromptHash string `json:"prompt_hash,omitempty" yaml:"-"`

	// RequestTimeout bounds one model request, e.g. "60s".
	RequestTimeout string `json:"request_timeout,omitempty" yaml:"request_timeout,omitempty"`
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

func validateEndpoint(prefix, baseURL, keyEnv, model string) []pathError {
	var errs []pathError
	for _, p := range endpoint.Check(baseURL, keyEnv, model) {
		errs = append(errs, pathError{prefix + "." + p.Field, p.Msg})
	}
	return errs
}

func (a *Arm) validate(i int) []pathError { return a.validateAt(fmt.Sprintf("arms[%d]", i)) }

// validateAt checks an arm whose fields live at path p.
func (a *Arm) validateAt(p string) []pathError {
	if a.Agent == AgentCommand {
		if a.LLM != nil {
			return []pathError{{p + ".llm", fmt.Sprintf("llm settings need agent: %s", AgentLLM)}}
		}
		return a.validateCommand(p)
	}
	if a.hasCommandFields() {
		return []pathError{{p + ".command", fmt.Sprintf("command, env, env_from, timeout, attrition_exit_codes, sandbox, read_only, egress and limits need agent: %s", AgentCommand)}}
	}
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
		field := fmt.Sprintf("arms[%d].llm.prompt", i)
		if r.Arms[i].Axes != nil { // an arm of the matrix
			field = "matrix.prompts"
			if _, swept := r.Arms[i].Axes[AxisPrompt]; !swept {
				field = "matrix.base.llm.prompt"
			}
		}
		if text, ok := read(field, l.Prompt); ok {
			cp := *l
			cp.PromptText, cp.PromptHash = text, endpoint.HashPrompt(text)
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

// AgentCommand is the Agent value of an arm that runs an external agent's
// process once per trial (agent/command). The process reaches the trial's
// tools over MCP or HTTP and submits its claim through submit_claim.
//
// Its fields on Arm:
//   - Command: argv; a relative command[0] with a slash is resolved against
//     the plan's directory when the plan loads (bare names use PATH);
//   - Env: literal, non-secret variables for the process;
//   - EnvFrom: process variable -> the worker's variable holding its value
//     (secrets: the value is read on the worker, never stored in the plan);
//   - Timeout: wall-clock limit of one run ("5m" by default, at most 30m);
//   - AttritionExitCodes: exit codes meaning "the agent's infrastructure
//     failed" (its model provider, say): such a trial is attrition, not
//     graded;
//   - Sandbox: "" or "sealed" (the default) runs the process sealed
//     (internal/sandbox: its own uid and namespaces, only its trial's tools
//     reachable); "none" runs it unsealed, and its trials are stored and
//     reported as unsealed;
//   - ReadOnly: more paths the sealed process may read (the rest of its
//     install: node_modules, a virtualenv), relative to the plan;
//   - Egress: host:port the sealed process may connect to, for its model
//     provider; nothing else on the machine or beyond is reachable;
//   - Limits: the sealed process's memory, PIDs and CPUs.
const AgentCommand = "command"

// Values of Arm.Sandbox.
const (
	SandboxSealed = "sealed"
	SandboxNone   = "none"
)

// Sealed says whether a command arm runs sealed.
func (a *Arm) Sealed() bool { return a.Sandbox != SandboxNone }

// DefaultCommandTimeout bounds one run of a command arm's process when the
// arm sets no timeout; MaxCommandTimeout is the largest timeout, and with
// the shard size what one shard activity (30 minutes start-to-close) holds.
const (
	DefaultCommandTimeout = 5 * time.Minute
	MaxCommandTimeout     = 30 * time.Minute
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretShapes are the shapes of keys and tokens redaction removes; a
// literal env value of that shape belongs under env_from.
var secretShapes = func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(redact.DefaultPatterns))
	for i, p := range redact.DefaultPatterns {
		out[i] = regexp.MustCompile(p)
	}
	return out
}()

func (a *Arm) hasCommandFields() bool {
	return len(a.Command) > 0 || len(a.Env) > 0 || len(a.EnvFrom) > 0 || a.Timeout != "" || len(a.AttritionExitCodes) > 0 ||
		a.Sandbox != "" || len(a.ReadOnly) > 0 || len(a.Egress) > 0 || a.Limits != nil
}

// CommandTimeout is the arm's wall-clock limit per run.
func (a *Arm) CommandTimeout() time.Duration {
	if d, err := time.ParseDuration(a.Timeout); err == nil && d > 0 {
		return d
	}
	return DefaultCommandTimeout
}

func (a *Arm) validateCommand(p string) []pathError {
	var errs []pathError
	if len(a.Command) == 0 || strings.TrimSpace(a.Command[0]) == "" {
		errs = append(errs, pathError{p + ".command", "required: the agent's argv, e.g. [node, agent.js]"})
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if !envName.MatchString(k) || strings.HasPrefix(k, "REBOUND_") {
			errs = append(errs, pathError{p + ".env." + k, "not a variable name rebound can pass (letters, digits, _; REBOUND_ is reserved)"})
			continue
		}
		for _, re := range secretShapes {
			if re.MatchString(a.Env[k]) {
				errs = append(errs, pathError{p + ".env." + k, "looks like a secret: plans are stored; name the worker's variable under env_from instead"})
				break
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.EnvFrom)) {
		switch {
		case !envName.MatchString(k) || strings.HasPrefix(k, "REBOUND_"):
			errs = append(errs, pathError{p + ".env_from." + k, "not a variable name rebound can pass (letters, digits, _; REBOUND_ is reserved)"})
		case !envName.MatchString(a.EnvFrom[k]):
			errs = append(errs, pathError{p + ".env_from." + k, fmt.Sprintf("%q is not a variable name", a.EnvFrom[k])})
		case a.Env[k] != "":
			errs = append(errs, pathError{p + ".env_from." + k, "also set under env"})
		}
	}
	if a.Timeout != "" {
		if d, err := time.ParseDuration(a.Timeout); err != nil || d <= 0 || d > MaxCommandTimeout {
			errs = append(errs, pathError{p + ".timeout", fmt.Sprintf("%q is not a duration between 1s and %s, like 5m", a.Timeout, MaxCommandTimeout)})
		}
	}
	for _, c := range a.AttritionExitCodes {
		if c < 1 || c > 255 {
			errs = append(errs, pathError{p + ".attrition_exit_codes", fmt.Sprintf("%d is not an exit code between 1 and 255", c)})
		}
	}
	return append(errs, a.validateSandbox(p)...)
}

// validateSandbox checks a command arm's confinement fields.
func (a *Arm) validateSandbox(p string) []pathError {
	var errs []pathError
	switch a.Sandbox {
	case "", SandboxSealed:
	case SandboxNone:
		if len(a.ReadOnly) > 0 || len(a.Egress) > 0 || a.Limits != nil {
			errs = append(errs, pathError{p + ".sandbox", "read_only, egress and limits confine a sealed process; with sandbox: none they would do nothing"})
		}
	default:
		errs = append(errs, pathError{p + ".sandbox", fmt.Sprintf("%q is not a sandbox: sealed (the default) or none", a.Sandbox)})
	}
	for i, r := range a.ReadOnly {
		if strings.TrimSpace(r) == "" {
			errs = append(errs, pathError{fmt.Sprintf("%s.read_only[%d]", p, i), "empty path"})
		}
	}
	if _, _, err := sandbox.Egress(a.Egress); err != nil {
		errs = append(errs, pathError{p + ".egress", err.Error()})
	}
	if l := a.Limits; l != nil {
		if l.MemoryMB < 0 || l.MemoryMB > 1<<20 {
			errs = append(errs, pathError{p + ".limits.memory_mb", fmt.Sprintf("%d is not a size in MB between 1 and %d", l.MemoryMB, 1<<20)})
		}
		if l.PIDs < 0 || l.PIDs > 1<<16 {
			errs = append(errs, pathError{p + ".limits.pids", fmt.Sprintf("%d is not a count between 1 and %d", l.PIDs, 1<<16)})
		}
		if l.CPUs < 0 || l.CPUs > 1024 {
			errs = append(errs, pathError{p + ".limits.cpus", fmt.Sprintf("%v is not a number of CPUs between 0.01 and 1024", l.CPUs)})
		}
	}
	return errs
}

// validateCommandShards keeps a shard of command trials within one shard
// activity's 30-minute start-to-close timeout.
func (p *Plan) validateCommandShards() []pathError {
	shard := p.ShardSize
	if shard <= 0 {
		shard = defaultShardSize(p.Arms)
	}
	for i, a := range p.Arms {
		if a.Agent == AgentCommand && time.Duration(shard)*a.CommandTimeout() > MaxCommandTimeout {
			return []pathError{{"shard_size", fmt.Sprintf("%d trials of arm %s (timeout %s each) may outlast a shard activity's %s; lower shard_size or arms[%d].timeout",
				shard, a.Name, a.CommandTimeout(), MaxCommandTimeout, i)}}
		}
	}
	return nil
}

// defaultShardSize is 25 trials per activity, or 1 when an arm runs an
// external process: each trial is then its own activity, retried alone.
func defaultShardSize(arms []Arm) int {
	for _, a := range arms {
		if a.Agent == AgentCommand {
			return 1
		}
	}
	return 25
}

// PlanDirToken in a command arm's command or read_only is replaced by the
// absolute directory of the plan file when the plan loads.
const PlanDirToken = "{plan_dir}"

// resolveCommands makes a command arm's paths absolute against the plan's
// directory, like prompt files: {plan_dir} anywhere in command or
// read_only; a relative command[0] with a slash; a relative read_only
// path; and a relative argument (command[1:], not an option) that names a
// file or directory existing beside the plan, so `[node, agent.mjs]` runs
// the agent.mjs beside the plan wherever the trial's working directory
// is. The directory of such an argument (the argument itself when it is a
// directory) joins read_only, so a sealed process can read it.
func (r *Resolved) resolveCommands(planFile string) {
	dir, err := filepath.Abs(filepath.Dir(planFile))
	if err != nil {
		return
	}
	for i := range r.Arms {
		a := &r.Arms[i]
		if a.Agent != AgentCommand || len(a.Command) == 0 {
			continue
		}
		var readOnly []string
		for _, p := range a.ReadOnly {
			p = strings.ReplaceAll(p, PlanDirToken, dir)
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			readOnly = append(readOnly, p)
		}
		cmd := make([]string, len(a.Command))
		for j, c := range a.Command {
			cmd[j] = strings.ReplaceAll(c, PlanDirToken, dir)
		}
		if c := cmd[0]; !filepath.IsAbs(c) && strings.ContainsRune(c, '/') {
			cmd[0] = filepath.Join(dir, c)
		}
		for j := 1; j < len(cmd); j++ {
			c := cmd[j]
			if c == "" || filepath.IsAbs(c) || strings.HasPrefix(c, "-") || strings.Contains(c, "=") {
				continue
			}
			p := filepath.Join(dir, c)
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			cmd[j] = p
			mount := filepath.Dir(p)
			if fi.IsDir() {
				mount = p
			}
			if !slices.Contains(readOnly, mount) {
				readOnly = append(readOnly, mount)
			}
		}
		a.Command, a.ReadOnly = cmd, readOnly
	}
}
