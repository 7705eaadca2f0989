package activities

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"rebound/core/agent"
	"rebound/core/bounds"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/results/record"
)

// Rows converts a trial result into its storage rows, redacting every text
// column (arguments, results, the claim, the answer, the recording, the
// verdicts and the fault schedule) before anything is persisted. JSON
// columns are redacted as values, so a secret split across JSON escapes is
// still found and idempotency keys are hashed wherever they appear.
//
// The rows are then fitted into bounds.Trial (fitRows): the trial was
// graded on its full data, and its stored text never exceeds the bound,
// whatever the agent made it record.
func Rows(r *trial.Result, red *redact.Redactor) (record.Trial, []record.ToolCall) {
	return rows(r, red, nil)
}

// RowRedactor converts the trial results of one sweep into rows, as Rows
// does, with one redactor and a memo of the JSON documents it redacted.
// The documents of a sweep repeat: in a 60,760-trial library sweep the
// trials held 882 distinct evidence documents, 661 verdicts and 6,685
// fault schedules, their 206,895 tool calls 66 distinct argument and 206
// result documents. Redacting a document (decoded into plain values, every
// string run through every rule, encoded again) costs far more than
// encoding it, so a document already seen is looked up by its encoding
// and never redacted twice. Redaction is a pure function of the text for
// a given redactor, so the rows are exactly those Rows returns (tested).
// Safe for concurrent use; a worker keeps one per sweep.
type RowRedactor struct {
	red  *redact.Redactor
	docs *docMemo
}

// NewRowRedactor returns a RowRedactor over red, with an empty memo.
func NewRowRedactor(red *redact.Redactor) *RowRedactor {
	return &RowRedactor{red: red, docs: newDocMemo()}
}

// Redactor is the redactor the rows are redacted with.
func (rr *RowRedactor) Redactor() *redact.Redactor { return rr.red }

// Rows converts a trial result into its storage rows (see Rows).
func (rr *RowRedactor) Rows(r *trial.Result) (record.Trial, []record.ToolCall) {
	return rows(r, rr.red, rr.docs)
}

// rows is Rows with the documents redacted through docs (nil: no memo).
func rows(r *trial.Result, red *redact.Redactor, docs *docMemo) (record.Trial, []record.ToolCall) {
	v := r.Verdict
	t := record.Trial{
		SweepID: r.SweepID, TrialID: r.TrialID, Scenario: r.Scenario, ScenarioHash: r.ScenarioHash,
		Variant: r.Variant, Arm: r.Arm, Agent: r.Agent, Seed: r.Seed, Recoverable: r.Recoverable,
		DeclaredRecoverable: r.DeclaredRecoverable, GraderVersion: uint32(r.GraderVersion),
		ToolCostUSD: r.ToolCostUSD, Evidence: docs.json(red, r.Evidence()),
		FaultClasses: r.Schedule.Classes(),
		ToolCalls:    uint32(v.Counts.ToolCalls), Retries: uint32(v.Counts.Retries),
		UnnecessaryCalls: uint32(v.Counts.UnnecessaryCalls), Replans: uint32(v.Counts.Replans),
		SimElapsedMS: uint64(r.EndMs), WallUS: uint64(r.Wall.Microseconds()),
		Tokens: uint64(r.Outcome.Tokens), CostUSD: r.Outcome.Cost, Weight: r.Weight,
		Claim:          docs.claim(red, r.Outcome.Claim),
		Answer:         red.String(r.Outcome.Answer),
		Recording:      redactText(red, r.Recording),
		Process:        processJSON(r.Outcome.Process, red),
		Unsealed:       r.Outcome.Process != nil && r.Outcome.Process.Sandbox == agent.SandboxNone,
		PromptHash:     r.PromptHash,
		Verdicts:       docs.json(red, v),
		FaultSchedule:  docs.json(red, r.Schedule),
		CatalogVersion: r.CatalogVersion,
	}
	if t.FaultClasses == nil {
		t.FaultClasses = []string{}
	}
	t.SetOutcomes(v.Metric)
	committed := map[int]bool{}
	for _, c := range r.Ledger.Commits {
		committed[c.Call] = true
	}
	calls := make([]record.ToolCall, 0, len(r.Ledger.Attempts))
	for _, a := range r.Ledger.Attempts {
		fault := ""
		if a.Fault != nil {
			fault = string(a.Fault.Class)
		}
		calls = append(calls, record.ToolCall{
			SweepID: r.SweepID, TrialID: r.TrialID, CallIndex: uint32(a.Index), Tool: red.String(a.Tool),
			Args: docs.json(red, a.Args), Effect: string(a.Effect), FaultClass: fault, OK: a.Result.OK,
			Code: red.String(a.Result.Code), Retryable: a.Result.Retryable, RetryAfterMS: uint64(max(a.Result.RetryAfterMs, 0)),
			Committed: committed[a.Index], AtMS: uint64(a.AtMs), Result: docs.json(red, a.Result),
		})
	}
	fitRows(&t, calls, textLimit(len(calls)))
	return t, calls
}

// textLimit is what a trial's text columns may take of bounds.Trial: the
// rest is left for its other columns and the insert's framing (column
// names, numbers, quotes), a little per row.
func textLimit(calls int) int {
	return max(bounds.Trial-4*bounds.KiB-256*calls, bounds.Trial/2)
}

// fitRows makes a trial's rows storable: every text column valid UTF-8
// (an invalid byte becomes U+FFFD), the claim within bounds.Claim, and all
// text columns of the trial row and its tool-call rows together within
// limit bytes (escaped as the insert sends them), the largest cut first
// (bounds.Fit: JSON columns stay valid JSON of their shape, an oversized
// value becomes a marker with its size and hash). A trial cut to fit says
// so in its error column, as a JSON note:
//
//	{"truncated": {"limit": ..., "bytes": ..., "stored": ..., "columns": ["evidence", "tool_calls[3].args", ...]}}
//
// It returns that note's content, nil when nothing was cut.
func fitRows(t *record.Trial, calls []record.ToolCall, limit int) *bounds.Truncation {
	// Measured as the tool server measures a submitted claim: its bytes.
	var claimCut bool
	if len(t.Claim) > bounds.Claim {
		t.Claim, claimCut = bounds.ShrinkJSON(t.Claim, bounds.Claim), true
	}
	cols := []bounds.Column{
		{Name: "sweep_id", Text: &t.SweepID, Fixed: true}, {Name: "trial_id", Text: &t.TrialID, Fixed: true},
		{Name: "scenario", Text: &t.Scenario, Fixed: true}, {Name: "scenario_hash", Text: &t.ScenarioHash, Fixed: true},
		{Name: "variant", Text: &t.Variant, Fixed: true}, {Name: "arm", Text: &t.Arm, Fixed: true},
		{Name: "agent", Text: &t.Agent, Fixed: true}, {Name: "catalog_version", Text: &t.CatalogVersion, Fixed: true},
		{Name: "prompt_hash", Text: &t.PromptHash, Fixed: true},
		{Name: "error", Text: &t.Error}, {Name: "claim", Text: &t.Claim, JSON: true},
		{Name: "answer", Text: &t.Answer}, {Name: "recording", Text: &t.Recording, JSON: true},
		{Name: "process", Text: &t.Process, JSON: true}, {Name: "verdicts", Text: &t.Verdicts, JSON: true},
		{Name: "fault_schedule", Text: &t.FaultSchedule, JSON: true}, {Name: "evidence", Text: &t.Evidence, JSON: true},
	}
	for i := range t.FaultClasses {
		cols = append(cols, bounds.Column{Name: "fault_classes", Text: &t.FaultClasses[i], Fixed: true})
	}
	for i := range calls {
		c := &calls[i]
		name := fmt.Sprintf("tool_calls[%d].", c.CallIndex)
		cols = append(cols,
			bounds.Column{Name: name + "sweep_id", Text: &c.SweepID, Fixed: true},
			bounds.Column{Name: name + "trial_id", Text: &c.TrialID, Fixed: true},
			bounds.Column{Name: name + "effect", Text: &c.Effect, Fixed: true},
			bounds.Column{Name: name + "fault_class", Text: &c.FaultClass, Fixed: true},
			bounds.Column{Name: name + "tool", Text: &c.Tool}, bounds.Column{Name: name + "code", Text: &c.Code},
			bounds.Column{Name: name + "args", Text: &c.Args, JSON: true},
			bounds.Column{Name: name + "result", Text: &c.Result, JSON: true})
	}
	tr := bounds.Fit(cols, limit)
	if claimCut {
		if tr == nil {
			tr = &bounds.Truncation{Limit: limit}
			for _, c := range cols {
				tr.Bytes += bounds.EscapedLen(*c.Text)
			}
			tr.Stored = tr.Bytes
		}
		if !slices.Contains(tr.Columns, "claim") {
			tr.Columns = append([]string{"claim"}, tr.Columns...)
		}
	}
	if tr == nil {
		return nil
	}
	note := mustJSON(map[string]any{"truncated": tr})
	if t.Error != "" {
		note = t.Error + "\n" + note
	}
	t.Error = note
	return tr
}

// AttritionRow is the row of a trial lost to the provider (429s, 5xx,
// timeouts that outlived the retries): it is counted per arm as attrition
// and never graded, so every outcome stays NULL.
func AttritionRow(spec trial.Spec, agentName string, cause error, red *redact.Redactor) record.Trial {
	return record.Trial{
		SweepID: spec.SweepID, TrialID: spec.ID(), Scenario: spec.Scenario.Name, ScenarioHash: spec.Scenario.Hash,
		Variant: spec.Variant.Name, Arm: spec.Arm.Name, Agent: agentName, Seed: spec.Seed,
		Recoverable: spec.Variant.Recoverable, DeclaredRecoverable: spec.Variant.Recoverable,
		FaultClasses: []string{}, Weight: spec.Scenario.WeightOf(spec.Variant),
		Attrition: true, Error: red.String(cause.Error()), Claim: "", Verdicts: "{}", FaultSchedule: "{}",
		Unsealed: spec.Arm.Agent == scenario.AgentCommand && spec.Arm.Sandbox == agent.SandboxNone,
	}
}

// processJSON renders a command arm's process record for storage, its
// output redacted like every other column (the agent already removed the
// values of its secret variables).
func processJSON(p *agent.Process, red *redact.Redactor) string {
	if p == nil {
		return ""
	}
	cp := *p
	cp.Stdout, cp.Stderr = boundOutput(red.String(cp.Stdout), bounds.Stdout), boundOutput(red.String(cp.Stderr), bounds.Stderr)
	cp.Command = make([]string, len(p.Command))
	for i, s := range p.Command {
		cp.Command[i] = red.String(s)
	}
	return mustJSON(cp)
}

// boundOutput holds a process's output to its cap. The command agent keeps
// the head and tail within it already (with its own drop marker, within
// outputSlack); any other producer of a process record is cut here.
func boundOutput(s string, limit int) string {
	if len(s) <= limit+outputSlack {
		return s
	}
	return bounds.Cut(s, limit)
}

const outputSlack = 256

// EvidenceJSON renders a trial's grading evidence for storage, redacted
// like every other column: secret shapes removed, idempotency keys replaced
// by their keyed hashes (consistently, so a regrade that hashes the
// scenario's own arguments with the same redactor still matches them).
func EvidenceJSON(ev trial.Evidence, red *redact.Redactor) string { return red.JSON(ev) }

// redactClaim redacts the agent's claim: as JSON when it is JSON (it is
// graded verbatim, so it can be anything), as text otherwise.
func redactClaim(red *redact.Redactor, claim string) string {
	if claim == "" {
		return ""
	}
	return red.JSONText(claim)
}

// redactText redacts a JSON document (the LLM recording) as values.
func redactText(red *redact.Redactor, doc string) string {
	if doc == "" {
		return ""
	}
	return red.JSONText(doc)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"unserializable"}`
	}
	return string(b)
}

// docMemo remembers what JSON documents redact to, keyed by their text,
// for one redactor. Bounded: documents over docMemoMaxLen are never
// remembered, and when the texts held reach docMemoMaxBytes it starts
// over (a sweep's working set is a few thousand documents of a few KB).
// A nil *docMemo redacts every document afresh.
type docMemo struct {
	mu    sync.Mutex
	m     map[string]string
	bytes int
}

const (
	docMemoMaxLen   = 64 << 10
	docMemoMaxBytes = 16 << 20
)

func newDocMemo() *docMemo { return &docMemo{m: map[string]string{}} }

// json is red.JSON(v): v encoded, then redacted as JSON text.
func (d *docMemo) json(red *redact.Redactor, v any) string {
	if d == nil {
		return red.JSON(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return red.JSON(v) // its own answer for what does not encode
	}
	return d.text(red, b)
}

// claim is redactClaim(red, claim).
func (d *docMemo) claim(red *redact.Redactor, claim string) string {
	if d == nil || claim == "" {
		return redactClaim(red, claim)
	}
	return d.text(red, []byte(claim))
}

// text is red.JSONText(string(doc)), remembered.
func (d *docMemo) text(red *redact.Redactor, doc []byte) string {
	if len(doc) > docMemoMaxLen {
		return red.JSONText(string(doc))
	}
	d.mu.Lock()
	out, ok := d.m[string(doc)]
	d.mu.Unlock()
	if ok {
		return out
	}
	key := string(doc)
	out = red.JSONText(key)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bytes+len(key)+len(out) > docMemoMaxBytes {
		d.m, d.bytes = map[string]string{}, 0
	}
	if _, ok := d.m[key]; !ok {
		d.m[key] = out
		d.bytes += len(key) + len(out)
	}
	return out
}
