package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"rebound/core/bounds"
)

// World is the simulated system behind the tools. Its state is the ground
// truth the grader reads.
type World interface {
	// Tools is the world's catalog with its metadata.
	Tools() []Tool
	// Invoke executes a call that reached the world. Side effects are
	// reported through fx as they commit; a domain failure is a ToolError.
	Invoke(tool string, args map[string]any, fx Effects) (map[string]any, *ToolError)
	// State is a JSON-compatible snapshot of the world for assertions.
	State() map[string]any
}

// Effects receives the side effects a world commits during one call.
type Effects interface {
	Commit(kind, intent, object string)
}

// Hard limits of one trial, enforced by the dispatcher whatever the scenario
// says and whatever the agent does: a trial's memory is bounded by them.
const (
	// DefaultToolCalls is the call budget of a trial whose scenario sets
	// none (budget.tool_calls omitted or 0).
	DefaultToolCalls = 50
	// MaxToolCalls is the largest call budget: the harness never sends more
	// calls than this in one trial.
	MaxToolCalls = 10_000
	// MaxRefusedCalls is how many calls beyond the budget are recorded (as
	// refused) before the harness halts the trial.
	MaxRefusedCalls = 100
	// MaxReplans is how many plan updates are recorded before the harness
	// halts the trial.
	MaxReplans = 1_000
)

// ErrHalted is the cause of the context a Dispatcher cancels (Bind) when it
// halts a trial: the agent kept going after MaxRefusedCalls refusals or
// MaxReplans plan updates.
var ErrHalted = errors.New("harness: trial halted: the agent kept calling after its budget was spent")

// Halt is the value a halted dispatcher panics with when the agent ignores
// both the refusals and its cancelled context; the trial runner recovers it.
type Halt struct{ Reason string }

func (h Halt) Error() string { return "harness: trial halted: " + h.Reason }

// Budget bounds a trial. A zero ToolCalls means DefaultToolCalls, and no
// budget exceeds MaxToolCalls; the other zero fields mean unbounded.
type Budget struct {
	ToolCalls  int     `json:"tool_calls,omitempty" yaml:"tool_calls,omitempty"`
	Replans    int     `json:"replans,omitempty" yaml:"replans,omitempty"`
	DeadlineMs int64   `json:"deadline_ms,omitempty" yaml:"deadline_ms,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty" yaml:"cost_usd,omitempty"`
}

// Clock is the simulated clock of a trial. Tests never sleep for real: a
// tool's latency, a timeout and an agent's backoff all advance this clock.
type Clock struct{ nowMs int64 }

// Now returns the simulated time in milliseconds since the trial started.
func (c *Clock) Now() int64 { return c.nowMs }

// Advance moves the clock forward; negative durations are ignored.
func (c *Clock) Advance(ms int64) {
	if ms > 0 {
		c.nowMs += ms
	}
}

// Dispatcher is the narrow boundary every tool call passes through.
type Dispatcher struct {
	world       World
	offered     map[string]Tool
	permissions map[string]bool
	schedule    Schedule
	budget      Budget
	clock       Clock
	ledger      Ledger
	cost        float64

	attempts    map[string]int
	stuck       map[string]int  // tool -> index of a sticky fault that fired
	invalidArgs map[string]int  // tool+argsKey -> fault index of an invalid_input
	limited     map[string]hold // tool -> a rate limit in force on the simulated clock
	plans       map[string]bool // normalized replan summaries seen

	sent      int // calls not refused (the ledger's Sent, kept in O(1))
	kept      int // bytes of arguments, results and plans the ledger holds whole (bounds.Ledger)
	refused   int // calls refused because the budget was spent
	replans   int // plan updates, recorded or not
	haltOnce  sync.Once
	mu        sync.Mutex
	cancels   []context.CancelCauseFunc
	halted    chan struct{}
	afterHalt int // calls and replans after the halt
}

// Config assembles a dispatcher for one trial.
type Config struct {
	World World
	// Offered lists the tool names the scenario offers to the agent; empty
	// means the whole catalog. Calls to other names get TOOL_UNAVAILABLE.
	Offered []string
	// Permissions the agent holds; a tool whose permission is missing is
	// answered FORBIDDEN by the (simulated) provider.
	Permissions []string
	Schedule    Schedule
	Budget      Budget
}

// NewDispatcher validates the configuration and returns a ready dispatcher.
func NewDispatcher(cfg Config) (*Dispatcher, error) {
	if cfg.World == nil {
		return nil, fmt.Errorf("harness: no world")
	}
	catalog := map[string]Tool{}
	for _, t := range cfg.World.Tools() {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("harness: world catalog: %w", err)
		}
		catalog[t.Name] = t
	}
	offered := map[string]Tool{}
	if len(cfg.Offered) == 0 {
		offered = catalog
	}
	for _, name := range cfg.Offered {
		t, ok := catalog[name]
		if !ok {
			return nil, fmt.Errorf("harness: tool %q is not in the world's catalog (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(catalog)), ", "))
		}
		offered[name] = t
	}
	perms := map[string]bool{}
	for _, p := range cfg.Permissions {
		perms[p] = true
	}
	for i, f := range cfg.Schedule.Faults {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("harness: faults[%d].%w", i, err)
		}
	}
	return &Dispatcher{
		world:       cfg.World,
		offered:     offered,
		permissions: perms,
		schedule:    cfg.Schedule,
		budget:      cfg.Budget,
		attempts:    map[string]int{},
		stuck:       map[string]int{},
		invalidArgs: map[string]int{},
		limited:     map[string]hold{},
		plans:       map[string]bool{},
		halted:      make(chan struct{}),
	}, nil
}

// CallLimit is the number of calls the harness sends in this trial: the
// budget's tool_calls, DefaultToolCalls when it sets none, never more than
// MaxToolCalls.
func (d *Dispatcher) CallLimit() int { return d.budget.CallLimit() }

// Halted is closed when the harness halts the trial.
func (d *Dispatcher) Halted() <-chan struct{} { return d.halted }

// IsHalted reports whether the harness halted the trial.
func (d *Dispatcher) IsHalted() bool {
	select {
	case <-d.halted:
		return true
	default:
		return false
	}
}

// Bind returns a context that is cancelled, with cause ErrHalted, when the
// harness halts the trial; give it to the agent. Call stop when the trial
// ends.
func (d *Dispatcher) Bind(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	d.cancels = append(d.cancels, cancel)
	d.mu.Unlock()
	if d.IsHalted() {
		cancel(ErrHalted)
	}
	return ctx, func() { cancel(nil) }
}

// halt stops the trial: nothing more is recorded, the bound context is
// cancelled, and an agent that still does not stop is unwound by a panic
// with Halt after another MaxRefusedCalls attempts.
func (d *Dispatcher) halt() {
	d.haltOnce.Do(func() {
		close(d.halted)
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, cancel := range d.cancels {
			cancel(ErrHalted)
		}
	})
	d.afterHalt++
	if d.afterHalt > MaxRefusedCalls {
		panic(Halt{Reason: fmt.Sprintf("%d calls or plan updates after the harness stopped the trial", d.afterHalt)})
	}
}

// Tools returns the offered tools, sorted by name.
func (d *Dispatcher) Tools() []Tool {
	out := make([]Tool, 0, len(d.offered))
	for _, name := range slices.Sorted(maps.Keys(d.offered)) {
		out = append(out, d.offered[name])
	}
	return out
}

// Tool returns the metadata of an offered tool.
func (d *Dispatcher) Tool(name string) (Tool, bool) {
	t, ok := d.offered[name]
	return t, ok
}

// Ledger returns the record of the trial so far. Callers must not modify it.
func (d *Dispatcher) Ledger() *Ledger { return &d.ledger }

// Clock returns the trial's simulated clock.
func (d *Dispatcher) Clock() *Clock { return &d.clock }

// Budget returns the trial's budget.
func (d *Dispatcher) Budget() Budget { return d.budget }

// Cost returns the simulated tool cost spent so far.
func (d *Dispatcher) Cost() float64 { return d.cost }

// World returns the world behind the dispatcher, for grading.
func (d *Dispatcher) World() World { return d.world }

// Replan records a plan update. Publishing the same plan twice is a replan
// that changes nothing; both count toward the replan budget.
func (d *Dispatcher) Replan(summary string) { d.UpdatePlan(summary) }

// UpdatePlan is Replan with the harness's answer: a summary over
// bounds.PlanSummary (as JSON) is refused with INVALID_INPUT and recorded
// as refused, its text replaced by a marker (its size and hash); it still
// counts toward the replan budget.
func (d *Dispatcher) UpdatePlan(summary string) Result {
	d.replans++
	if d.replans > MaxReplans || d.IsHalted() {
		d.halt()
		return Failed(CodeBudgetExhausted, false, "the harness stopped the trial")
	}
	r := Replan{AtCall: len(d.ledger.Attempts), Summary: summary}
	var key string
	var res Result
	n := bounds.EscapedLen(summary) + 2
	if n > bounds.PlanSummary {
		r.Refused = true
		r.Summary = bounds.Refused(summary, refusedHead)
		key = "\x00refused:" + r.Summary // the marker names the full text's hash
		res = Failed(CodeInvalidInput, false, "the plan update is %d bytes as JSON, over the harness's cap of %d bytes; nothing was sent (publish a shorter summary)", n, bounds.PlanSummary)
	} else {
		key = strings.Join(strings.Fields(strings.ToLower(summary)), " ")
		res = Succeeded(map[string]any{"now_ms": d.clock.Now()})
		if d.kept+n > bounds.Ledger && n > bounds.LedgerValue {
			r.Summary = bounds.Refused(summary, refusedHead) // accepted, recorded by size and hash
		} else {
			d.kept += n
		}
	}
	r.Repeat = d.plans[key]
	d.ledger.Replans = append(d.ledger.Replans, r)
	d.plans[key] = true
	return res
}

// PlanUpdater is implemented by an agent's environment whose plan updates
// the harness may refuse (the trial runner's, over a Dispatcher):
// UpdatePlan publishes a plan update and returns the harness's answer. An
// agent that answers its model's or process's update_plan (the LLM agent,
// the tool server) uses it when its environment has it, so a refusal
// reaches the agent.
type PlanUpdater interface {
	UpdatePlan(summary string) Result
}

// refusedHead is how much of a refused value's text the ledger keeps, with
// its marker (bounds.Refused).
const refusedHead = 256

// Call executes one tool call through the fault schedule and records it.
func (d *Dispatcher) Call(name string, args map[string]any) Result {
	limit := d.CallLimit()
	if d.IsHalted() {
		d.halt()
		return Failed(CodeBudgetExhausted, false, "the harness stopped the trial")
	}
	if d.sent >= limit {
		d.refused++
		if d.refused > MaxRefusedCalls || d.IsHalted() {
			// Nothing more is recorded: the ledger stays bounded.
			d.halt()
			return Failed(CodeBudgetExhausted, false, "tool-call budget of %d spent; the harness stopped the trial", limit)
		}
	}
	// The ledger keeps its own copy: an agent that edits its argument map
	// after the call (to correct it, say) must not rewrite history.
	args = cloneArgs(args)
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte(err.Error())
	}
	a := Attempt{
		Index:   len(d.ledger.Attempts) + 1,
		Tool:    name,
		Args:    args,
		ArgsKey: argsKey(raw),
		AtMs:    d.clock.Now(),
	}
	// A call over a cap is refused (below, once the budget allows it) and
	// never recorded whole: the ledger keeps the value's size and hash.
	var oversize string
	if len(raw) > bounds.CallArgs {
		a.Args = bounds.Marker(raw)
		oversize = fmt.Sprintf("the arguments of this call are %d bytes as JSON, over the harness's cap of %d bytes", len(raw), bounds.CallArgs)
	}
	if len(name) > bounds.ToolName {
		a.Tool = bounds.Refused(name, refusedHead)
		oversize = fmt.Sprintf("the tool name of this call is %d bytes, over the harness's cap of %d bytes", len(name), bounds.ToolName)
	}
	res, size := boundResult(d.execute(&a, oversize))
	a.Result = res
	a.DoneMs = d.clock.Now()
	d.keep(&a, raw, size)
	d.ledger.Attempts = append(d.ledger.Attempts, a)
	return res
}

// keep holds the ledger's arguments and results within bounds.Ledger: once
// the trial has recorded that much, a call's arguments or result data over
// bounds.LedgerValue are recorded by size and hash (the world got the
// arguments and the agent gets the result as they were).
func (d *Dispatcher) keep(a *Attempt, raw []byte, resultSize int) {
	if !bounds.IsMarker(a.Args) {
		if d.kept+len(raw) > bounds.Ledger && len(raw) > bounds.LedgerValue {
			a.Args = bounds.Marker(raw)
		} else {
			d.kept += len(raw)
		}
	}
	if d.kept+resultSize > bounds.Ledger && resultSize > bounds.LedgerValue && a.Result.Data != nil && !bounds.IsMarker(a.Result.Data) {
		data, err := json.Marshal(a.Result.Data)
		if err != nil {
			data = []byte(err.Error())
		}
		a.Result.Data = bounds.Marker(data)
	} else {
		d.kept += resultSize
	}
}

// boundResult keeps a result within bounds.ToolResult (as JSON): one over
// it keeps its status and code, and its data is replaced by a marker (the
// data's size and hash), its message cut. The ledger records what the
// agent received. size is the JSON size of the result returned.
func boundResult(r Result) (_ Result, size int) {
	b, err := json.Marshal(r)
	if err != nil {
		return r, len(err.Error())
	}
	if len(b) <= bounds.ToolResult {
		return r, len(b)
	}
	if r.Data != nil {
		data, err := json.Marshal(r.Data)
		if err != nil {
			data = []byte(err.Error())
		}
		r.Data = bounds.Marker(data)
	}
	note := fmt.Sprintf("the tool's result was %d bytes as JSON, over the harness's cap of %d bytes; its data was dropped", len(b), bounds.ToolResult)
	if r.Message != "" {
		note += "; message: " + bounds.Cut(r.Message, bounds.ToolResult/2)
	}
	r.Message = note
	return r, len(r.JSON())
}

func (d *Dispatcher) execute(a *Attempt, oversize string) Result {
	if limit := d.CallLimit(); d.sent >= limit {
		a.Refused = true
		return Failed(CodeBudgetExhausted, false, "tool-call budget of %d spent; no further calls are sent", limit)
	}
	d.sent++
	if oversize != "" {
		// Counted against the budget (so a flood of them ends like any
		// other), but no tool saw it: no attempt number, no fault, no cost.
		return Failed(CodeInvalidInput, false, "%s; nothing was sent", oversize)
	}
	d.attempts[a.Tool]++
	a.Attempt = d.attempts[a.Tool]

	tool, ok := d.offered[a.Tool]
	if !ok {
		d.clock.Advance(10)
		return Failed(CodeToolUnavailable, false, "no tool named %q is available", a.Tool)
	}
	a.Effect = tool.Effect
	d.cost += tool.CostUSD

	// The provider's authorization comes first: a call without permission
	// never reaches the world, whatever fault is scheduled.
	if tool.Permission != "" && !d.permissions[tool.Permission] {
		d.clock.Advance(tool.Latency())
		return Failed(CodeForbidden, false, "permission %q is required for %s", tool.Permission, a.Tool)
	}
	// A rate limit holds until its retry-after has elapsed on the
	// simulated clock: a call before then is answered 429 again with the
	// time still to wait, whatever the attempt count says.
	if h, ok := d.limited[a.Tool]; ok && d.clock.Now() < h.untilMs {
		f := d.schedule.Faults[h.fault]
		a.Fault = &f
		d.clock.Advance(tool.Latency())
		code, retryable := f.normalized()
		r := Failed(code, retryable, "%s", nonEmpty(f.Message, "rate limit exceeded"))
		r.RetryAfterMs = max(h.untilMs-d.clock.Now(), 1)
		return r
	}
	if idx := d.faultFor(a); idx >= 0 {
		f := d.schedule.Faults[idx]
		a.Fault = &f
		return d.inject(a, tool, f, idx)
	}
	d.clock.Advance(tool.Latency())
	return d.invoke(a)
}

// faultFor finds the fault shaping this attempt: a standing (sticky) fault,
// an argument set already rejected as invalid, or a scheduled fault.
func (d *Dispatcher) faultFor(a *Attempt) int {
	if idx, ok := d.stuck[a.Tool]; ok {
		return idx
	}
	if idx, ok := d.invalidArgs[a.Tool+"\x00"+a.ArgsKey]; ok {
		return idx
	}
	idx := d.schedule.match(a.Tool, a.Attempt, a.Index)
	if idx < 0 {
		return -1
	}
	f := d.schedule.Faults[idx]
	if f.Class.sticky() && f.Count == 0 {
		d.stuck[a.Tool] = idx
	}
	if f.Class == InvalidInput {
		d.invalidArgs[a.Tool+"\x00"+a.ArgsKey] = idx
	}
	return idx
}

func (d *Dispatcher) inject(a *Attempt, tool Tool, f Fault, idx int) Result {
	code, retryable := f.normalized()
	msg := f.Message
	switch f.Class {
	case Transient:
		d.clock.Advance(tool.Latency())
		if msg == "" {
			msg = "upstream " + strings.ToLower(strings.ReplaceAll(code, "_", " "))
		}
	case RateLimited:
		d.clock.Advance(tool.Latency())
		r := Failed(code, retryable, "%s", nonEmpty(msg, "rate limit exceeded"))
		r.RetryAfterMs = f.RetryAfterMs
		if r.RetryAfterMs == 0 {
			r.RetryAfterMs = 1000
		}
		d.limited[a.Tool] = hold{untilMs: d.clock.Now() + r.RetryAfterMs, fault: idx}
		return r
	case InvalidInput:
		d.clock.Advance(tool.Latency())
		msg = nonEmpty(msg, "request failed schema validation")
	case Unauthorized:
		d.clock.Advance(tool.Latency())
		msg = nonEmpty(msg, "credentials missing or expired")
	case Forbidden:
		d.clock.Advance(tool.Latency())
		msg = nonEmpty(msg, "the caller is not allowed to perform this action")
	case Unavailable:
		d.clock.Advance(10)
		msg = nonEmpty(msg, "tool or method is not available")
	case TimeoutBeforeSend:
		d.clock.Advance(tool.Deadline())
		msg = nonEmpty(msg, fmt.Sprintf("no response within %dms", tool.Deadline()))
	case Slow:
		d.clock.Advance(tool.Deadline())
		msg = nonEmpty(msg, fmt.Sprintf("deadline of %dms exceeded", tool.Deadline()))
	case TimeoutAfterSend:
		d.clock.Advance(tool.Deadline())
		d.invoke(a) // the request reached the world; its effects commit
		r := Failed(code, retryable, "%s", nonEmpty(msg, "connection closed before the response arrived"))
		r.Uncertain = true
		return r
	case CorruptOutput:
		d.clock.Advance(tool.Latency())
		r := d.invoke(a)
		if r.OK {
			a.Corrupt = true
			r.Data = corrupt(r.Data, f.Corruption)
		}
		return r
	case Stale:
		d.clock.Advance(tool.Latency())
		r := d.invoke(a)
		if r.OK {
			age := f.AgeMs
			if age == 0 {
				age = 5 * 60 * 1000
			}
			r.Evidence = &Evidence{Strength: "stale", AgeMs: age}
		}
		return r
	}
	return Failed(code, retryable, "%s", msg)
}

// invoke runs the call in the world and records its commits.
func (d *Dispatcher) invoke(a *Attempt) Result {
	a.Reached = true
	rec := &recorder{ledger: &d.ledger, call: a.Index, tool: a.Tool}
	data, terr := d.world.Invoke(a.Tool, a.Args, rec)
	if terr != nil {
		return Result{Code: terr.Code, Retryable: terr.Retryable, Message: terr.Message}
	}
	r := Succeeded(data)
	if t := d.offered[a.Tool]; t.StaleAgeMs > 0 {
		r.Evidence = &Evidence{Strength: "stale", AgeMs: t.StaleAgeMs}
	}
	return r
}

// hold is a rate limit in force for a tool until a simulated time.
type hold struct {
	untilMs int64
	fault   int
}

type recorder struct {
	ledger *Ledger
	call   int
	tool   string
}

func (r *recorder) Commit(kind, intent, object string) {
	r.ledger.Commits = append(r.ledger.Commits, Commit{Call: r.call, Tool: r.tool, Kind: kind, Intent: intent, Object: object})
}

// corrupt damages successful data the way a broken adapter would.
func corrupt(data map[string]any, mode string) map[string]any {
	if mode == "inconsistent" {
		out := map[string]any{}
		for k, v := range data {
			switch x := v.(type) {
			case int:
				out[k] = -x - 1
			case int64:
				out[k] = -x - 1
			case float64:
				out[k] = -x - 1
			case bool:
				out[k] = !x
			default:
				out[k] = v
			}
		}
		out["checksum_ok"] = false
		return out
	}
	raw := Succeeded(data).JSON()
	if len(raw) > 12 {
		raw = raw[:len(raw)*2/3]
	}
	return map[string]any{"raw": raw, "parse_error": "unexpected end of JSON input"}
}

// cloneArgs deep-copies a JSON-compatible argument map.
func cloneArgs(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneArgs(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func nonEmpty(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}
