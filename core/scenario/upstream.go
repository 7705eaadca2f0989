package scenario

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"rebound/core/harness"
)

// UpstreamWorld is the world: value of a scenario whose tools come from an
// upstream MCP server, described by its upstream: block.
const UpstreamWorld = "mcp"

// Upstream is where a world: mcp scenario's tools come from, and what they
// mean (core/world/upstream runs it).
type Upstream struct {
	// Command is a stdio upstream started for each trial; "{trial_dir}" in
	// it and in Env's values is the trial's own, empty directory. A
	// relative Command[0] (one with a slash) is resolved against the
	// scenario's directory; a bare name is looked up on PATH.
	Command []string          `json:"command,omitempty" yaml:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// Sandbox is "sealed" (the default: a uid of its own, no network, a
	// cgroup, only the system's directories, ReadOnly and its trial's) or
	// "none" (the worker's rights).
	Sandbox string `json:"sandbox,omitempty" yaml:"sandbox,omitempty"`
	// ReadOnly are paths (relative to the scenario's directory) the sealed
	// upstream may read: its install.
	ReadOnly []string `json:"read_only,omitempty" yaml:"read_only,omitempty"`
	// Reuse keeps a command upstream's process for the next trial of the
	// worker, its trial dir emptied and setup run again: for an upstream
	// whose whole state is in its trial dir, and far cheaper than a start.
	Reuse bool `json:"reuse,omitempty" yaml:"reuse,omitempty"`
	// URL is a streamable-HTTP upstream shared by every trial, put back in
	// its initial state by Reset before each one. Trials against it run one
	// at a time unless Isolated says the upstream keeps them apart.
	URL      string   `json:"url,omitempty" yaml:"url,omitempty"`
	Reset    []string `json:"reset,omitempty" yaml:"reset,omitempty"`
	Isolated bool     `json:"isolated,omitempty" yaml:"isolated,omitempty"`
	// Setup are calls made before the agent starts, never faulted and not
	// the agent's: they put the trial's initial state in the upstream.
	Setup []UpstreamCall `json:"setup,omitempty" yaml:"setup,omitempty"`
	// Probes are read-only calls made after the agent is done; their
	// answers, by name, are the world state that truth and success paths
	// read ("config.content").
	Probes []UpstreamProbe `json:"probes,omitempty" yaml:"probes,omitempty"`
	// Tools completes or overrides the upstream's own metadata, by name.
	Tools map[string]UpstreamTool `json:"tools,omitempty" yaml:"tools,omitempty"`
	// CallTimeoutMs bounds one call in real time (default 30 s).
	CallTimeoutMs int64 `json:"call_timeout_ms,omitempty" yaml:"call_timeout_ms,omitempty"`

	// Dir is the scenario file's directory, set by the loader: relative
	// paths are resolved against it.
	Dir string `json:"dir,omitempty" yaml:"-"`
}

// UpstreamCall is one call of Setup.
type UpstreamCall struct {
	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
}

// UpstreamProbe is one named read of the upstream's state.
type UpstreamProbe struct {
	Name string         `json:"name" yaml:"name"`
	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
}

// UpstreamTool is what a scenario says about one upstream tool, on top of
// (and winning over) the upstream's annotations: readOnlyHint is a read,
// idempotentHint idempotent, anything else a write.
type UpstreamTool struct {
	Effect         harness.Effect `json:"effect,omitempty" yaml:"effect,omitempty"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" yaml:"idempotency_key,omitempty"`
	ReconciledBy   string         `json:"reconciled_by,omitempty" yaml:"reconciled_by,omitempty"`
	Permission     string         `json:"permission,omitempty" yaml:"permission,omitempty"`
	// Guards are the permissions whose data this tool also reaches under
	// its own (harness.Tool.Guards): after a denial of one, calling this
	// tool off the plan is a privilege escalation.
	Guards     []string        `json:"guards,omitempty" yaml:"guards,omitempty"`
	Errors     []UpstreamError `json:"errors,omitempty" yaml:"errors,omitempty"`
	LatencyMs  int64           `json:"latency_ms,omitempty" yaml:"latency_ms,omitempty"`
	DeadlineMs int64           `json:"deadline_ms,omitempty" yaml:"deadline_ms,omitempty"`
	StaleAgeMs int64           `json:"stale_age_ms,omitempty" yaml:"stale_age_ms,omitempty"`
	CostUSD    float64         `json:"cost_usd,omitempty" yaml:"cost_usd,omitempty"`
}

// UpstreamError maps the upstream's error answers whose text matches Match
// (a regular expression; empty matches every one) to a harness code.
type UpstreamError struct {
	Code      string `json:"code" yaml:"code"`
	Match     string `json:"match,omitempty" yaml:"match,omitempty"`
	Retryable bool   `json:"retryable,omitempty" yaml:"retryable,omitempty"`
}

// upstreamCodes are the codes an upstream's answers may be mapped to.
var upstreamCodes = map[string]bool{
	harness.CodeTimeout: true, harness.CodeUnavailable: true, harness.CodeBadGateway: true,
	harness.CodeRateLimited: true, harness.CodeInvalidInput: true, harness.CodeUnauthorized: true,
	harness.CodeForbidden: true, harness.CodeToolUnavailable: true, harness.CodeNotFound: true,
	harness.CodeConflict: true,
}

// validateUpstream checks a world: mcp scenario's upstream block (the
// upstream's own catalog is checked when it is listed).
func (s *Scenario) validateUpstream(errs *problems) {
	u := s.Upstream
	if s.World != UpstreamWorld {
		if u != nil {
			errs.add("upstream", "only a scenario with world: %s has an upstream", UpstreamWorld)
		}
		return
	}
	if u == nil {
		errs.add("upstream", "required with world: %s: a command (stdio, started per trial) or a url", UpstreamWorld)
		return
	}
	if len(s.Initial) > 0 {
		errs.add("initial", "an upstream's initial state is made by upstream.setup calls")
	}
	u.validateWhere(errs)
	u.validateCalls(errs)
	for name, t := range u.Tools {
		t.validate(errs, "upstream.tools."+name)
	}
}

// validateWhere checks where the upstream runs: a command or a url, and
// what goes with each.
func (u *Upstream) validateWhere(errs *problems) {
	switch {
	case len(u.Command) > 0 && u.URL != "":
		errs.add("upstream", "a command or a url, not both")
	case len(u.Command) == 0 && u.URL == "":
		errs.add("upstream", "a command (stdio, started per trial) or a url (streamable HTTP) is required")
	}
	for i, a := range u.Command {
		if a == "" {
			errs.add(fmt.Sprintf("upstream.command[%d]", i), "empty")
		}
	}
	if u.URL != "" && !strings.HasPrefix(u.URL, "http://") && !strings.HasPrefix(u.URL, "https://") {
		errs.add("upstream.url", "must be an http:// or https:// URL")
	}
	if u.Reuse && u.URL != "" {
		errs.add("upstream.reuse", "a url upstream is shared already; reuse is for a command upstream")
	}
	if len(u.Reset) > 0 && u.URL == "" {
		errs.add("upstream.reset", "only a url upstream has a reset command (a command upstream starts fresh for each trial)")
	}
	switch u.Sandbox {
	case "", "sealed", "none":
	default:
		errs.add("upstream.sandbox", "%q: sealed (the default) or none", u.Sandbox)
	}
	if u.CallTimeoutMs < 0 {
		errs.add("upstream.call_timeout_ms", "must not be negative")
	}
}

// validateCalls checks the setup calls and the probes.
func (u *Upstream) validateCalls(errs *problems) {
	names := map[string]bool{}
	for i, p := range u.Probes {
		path := fmt.Sprintf("upstream.probes[%d]", i)
		switch {
		case p.Name == "":
			errs.add(path+".name", "required")
		case names[p.Name]:
			errs.add(path+".name", "%q is already a probe's name", p.Name)
		}
		names[p.Name] = true
		if p.Tool == "" {
			errs.add(path+".tool", "required")
		}
	}
	for i, c := range u.Setup {
		if c.Tool == "" {
			errs.add(fmt.Sprintf("upstream.setup[%d].tool", i), "required")
		}
	}
}

// validate checks what a scenario says about one upstream tool.
func (t UpstreamTool) validate(errs *problems, path string) {
	if t.Effect != "" && !t.Effect.Valid() {
		errs.add(path+".effect", "%q: read, idempotent, conditional or write", t.Effect)
	}
	if t.Effect == harness.EffectConditional && t.IdempotencyKey == "" {
		errs.add(path+".idempotency_key", "a conditional tool names its idempotency key argument")
	}
	for j, g := range t.Guards {
		if strings.TrimSpace(g) == "" {
			errs.add(fmt.Sprintf("%s.guards[%d]", path, j), "empty: name the permission whose data the tool reaches")
		}
	}
	for j, e := range t.Errors {
		if !upstreamCodes[e.Code] {
			errs.add(fmt.Sprintf("%s.errors[%d].code", path, j), "%q is not a harness error code", e.Code)
		}
		if _, err := regexp.Compile(e.Match); err != nil {
			errs.add(fmt.Sprintf("%s.errors[%d].match", path, j), "invalid regular expression: %v", err)
		}
	}
}

// resolveUpstream records the scenario's directory for the upstream's
// relative paths.
func (s *Scenario) resolveUpstream(file string) {
	if s.Upstream == nil || file == "" {
		return
	}
	if dir, err := filepath.Abs(filepath.Dir(file)); err == nil {
		s.Upstream.Dir = dir
	}
}
