package harness

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
)

// FaultClass is the kind of failure injected at one call.
type FaultClass string

const (
	Transient         FaultClass = "transient"           // timeout, 502, 503: retry may help
	RateLimited       FaultClass = "rate_limited"        // 429 with retry-after
	InvalidInput      FaultClass = "invalid_input"       // 400: the identical call fails again
	Unauthorized      FaultClass = "unauthorized"        // 401
	Forbidden         FaultClass = "forbidden"           // 403: an authority boundary
	Unavailable       FaultClass = "unavailable"         // tool or method missing
	TimeoutBeforeSend FaultClass = "timeout_before_send" // nothing reached the world
	TimeoutAfterSend  FaultClass = "timeout_after_send"  // committed, response lost
	CorruptOutput     FaultClass = "corrupt_output"      // malformed or inconsistent data
	Slow              FaultClass = "slow"                // beyond the tool's deadline
	Stale             FaultClass = "stale"               // weaker, older evidence
)

// FaultClasses lists every class, in documentation order.
var FaultClasses = []FaultClass{
	Transient, RateLimited, InvalidInput, Unauthorized, Forbidden, Unavailable,
	TimeoutBeforeSend, TimeoutAfterSend, CorruptOutput, Slow, Stale,
}

// Valid reports whether c is a known class.
func (c FaultClass) Valid() bool {
	for _, k := range FaultClasses {
		if k == c {
			return true
		}
	}
	return false
}

// sticky classes describe a standing condition rather than a blip: once one
// fires for a tool, every later call of that tool fails the same way unless
// the fault limits itself with Count.
func (c FaultClass) sticky() bool {
	return c == Unauthorized || c == Forbidden || c == Unavailable
}

// Fault is one entry of a fault schedule: what fails, how, and when.
//
// When it fires, by exactly one trigger:
//   - Attempts: at these attempt numbers of Tool (1-based, counted per tool);
//   - From/Count: from attempt From for Count attempts (Count 0 = forever);
//   - Always: at every attempt of Tool, until the budget is spent;
//   - Call: at this global call index of the trial (1-based).
//
// Probability (0 < p < 1) thins the trigger with a draw derived from the
// trial seed, so the schedule stays a pure function of (variant, seed).
type Fault struct {
	Class        FaultClass `json:"class" yaml:"class"`
	Tool         string     `json:"tool,omitempty" yaml:"tool,omitempty"`
	Attempts     []int      `json:"attempts,omitempty" yaml:"attempts,omitempty"`
	From         int        `json:"from,omitempty" yaml:"from,omitempty"`
	Count        int        `json:"count,omitempty" yaml:"count,omitempty"`
	Always       bool       `json:"always,omitempty" yaml:"always,omitempty"`
	Call         int        `json:"call,omitempty" yaml:"call,omitempty"`
	Probability  float64    `json:"probability,omitempty" yaml:"probability,omitempty"`
	Code         string     `json:"code,omitempty" yaml:"code,omitempty"`
	Retryable    *bool      `json:"retryable,omitempty" yaml:"retryable,omitempty"`
	RetryAfterMs int64      `json:"retry_after_ms,omitempty" yaml:"retry_after_ms,omitempty"`
	Message      string     `json:"message,omitempty" yaml:"message,omitempty"`
	// Corruption is "malformed" (truncated JSON) or "inconsistent" (fields
	// that contradict each other) for corrupt_output faults.
	Corruption string `json:"corruption,omitempty" yaml:"corruption,omitempty"`
	// AgeMs is the age of the evidence for stale faults.
	AgeMs int64 `json:"age_ms,omitempty" yaml:"age_ms,omitempty"`
}

// Validate checks one fault; the error names the offending field.
func (f Fault) Validate() error {
	if !f.Class.Valid() {
		return fmt.Errorf("class: unknown fault class %q", f.Class)
	}
	triggers := 0
	if len(f.Attempts) > 0 {
		triggers++
		for _, a := range f.Attempts {
			if a < 1 {
				return fmt.Errorf("attempts: attempt numbers start at 1, got %d", a)
			}
		}
	}
	if f.From > 0 {
		triggers++
	}
	if f.Always {
		triggers++
	}
	if f.Call > 0 {
		triggers++
	}
	if triggers != 1 {
		return fmt.Errorf("attempts: exactly one trigger of attempts, from, always or call is required (got %d)", triggers)
	}
	if f.Count < 0 || f.From < 0 || f.Call < 0 {
		return fmt.Errorf("count: must not be negative")
	}
	if f.Count > 0 && f.From == 0 {
		return fmt.Errorf("count: only valid together with from")
	}
	if f.Tool == "" && f.Call == 0 {
		return fmt.Errorf("tool: required unless the fault fires by call index")
	}
	if f.Probability < 0 || f.Probability >= 1 {
		if f.Probability != 0 {
			return fmt.Errorf("probability: must be in (0, 1), got %v", f.Probability)
		}
	}
	switch f.Corruption {
	case "", "malformed", "inconsistent":
	default:
		return fmt.Errorf("corruption: must be malformed or inconsistent, got %q", f.Corruption)
	}
	if f.Corruption != "" && f.Class != CorruptOutput {
		return fmt.Errorf("corruption: only valid for class corrupt_output")
	}
	if f.RetryAfterMs < 0 || f.AgeMs < 0 {
		return fmt.Errorf("retry_after_ms: must not be negative")
	}
	return nil
}

// defaults gives the normalized code and retryability a real adapter would
// return for this class.
func (f Fault) normalized() (code string, retryable bool) {
	switch f.Class {
	case Transient:
		code, retryable = CodeUnavailable, true
	case RateLimited:
		code, retryable = CodeRateLimited, true
	case InvalidInput:
		code, retryable = CodeInvalidInput, false
	case Unauthorized:
		code, retryable = CodeUnauthorized, false
	case Forbidden:
		code, retryable = CodeForbidden, false
	case Unavailable:
		code, retryable = CodeToolUnavailable, false
	case TimeoutBeforeSend, Slow:
		code, retryable = CodeTimeout, true
	case TimeoutAfterSend:
		code, retryable = CodeTimeoutAfterSend, true
	}
	if f.Code != "" {
		code = f.Code
	}
	if f.Retryable != nil {
		retryable = *f.Retryable
	}
	return code, retryable
}

// Schedule is the deterministic list of faults for one trial. It is derived
// from the scenario variant and the seed, never from the agent's behaviour:
// whether attempt k of tool T fails is fixed before the trial starts.
type Schedule struct {
	Faults []Fault `json:"faults"`
	Seed   uint64  `json:"seed"`
}

// NewSchedule validates faults and binds them to a seed.
func NewSchedule(faults []Fault, seed uint64) (Schedule, error) {
	for i, f := range faults {
		if err := f.Validate(); err != nil {
			return Schedule{}, fmt.Errorf("faults[%d].%w", i, err)
		}
	}
	return Schedule{Faults: append([]Fault(nil), faults...), Seed: seed}, nil
}

// Classes returns the distinct fault classes of the schedule.
func (s Schedule) Classes() []string {
	seen := map[FaultClass]bool{}
	var out []string
	for _, f := range s.Faults {
		if !seen[f.Class] {
			seen[f.Class] = true
			out = append(out, string(f.Class))
		}
	}
	return out
}

// match returns the index of the first fault that fires for attempt number
// attempt (1-based, per tool) of tool at global call index call, or -1.
func (s Schedule) match(tool string, attempt, call int) int {
	for i, f := range s.Faults {
		if f.Tool != "" && f.Tool != tool {
			continue
		}
		if !f.triggers(attempt, call) {
			continue
		}
		if f.Probability > 0 && s.draw(i, tool, attempt) >= f.Probability {
			continue
		}
		return i
	}
	return -1
}

// Triggers reports whether the fault's trigger selects the attempt-th call
// of its tool, the call-th of the trial (before probability thins it).
func (f Fault) Triggers(attempt, call int) bool { return f.triggers(attempt, call) }

func (f Fault) triggers(attempt, call int) bool {
	switch {
	case len(f.Attempts) > 0:
		for _, a := range f.Attempts {
			if a == attempt {
				return true
			}
		}
		return false
	case f.From > 0:
		return attempt >= f.From && (f.Count == 0 || attempt < f.From+f.Count)
	case f.Always:
		return true
	case f.Call > 0:
		return call == f.Call
	}
	return false
}

// draw is a uniform number in [0,1) that depends only on the seed, the fault
// and the attempt.
func (s Schedule) draw(fault int, tool string, attempt int) float64 {
	h := sha256.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], s.Seed)
	h.Write(buf[:])
	h.Write([]byte(strconv.Itoa(fault) + "\x00" + tool + "\x00" + strconv.Itoa(attempt)))
	sum := h.Sum(nil)
	return float64(binary.LittleEndian.Uint64(sum[:8])>>11) / (1 << 53)
}
