// Package command runs an external agent, unchanged, as a rebound agent: a
// command arm (agent: command). For each trial it starts the trial's tool
// server (toolserver: MCP and plain HTTP on loopback), runs the arm's
// command once in a temporary working directory with the server's URLs,
// the goal and the trial id in its environment, and hands back the claim
// the process submitted through submit_claim. trial.Run stays the one
// function that runs and grades a trial; this is just another agent.
//
// The process is hostile input: by default it runs sealed
// (internal/sandbox), under a uid of its own in its own namespaces, where
// the trial's tool server listens inside its network namespace at the
// same loopback URL, the hosts the arm declares (egress) are forwarded,
// and nothing else of the machine is visible. An arm with sandbox: none
// runs as a plain child process group, and its trials say so.
package command

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"rebound/core/agent"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/toolserver"
	"rebound/internal/childproc"
	"rebound/internal/sandbox"
)

// Environment variables the process receives from rebound.
const (
	EnvMCPURL   = "REBOUND_MCP_URL"   // the trial's MCP endpoint (streamable HTTP)
	EnvToolsURL = "REBOUND_TOOLS_URL" // plain HTTP tools: POST $REBOUND_TOOLS_URL/{name}
	EnvGoal     = "REBOUND_GOAL"      // the scenario's goal
	EnvTrialID  = "REBOUND_TRIAL_ID"  // derived, stable across retries
	EnvAttempt  = "REBOUND_ATTEMPT"   // the activity attempt running the trial (1 = first)

	// The budgets, as the trial starts (trial_status answers what is
	// left): 0 means the scenario sets none, except for the call budget,
	// which is always the number the harness enforces.
	EnvCallBudget   = "REBOUND_CALL_BUDGET"    // tool calls the harness sends
	EnvDeadlineMs   = "REBOUND_DEADLINE_MS"    // the deadline, in ms of simulated task time
	EnvReplanBudget = "REBOUND_REPLAN_BUDGET"  // plan updates (update_plan)
	EnvCostLimit    = "REBOUND_COST_LIMIT_USD" // tool cost, in US dollars
	EnvRetryLimit   = "REBOUND_RETRY_LIMIT"    // retries of one failed step

	// EnvBin is the path of the rebound binary inside the process's view
	// (for `$REBOUND_BIN mcp-stdio --url $REBOUND_MCP_URL`), set when the
	// worker knows it (SetBinary) and a sealed process can read it.
	EnvBin = "REBOUND_BIN"
	// EnvMCPConfig is a ready-made MCP server configuration (JSON, the
	// "mcpServers" shape agents read): the stdio bridge with the URL in its
	// arguments when REBOUND_BIN is set, else the streamable HTTP endpoint.
	EnvMCPConfig = "REBOUND_MCP_CONFIG"
)

// binary is the rebound executable offered as REBOUND_BIN (SetBinary).
var binary struct {
	sync.Mutex
	path string
}

// SetBinary names the rebound executable a command arm's process may run
// as its stdio MCP server (REBOUND_BIN, REBOUND_MCP_CONFIG); cmd/rebound
// sets its own. A sealed process sees the file mounted read-only at the
// same path. Empty: neither variable offers the bridge.
func SetBinary(path string) {
	binary.Lock()
	defer binary.Unlock()
	binary.path = path
}

func binaryPath() string {
	binary.Lock()
	defer binary.Unlock()
	return binary.path
}

// MCPConfig is the value of REBOUND_MCP_CONFIG for a trial's MCP URL: the
// stdio bridge (bin mcp-stdio --url URL) when bin is set, else the
// streamable HTTP endpoint itself.
func MCPConfig(bin, mcpURL string) string {
	server := map[string]any{"type": "http", "url": mcpURL}
	if bin != "" {
		server = map[string]any{"type": "stdio", "command": bin, "args": []string{"mcp-stdio", "--url", mcpURL}}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"rebound": server}})
	if err != nil {
		return ""
	}
	return string(b)
}

// passedThrough are the worker's variables the process inherits; nothing
// else of the worker's environment (its database DSN, its keys) is passed.
var passedThrough = []string{"PATH", "LANG", "LC_ALL", "TZ"}

// Output kept per stream: the first headBytes and the last tailBytes.
const (
	headBytes = 16 << 10
	tailBytes = 48 << 10
)

// killGrace is how long the process group has between SIGTERM and SIGKILL.
const killGrace = 5 * time.Second

// Config is one command arm.
type Config struct {
	// Arm is the arm's name, for the messages of configuration errors.
	Arm     string
	Command []string
	// Env are literal variables; EnvFrom maps a process variable to the
	// worker variable holding its (secret) value.
	Env     map[string]string
	EnvFrom map[string]string
	Timeout time.Duration
	// AttritionExitCodes are exit codes that mean the agent's
	// infrastructure failed: the trial is attrition, not graded.
	AttritionExitCodes []int
	// Getenv reads the worker's variables; nil means os.Getenv.
	Getenv func(string) string
	// Unsealed runs the process without the sandbox (sandbox: none).
	Unsealed bool
	// ReadOnly, Egress and Limits confine the sealed process: more paths
	// it may read, the host:port it may reach, its resources.
	ReadOnly []string
	Egress   []string
	Limits   sandbox.Limits
}

// FromArm builds the config of a command arm.
func FromArm(arm scenario.Arm) Config {
	cfg := Config{Arm: arm.Name, Command: arm.Command, Env: arm.Env, EnvFrom: arm.EnvFrom, Timeout: arm.CommandTimeout(),
		AttritionExitCodes: arm.AttritionExitCodes, Unsealed: !arm.Sealed(), ReadOnly: arm.ReadOnly, Egress: arm.Egress}
	if l := arm.Limits; l != nil {
		cfg.Limits = sandbox.Limits{MemoryBytes: int64(l.MemoryMB) << 20, PIDs: l.PIDs, CPUs: l.CPUs}
	}
	return cfg
}

// Agent runs one command arm's process per trial.
type Agent struct {
	cfg     Config
	secrets []string // values read through EnvFrom, redacted by value
	env     []string // Env and EnvFrom, resolved
	routes  []sandbox.Route
	hosts   []string // /etc/hosts lines of the egress names
	bin     string   // REBOUND_BIN, "" when not offered
}

// New checks the config and reads the EnvFrom variables on this worker. A
// missing variable is a configuration error (agent.ErrConfig).
func New(cfg Config) (*Agent, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("%w: command arm without a command", agent.ErrConfig)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = scenario.DefaultCommandTimeout
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	a := &Agent{cfg: cfg}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		a.env = append(a.env, k+"="+cfg.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.EnvFrom)) {
		v := getenv(cfg.EnvFrom[k])
		if v == "" {
			return nil, fmt.Errorf("%w: env_from.%s: the worker's variable %s is not set", agent.ErrConfig, k, cfg.EnvFrom[k])
		}
		a.env = append(a.env, k+"="+v)
		a.secrets = append(a.secrets, v)
	}
	if bin := binaryPath(); bin != "" {
		if real, err := filepath.EvalSymlinks(bin); err == nil {
			a.bin = real
		}
	}
	if cfg.Unsealed {
		return a, nil
	}
	if a.bin != "" && sandbox.Readable(a.bin) != nil {
		a.bin = "" // a sealed process could not run it: offer HTTP only
	}
	// Fail closed: an arm that is not explicitly unsealed never runs
	// where the sandbox cannot be set up.
	if err := sandbox.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", agent.ErrConfig, err)
	}
	var err error
	if a.routes, a.hosts, err = sandbox.Egress(cfg.Egress); err != nil {
		return nil, fmt.Errorf("%w: %v", agent.ErrConfig, err)
	}
	return a, nil
}

// Name is the agent's name on stored trials.
func (a *Agent) Name() string { return scenario.AgentCommand }

type attemptKey struct{}

// WithAttempt tells the agent which activity attempt runs the trial; the
// process sees it as REBOUND_ATTEMPT.
func WithAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, attemptKey{}, attempt)
}

// AttritionError is returned when the process exits with one of the arm's
// declared infrastructure codes. It matches agent.ErrAttrition and keeps
// the process record for storage.
type AttritionError struct {
	Process agent.Process
}

func (e *AttritionError) Error() string {
	return fmt.Sprintf("the agent's process exited with %d, a declared infrastructure failure (attrition)", e.Process.ExitCode)
}

func (e *AttritionError) Unwrap() error { return agent.ErrAttrition }

// Run runs the process for one trial.
func (a *Agent) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	srv, err := toolserver.New(env, task)
	if err != nil {
		return agent.Outcome{}, err
	}
	attempt := 1
	if n, ok := ctx.Value(attemptKey{}).(int); ok && n > 0 {
		attempt = n
	}
	stdout, stderr := &capped{}, &capped{}
	l := launch{a: a, srv: srv, task: task, attempt: attempt, stdout: stdout, stderr: stderr}
	var p running
	if a.cfg.Unsealed {
		p, err = l.unsealed()
	} else {
		p, err = l.sealed()
	}
	if err != nil {
		return agent.Outcome{}, fmt.Errorf("%w: %s: cannot start %s: %v", agent.ErrConfig, a.armName(), a.cfg.Command[0], a.redact(err.Error()))
	}
	defer p.cleanup()
	start := time.Now()
	timer := time.NewTimer(a.cfg.Timeout)
	defer timer.Stop()
	var timedOut, halted, cancelled bool
	select {
	case <-p.exited():
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	case <-srv.Halted():
		halted = true
	}
	p.stop()
	// No call reaches the ledger after the process is gone: the ledger is
	// final when grading starts.
	p.closeServer()

	code, signal := p.status()
	proc := agent.Process{
		Command: a.redactAll(a.cfg.Command), ExitCode: code, Signal: signal, TimedOut: timedOut,
		WallMs: time.Since(start).Milliseconds(),
		Stdout: a.redact(stdout.String()), Stderr: a.redact(stderr.String()),
		Sandbox: agent.SandboxSealed,
	}
	if n, why := srv.RefusedClaims(); n > 0 {
		proc.ClaimsRefused, proc.LastClaimRefusal = n, a.redact(why)
	}
	if a.cfg.Unsealed {
		proc.Sandbox = agent.SandboxNone
	}
	if cancelled {
		if errors.Is(context.Cause(ctx), harness.ErrHalted) {
			// The harness stopped the trial (the agent kept calling after
			// its budget): it ends without a claim, like any agent's, and
			// keeps the process record.
			return agent.Outcome{Answer: harness.ErrHalted.Error(), Process: &proc}, nil
		}
		return agent.Outcome{}, context.Cause(ctx)
	}
	if !timedOut && !halted && !cancelled && proc.Signal == "" && (code == exitCannotExecute || code == exitNotFound) && srv.Served() == 0 {
		// The shell's "not executable" and "not found": the command never
		// ran, so every trial of the arm would fail the same way.
		return agent.Outcome{}, fmt.Errorf("%w: %s: the command %q exited %d before any tool call (%s): it could not start; stderr: %s",
			agent.ErrConfig, a.armName(), a.redactAll(a.cfg.Command), code, exitMeaning(code), lastLine(proc.Stderr))
	}
	if !timedOut && !halted && slices.Contains(a.cfg.AttritionExitCodes, proc.ExitCode) {
		return agent.Outcome{}, &AttritionError{Process: proc}
	}
	out := agent.Outcome{Process: &proc}
	out.Claim, _ = srv.Claim()
	if halted {
		out.Claim, out.Answer = "", srv.HaltCause()
	}
	return out, nil
}

// Exit codes a shell gives a command it could not run.
const (
	exitCannotExecute = 126
	exitNotFound      = 127
)

func exitMeaning(code int) string {
	if code == exitCannotExecute {
		return "126: found but not executable"
	}
	return "127: not found"
}

// lastLine is the last non-empty line of s (bounded), or "(none)".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return "(none)"
	}
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

// armName names the arm in messages.
func (a *Agent) armName() string {
	if a.cfg.Arm == "" {
		return "command arm"
	}
	return "arm " + a.cfg.Arm
}

// launch starts one trial's process, sealed or not.
type launch struct {
	a       *Agent
	srv     *toolserver.Server
	task    agent.Task
	attempt int
	stdout  io.Writer
	stderr  io.Writer
}

// environ is the process's whole environment: its working directory as
// HOME and TMPDIR, the few worker variables a runtime needs, the arm's
// variables, and rebound's.
func (l launch) environ(dir, mcpURL, toolsURL string) []string {
	environ := []string{"HOME=" + dir, "TMPDIR=" + dir}
	for _, k := range passedThrough {
		if v, ok := os.LookupEnv(k); ok {
			environ = append(environ, k+"="+v)
		}
	}
	environ = append(environ, l.a.env...)
	b := l.task.Budget
	environ = append(environ,
		EnvMCPURL+"="+mcpURL, EnvToolsURL+"="+toolsURL,
		EnvGoal+"="+l.task.Goal, EnvTrialID+"="+l.task.TrialID, EnvAttempt+"="+strconv.Itoa(l.attempt),
		EnvCallBudget+"="+strconv.Itoa(b.CallLimit()), EnvDeadlineMs+"="+strconv.FormatInt(max(b.DeadlineMs, 0), 10),
		EnvReplanBudget+"="+strconv.Itoa(max(b.Replans, 0)), EnvCostLimit+"="+strconv.FormatFloat(max(b.CostUSD, 0), 'f', -1, 64),
		EnvRetryLimit+"="+strconv.Itoa(max(l.task.RetryLimit, 0)),
		EnvMCPConfig+"="+MCPConfig(l.a.bin, mcpURL))
	if l.a.bin != "" {
		environ = append(environ, EnvBin+"="+l.a.bin)
	}
	return environ
}

// running is a started trial process.
type running interface {
	exited() <-chan struct{}
	// stop ends every process of the trial: SIGTERM, then SIGKILL after
	// killGrace; it returns when none is left.
	stop()
	status() (code int, signal string)
	closeServer()
	cleanup()
}

// sealed starts the process in a sandbox: the tool server listens inside
// the sandbox's network namespace, at a port and a path chosen before the
// process starts (its environment names them), beside the arm's egress
// routes.
func (l launch) sealed() (running, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	prefix := "/" + hex.EncodeToString(secret)
	dir := "/tmp/rebound-trial-" + hex.EncodeToString(secret[:6])
	port := freePort(l.a.routes, secret)
	base := "http://127.0.0.1:" + strconv.Itoa(port) + prefix
	sb, err := sandbox.Start(sandbox.Spec{
		Command: l.a.cfg.Command, Env: l.environ(dir, base+"/mcp", base+"/tools"), Dir: dir,
		ReadOnly: l.readOnly(), Hosts: l.a.hosts, Limits: l.a.cfg.Limits,
		Stdout: l.stdout, Stderr: l.stderr,
	})
	if err != nil {
		return nil, err
	}
	s := &sealedProc{sb: sb}
	fail := func(err error) (running, error) {
		sb.Stop(0)
		return nil, err
	}
	for _, r := range l.a.routes {
		if err := sb.Forward(r.Inside, r.Outside); err != nil {
			return fail(err)
		}
	}
	ln, err := sb.Listen("127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		return fail(err)
	}
	if s.server, err = l.srv.Start(toolserver.OnListener(ln), toolserver.AtPrefix(prefix)); err != nil {
		return fail(err)
	}
	if err := sb.Release(); err != nil {
		s.server.Close()
		return fail(err)
	}
	return s, nil
}

// readOnly is what the sealed process may read besides its command's
// directory: the arm's paths and the rebound binary (REBOUND_BIN).
func (l launch) readOnly() []string {
	if l.a.bin == "" {
		return l.a.cfg.ReadOnly
	}
	return append(slices.Clone(l.a.cfg.ReadOnly), l.a.bin)
}

// freePort picks the tool server's port inside the sandbox, where only the
// egress routes hold ports: any other is free in an empty namespace.
func freePort(routes []sandbox.Route, seed []byte) int {
	taken := map[string]bool{}
	for _, r := range routes {
		if _, p, err := net.SplitHostPort(r.Inside); err == nil {
			taken[p] = true
		}
	}
	port := 20000 + (int(seed[0])<<8|int(seed[1]))%30000
	for taken[strconv.Itoa(port)] {
		port++
	}
	return port
}

type sealedProc struct {
	sb     *sandbox.Sandbox
	server *toolserver.Running
	closed bool
}

func (p *sealedProc) exited() <-chan struct{} { return p.sb.Exited() }
func (p *sealedProc) stop()                   { p.sb.Stop(killGrace) }
func (p *sealedProc) status() (int, string) {
	st := p.sb.Status()
	return st.ExitCode, st.Signal
}
func (p *sealedProc) closeServer() {
	if !p.closed {
		p.closed = true
		p.server.Close()
	}
}
func (p *sealedProc) cleanup() { p.closeServer() }

// unsealed starts the process as a plain child of the worker, in its own
// process group, with the tool server on the worker's loopback.
func (l launch) unsealed() (running, error) {
	server, err := l.srv.Start()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rebound-trial-")
	if err != nil {
		server.Close()
		return nil, fmt.Errorf("working directory: %w", err)
	}
	cmd := exec.Command(l.a.cfg.Command[0], l.a.cfg.Command[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, l.environ(dir, server.MCPURL, server.ToolsURL), l.stdout, l.stderr
	// A child that outlives the process and holds its output open must not
	// hold the trial: Wait gives up on the pipes this long after the exit.
	cmd.WaitDelay = 2 * time.Second
	// Its own group (a timeout stops its children too), killed by the
	// kernel if the worker dies.
	child, err := childproc.Start(cmd)
	if err != nil {
		server.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &proc{child: child, server: server, dir: dir}, nil
}

// redact removes the values read through EnvFrom from text bound for
// storage (storage redacts secret shapes on top).
func (a *Agent) redact(s string) string {
	for _, v := range a.secrets {
		s = strings.ReplaceAll(s, v, "[REDACTED]")
	}
	return s
}

func (a *Agent) redactAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = a.redact(s)
	}
	return out
}

// proc is a started process group (an unsealed arm's process).
type proc struct {
	child  *childproc.Process
	server *toolserver.Running
	dir    string
	closed bool
}

func (p *proc) exited() <-chan struct{} { return p.child.Done() }

func (p *proc) status() (int, string) {
	state := p.child.State()
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return state.ExitCode(), ws.Signal().String()
	}
	return state.ExitCode(), ""
}

func (p *proc) closeServer() {
	if !p.closed {
		p.closed = true
		p.server.Close()
	}
}

func (p *proc) cleanup() {
	p.closeServer()
	os.RemoveAll(p.dir)
}

// stop ends the process group: SIGTERM, then SIGKILL after a grace. A
// process that already exited may have left children in its group; they
// are killed too.
func (p *proc) stop() {
	select {
	case <-p.child.Done():
		_ = p.child.SignalGroup(syscall.SIGKILL)
		return
	default:
	}
	_ = p.child.SignalGroup(syscall.SIGTERM)
	select {
	case <-p.child.Done():
	case <-time.After(killGrace):
	}
	_ = p.child.SignalGroup(syscall.SIGKILL)
	<-p.child.Done()
}

// capped keeps the head and the tail of a stream; the middle of a long
// stream is dropped and the drop is marked.
type capped struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // the last tailBytes written after the head filled
	dropped int64
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	if room := headBytes - len(c.head); room > 0 {
		k := min(room, len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
	}
	c.tail = append(c.tail, b...)
	if over := len(c.tail) - tailBytes; over > 0 {
		c.dropped += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	b.Write(c.head)
	if c.dropped > 0 {
		fmt.Fprintf(&b, "\n[... %d bytes dropped ...]\n", c.dropped)
	}
	b.Write(c.tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// IsAttrition reports whether err is a declared infrastructure failure,
// and returns its process record when there is one.
func IsAttrition(err error) (*agent.Process, bool) {
	var ae *AttritionError
	if errors.As(err, &ae) {
		return &ae.Process, true
	}
	return nil, errors.Is(err, agent.ErrAttrition)
}
