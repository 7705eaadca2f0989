// Package artifact builds the compact failure artifact of a trial (seed
// 000, "Capture a compact failure artifact"): the goal, the allowed tools,
// the fault schedule, every call with its redacted arguments and normalized
// result, the final answer and claim, the failed checks with their evidence,
// and the causal pivot: which call failed, which call was the recovery (the
// first to advance the goal safely), which calls after it were unsafe, and
// which constraints still held. It is faster to debug than a transcript.
package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
)

// Call is one tool call as stored: arguments already redacted.
type Call struct {
	Index     int             `json:"index"`
	AtMs      int64           `json:"at_ms"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Fault     string          `json:"fault,omitempty"`
	OK        bool            `json:"ok"`
	Code      string          `json:"code,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
	Committed bool            `json:"committed,omitempty"`
	// Step is the plan step the call served, as the grader bound it
	// ("read-b", "refund-a (reconcile)", "off plan").
	Step string `json:"step,omitempty"`
}

// Artifact is the compact record of one trial.
type Artifact struct {
	TrialID       string              `json:"trial_id"`
	Scenario      string              `json:"scenario"`
	Variant       string              `json:"variant"`
	Arm           string              `json:"arm"`
	Seed          uint64              `json:"seed"`
	Goal          string              `json:"goal"`
	AllowedTools  []string            `json:"allowed_tools"`
	FaultSchedule json.RawMessage     `json:"fault_schedule"`
	Calls         []Call              `json:"calls"`
	Answer        string              `json:"answer,omitempty"`
	Claim         string              `json:"claim"`
	Outcomes      map[string]*bool    `json:"outcomes"`
	FailedChecks  []grade.CheckResult `json:"failed_checks"`
	Pivot         Pivot               `json:"pivot"`
	// Recoverable is whether a path existed under this trial's schedule;
	// DeclaredRecoverable what the variant declared.
	Recoverable         bool              `json:"recoverable"`
	DeclaredRecoverable bool              `json:"declared_recoverable"`
	Reproduce           map[string]string `json:"reproduce"`
	// Process is an external agent's process record (command arms): exit,
	// timeout, redacted stdout and stderr.
	Process *agent.Process `json:"process,omitempty"`
}

// Build assembles the artifact from a trial's stored parts.
func Build(a Artifact, v grade.Verdict) Artifact {
	a.FailedChecks = v.Failed()
	a.Outcomes = map[string]*bool{}
	for _, m := range outcome.Graded {
		a.Outcomes[string(m)] = v.Metric(m)
	}
	a.Pivot = pivot(a.Calls, v)
	a.Recoverable, a.DeclaredRecoverable = v.Recoverable, v.DeclaredRecoverable
	steps := map[int]string{}
	for _, b := range v.Bindings {
		switch {
		case b.Step < 0:
			steps[b.Call] = "off plan"
		case b.Role == grade.RolePrimary:
			steps[b.Call] = b.StepID
		default:
			steps[b.Call] = fmt.Sprintf("%s (%s)", b.StepID, strings.ReplaceAll(string(b.Role), "_", " "))
		}
	}
	for i := range a.Calls {
		a.Calls[i].Step = steps[a.Calls[i].Index]
	}
	return a
}

// WriteText renders the artifact for a person.
func (a Artifact) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "trial %s: %s / %s, arm %s, seed %d\n", a.TrialID, a.Scenario, a.Variant, a.Arm, a.Seed)
	fmt.Fprintf(w, "goal: %s\n", a.Goal)
	fmt.Fprintf(w, "allowed tools: %s\n", strings.Join(a.AllowedTools, ", "))
	fmt.Fprintf(w, "fault schedule: %s\n", compact(a.FaultSchedule))
	path := "an authorized path existed"
	if !a.Recoverable {
		path = "no authorized path existed"
	}
	fmt.Fprintf(w, "recoverable: %s under this trial's schedule (declared %t)\n\n", path, a.DeclaredRecoverable)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tat\tstep\ttool\tfault\tresult\targs (redacted)")
	for _, c := range a.Calls {
		res := "ok"
		if !c.OK {
			res = c.Code
			if c.Retryable {
				res += " (retryable)"
			}
		}
		if c.Committed {
			res += " committed"
		}
		marker := a.Pivot.marker(c.Index)
		fmt.Fprintf(tw, "%d\t%dms\t%s\t%s\t%s\t%s%s\t%s\n", c.Index, c.AtMs, c.Step, c.Tool, c.Fault, res, marker, compact(c.Args))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nclaim: %s\n", a.Claim)
	if a.Answer != "" {
		fmt.Fprintf(w, "answer: %s\n", a.Answer)
	}
	if p := a.Process; p != nil {
		writeProcess(w, p)
	}
	fmt.Fprintf(w, "pivot: %s\n", a.Pivot.Summary)
	if len(a.FailedChecks) == 0 {
		fmt.Fprintln(w, "failed checks: none")
	} else {
		fmt.Fprintln(w, "failed checks:")
		for _, c := range a.FailedChecks {
			fmt.Fprintf(w, "  %s %v: %s\n", c.Name, c.Evidence, c.Detail)
		}
	}
	var keys []string
	for k := range a.Reproduce {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s: %s\n", k, a.Reproduce[k])
	}
	return nil
}

// writeProcess prints an external agent's exit and its output.
func writeProcess(w io.Writer, p *agent.Process) {
	how := fmt.Sprintf("exit %d", p.ExitCode)
	if p.TimedOut {
		how = "timed out"
	}
	if p.Signal != "" {
		how += " (" + p.Signal + ")"
	}
	fmt.Fprintf(w, "process: %s after %dms: %s\n", how, p.WallMs, strings.Join(p.Command, " "))
	if p.ClaimsRefused > 0 {
		fmt.Fprintf(w, "  claims refused: %d (nothing recorded); the last: %s\n", p.ClaimsRefused, p.LastClaimRefusal)
	}
	for _, s := range []struct{ name, text string }{{"stdout", p.Stdout}, {"stderr", p.Stderr}} {
		if strings.TrimSpace(s.text) == "" {
			fmt.Fprintf(w, "  %s: (empty)\n", s.name)
			continue
		}
		fmt.Fprintf(w, "  %s:\n", s.name)
		for _, line := range strings.Split(strings.TrimRight(s.text, "\n"), "\n") {
			fmt.Fprintf(w, "    | %s\n", line)
		}
	}
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// FromResult builds the artifact of a trial run in this process. Arguments
// pass through redact before they are shown.
func FromResult(r *trial.Result, sc *scenario.Scenario, red *redact.Redactor) Artifact {
	committed := map[int]bool{}
	for _, c := range r.Ledger.Commits {
		committed[c.Call] = true
	}
	a := Artifact{
		TrialID: r.TrialID, Scenario: r.Scenario, Variant: r.Variant, Arm: r.Arm, Seed: r.Seed,
		Goal: sc.Goal, AllowedTools: sc.Tools, Answer: red.String(r.Outcome.Answer), Claim: red.String(r.Outcome.Claim),
		Reproduce: map[string]string{"scenario_hash": r.ScenarioHash, "catalog_version": r.CatalogVersion, "agent": r.Agent},
	}
	a.FaultSchedule, _ = json.Marshal(r.Schedule)
	if p := r.Outcome.Process; p != nil {
		cp := *p
		cp.Stdout, cp.Stderr = red.String(p.Stdout), red.String(p.Stderr)
		a.Process = &cp
	}
	for _, at := range r.Ledger.Attempts {
		args, _ := json.Marshal(red.Value(at.Args))
		fault := ""
		if at.Fault != nil {
			fault = string(at.Fault.Class)
		}
		a.Calls = append(a.Calls, Call{Index: at.Index, AtMs: at.AtMs, Tool: at.Tool, Args: args, Fault: fault,
			OK: at.Result.OK, Code: at.Result.Code, Retryable: at.Result.Retryable, Committed: committed[at.Index]})
	}
	return Build(a, r.Verdict)
}
