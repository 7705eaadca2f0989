package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Attempt is one tool call as the harness saw it: what was asked, whether a
// fault fired, whether the world executed it, and what the agent got back.
type Attempt struct {
	Index   int            `json:"index"`    // 1-based position in the trial
	Tool    string         `json:"tool"`     // name the agent called
	Args    map[string]any `json:"args"`     // as sent (redacted before storage)
	ArgsKey string         `json:"args_key"` // hash of the canonical arguments
	Attempt int            `json:"attempt"`  // 1-based attempt number for this tool
	AtMs    int64          `json:"at_ms"`    // simulated time the call was issued
	DoneMs  int64          `json:"done_ms"`  // simulated time the result came back
	// Fault is the injected fault that shaped this call, if any.
	Fault *Fault `json:"fault,omitempty"`
	// Reached is true when the world executed the call (its effects, if
	// any, are in Commits even if the agent saw a failure).
	Reached bool   `json:"reached"`
	Result  Result `json:"result"`
	// Corrupt marks successful-looking data the harness knows is invalid.
	Corrupt bool `json:"corrupt,omitempty"`
	// Refused marks a call the harness did not send because the tool-call
	// budget was spent. (A call over a size cap, core/bounds, is not
	// Refused: it is answered INVALID_INPUT by the harness, counts toward
	// the budget and never reaches the tool; its Args are a bounds.Marker.)
	Refused bool `json:"refused,omitempty"`
	// Effect is the tool's declared effect ("" for unknown tools).
	Effect Effect `json:"effect,omitempty"`
}

// Failed reports whether the agent saw a failure for this call.
func (a Attempt) Failed() bool { return !a.Result.OK }

// Commit is one side effect the world committed. Intent identifies the
// business intent (the invoice refunded, the order charged): two commits of
// one intent by a non-idempotent tool are a duplicate side effect.
type Commit struct {
	Call   int    `json:"call"` // Attempt.Index that committed it
	Tool   string `json:"tool"`
	Kind   string `json:"kind"`
	Intent string `json:"intent"`
	Object string `json:"object,omitempty"`
}

// Replan is a plan update the agent published.
type Replan struct {
	AtCall  int    `json:"at_call"` // number of calls made before it
	Summary string `json:"summary"`
	// Repeat is true when the same plan was published before: a replan
	// loop that changes nothing.
	Repeat bool `json:"repeat"`
	// Refused marks an update over bounds.PlanSummary: the harness
	// answered INVALID_INPUT and Summary keeps only a head and a marker
	// with the full text's size and hash.
	Refused bool `json:"refused,omitempty"`
}

// Ledger is the harness-owned record of a trial: every attempted call and
// every committed side effect. Only the Dispatcher writes it; the agent
// never does.
type Ledger struct {
	Attempts []Attempt `json:"attempts"`
	Commits  []Commit  `json:"commits"`
	Replans  []Replan  `json:"replans,omitempty"`
}

// Duplicates returns, per intent, the commits beyond the first of intents
// committed more than once.
func (l *Ledger) Duplicates() map[string][]Commit {
	byIntent := map[string][]Commit{}
	for _, c := range l.Commits {
		byIntent[c.Intent] = append(byIntent[c.Intent], c)
	}
	out := map[string][]Commit{}
	for intent, cs := range byIntent {
		if len(cs) > 1 {
			out[intent] = cs[1:]
		}
	}
	return out
}

// Committed reports whether any commit of the given kind and intent exists.
func (l *Ledger) Committed(kind, intent string) bool {
	for _, c := range l.Commits {
		if c.Kind == kind && c.Intent == intent {
			return true
		}
	}
	return false
}

// FaultsFired returns the attempts at which an injected fault fired.
func (l *Ledger) FaultsFired() []Attempt {
	var out []Attempt
	for _, a := range l.Attempts {
		if a.Fault != nil {
			out = append(out, a)
		}
	}
	return out
}

// Sent returns the number of calls that were not refused by the budget.
func (l *Ledger) Sent() int {
	n := 0
	for _, a := range l.Attempts {
		if !a.Refused {
			n++
		}
	}
	return n
}

// ArgsKey hashes the canonical JSON of a call's arguments (map keys are
// sorted by encoding/json), so identical calls compare equal.
func ArgsKey(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte(err.Error())
	}
	return argsKey(b)
}

// argsKey is ArgsKey of already encoded arguments.
func argsKey(encoded []byte) string {
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:8])
}
