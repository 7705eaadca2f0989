// Package command runs an external agent, unchanged, as a rebound agent: a
// command arm (agent: command). For each trial it starts the trial's tool
// server (toolserver: MCP and plain HTTP on loopback), runs the arm's
// command once in a temporary working directory with the server's URLs,
// the goal and the trial id in its environment, and hands back the claim
// the process submitted through submit_claim. trial.Run stays the one
// function that runs and grades a trial; this is just another agent.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
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
)

// Environment variables the process receives from rebound.
const (
	EnvMCPURL   = "REBOUND_MCP_URL"   // the trial's MCP endpoint (streamable HTTP)
	EnvToolsURL = "REBOUND_TOOLS_URL" // plain HTTP tools: POST $REBOUND_TOOLS_URL/{name}
	EnvGoal     = "REBOUND_GOAL"      // the scenario's goal
	EnvTrialID  = "REBOUND_TRIAL_ID"  // derived, stable across retries
	EnvAttempt  = "REBOUND_ATTEMPT"   // the activity attempt running the trial (1 = first)
)

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
}

// FromArm builds the config of a command arm.
func FromArm(arm scenario.Arm) Config {
	return Config{Command: arm.Command, Env: arm.Env, EnvFrom: arm.EnvFrom, Timeout: arm.CommandTimeout(),
		AttritionExitCodes: arm.AttritionExitCodes}
}

// Agent runs one command arm's process per trial.
type Agent struct {
	cfg     Config
	secrets []string // values read through EnvFrom, redacted by value
	env     []string // Env and EnvFrom, resolved
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
	running, err := srv.Start()
	if err != nil {
		return agent.Outcome{}, err
	}
	closed := false
	closeServer := func() {
		if !closed {
			closed = true
			running.Close()
		}
	}
	defer closeServer()
	dir, err := os.MkdirTemp("", "rebound-trial-")
	if err != nil {
		return agent.Outcome{}, fmt.Errorf("command arm: working directory: %w", err)
	}
	defer os.RemoveAll(dir)

	attempt := 1
	if n, ok := ctx.Value(attemptKey{}).(int); ok && n > 0 {
		attempt = n
	}
	environ := []string{"HOME=" + dir, "TMPDIR=" + dir}
	for _, k := range passedThrough {
		if v, ok := os.LookupEnv(k); ok {
			environ = append(environ, k+"="+v)
		}
	}
	environ = append(environ, a.env...)
	environ = append(environ,
		EnvMCPURL+"="+running.MCPURL, EnvToolsURL+"="+running.ToolsURL,
		EnvGoal+"="+task.Goal, EnvTrialID+"="+task.TrialID, EnvAttempt+"="+strconv.Itoa(attempt))

	stdout, stderr := &capped{}, &capped{}
	cmd := exec.Command(a.cfg.Command[0], a.cfg.Command[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, environ, stdout, stderr
	// A child that outlives the process and holds its output open must not
	// hold the trial: Wait gives up on the pipes this long after the exit.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // its own group: a timeout stops its children too
		Pdeathsig: syscall.SIGKILL, // killed by the kernel if the worker dies
	}
	start := time.Now()
	p, err := spawn(cmd)
	if err != nil {
		return agent.Outcome{}, fmt.Errorf("%w: command arm: cannot start %s: %v", agent.ErrConfig, a.cfg.Command[0], a.redact(err.Error()))
	}
	timer := time.NewTimer(a.cfg.Timeout)
	defer timer.Stop()
	var timedOut, halted, cancelled bool
	select {
	case <-p.exited:
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
	closeServer()

	proc := agent.Process{
		Command: a.redactAll(a.cfg.Command), ExitCode: p.state.ExitCode(), TimedOut: timedOut,
		WallMs: time.Since(start).Milliseconds(),
		Stdout: a.redact(stdout.String()), Stderr: a.redact(stderr.String()),
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		proc.Signal = ws.Signal().String()
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

// proc is a started process group.
type proc struct {
	cmd    *exec.Cmd
	pgid   int
	exited chan struct{}
	state  *os.ProcessState
}

// spawn starts cmd from a goroutine locked to its OS thread: Pdeathsig
// fires when the thread that forked the child exits, so that thread must
// live as long as the child.
func spawn(cmd *exec.Cmd) (*proc, error) {
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pgid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // the exit status is in cmd.ProcessState
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after a grace. A
// process that already exited may have left children in its group; they
// are killed too.
func (p *proc) stop() {
	select {
	case <-p.exited:
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(killGrace):
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	<-p.exited
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
