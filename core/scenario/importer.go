package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
)

// Importer of the scenario format of the aiwg-evals suite: workspace setup
// files, a task, prose expectations, typed validations, scoring weights,
// and for a recovery test (seed 004) a simulated failure trigger and an
// alternative success by escalation. It produces a scenario of the files
// world. A test with no simulated failure (grounding, distractor) becomes a
// fault-free base variant with generated variants adding the faults. The
// validations map to what the grader checks: file content to success
// assertions, a tool sequence ("read before edit") to the reference plan's
// order (dependency_order), "report only X" to a structured claim field.
// Everything that does not map one to one is reported as a Note with
// file:line:column, and kept as a comment in the output; constructs that
// cannot be imported at all, unknown validation types included (a graded
// check is never dropped), are errors, every one of a file reported in one
// pass. The output is a pure function of the input bytes and the layout.

// FilesLayout is everything the importer assumes about the files world:
// tool and argument names, the permissions when no catalog is at hand, and
// where the world's state keeps file contents. Change the assumptions here,
// in one place.
type FilesLayout struct {
	World                                 string
	ReadTool, ListTool, WriteTool, Create string
	PathArg, ContentArg                   string
	// Permissions are used when the world's catalog is not available (the
	// catalog's permissions win when it is).
	Permissions []string
	// ContentState is the state key holding raw contents: CONTENT.<key>;
	// JSONState the one holding parsed JSON files: JSON.<key>.<field>...,
	// list items by index (JSON.<key>.items.0.status). <key> is Key(path).
	ContentState, JSONState string
	// LockedCode, LockedRetryable and LockedMessage are what a write to a
	// locked file answers.
	LockedCode      string
	LockedRetryable bool
	// LockClass is the fault class the simulated failure is injected as.
	// The harness has no class for "refused until a documented action";
	// transient is the one that is neither sticky nor tied to the
	// arguments, and code and retryability are set to the world's own.
	LockClass harness.FaultClass
}

// DefaultFilesLayout is the layout the importer uses.
// It follows world/files.go: state content.<key> and json.<key>, where the
// key is the path with every '.' replaced by '_'.
var DefaultFilesLayout = FilesLayout{
	World:    "files",
	ReadTool: "fs.read", ListTool: "fs.list", WriteTool: "fs.write", Create: "fs.create",
	PathArg: "path", ContentArg: "content",
	Permissions:  []string{"fs.read", "fs.write"},
	ContentState: "content", JSONState: "json",
	LockedCode: "LOCKED", LockedRetryable: false,
	LockClass: harness.Transient,
}

// Key turns a workspace path into one segment of a state path:
// "test-workspace/data.json" -> "test-workspace/data_json".
func (l FilesLayout) Key(path string) string { return strings.ReplaceAll(path, ".", "_") }

// Note is one construct of the imported file that was approximated or
// could not be carried over.
type Note struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Field string `json:"field"`
	Msg   string `json:"msg"`
}

func (n Note) String() string {
	return FieldError{File: n.File, Line: n.Line, Col: n.Col, Field: n.Field, Msg: n.Msg}.Error()
}

// Imported is the result of an import.
type Imported struct {
	Scenario *Scenario
	// YAML is the scenario file to write, comments included.
	YAML  []byte
	Notes []Note
}

// ImportOptions tunes an import.
type ImportOptions struct {
	Layout FilesLayout // zero value: DefaultFilesLayout
	// Catalog, when it knows the layout's world, supplies the permissions
	// and checks the tool names; otherwise they are assumed.
	Catalog Catalog
}

// The recovery-test format. Unknown keys are errors: a construct the
// importer does not know is never dropped silently.
type rtFile struct {
	Name               string         `yaml:"name"`
	Description        string         `yaml:"description"`
	Category           string         `yaml:"category"`
	Archetype          any            `yaml:"archetype"`
	Severity           string         `yaml:"severity"`
	Setup              rtSetup        `yaml:"setup"`
	Task               string         `yaml:"task"`
	ExpectedBehavior   rtExpected     `yaml:"expected_behavior"`
	Validation         []rtValidation `yaml:"validation"`
	Scoring            *rtScoring     `yaml:"scoring"`
	AlternativeSuccess *rtAlternative `yaml:"alternative_success"`
	Cleanup            []string       `yaml:"cleanup"`
	// MisleadingContext is context the test shows the agent to tempt it.
	MisleadingContext string `yaml:"misleading_context"`
}

type rtSetup struct {
	Description       string       `yaml:"description"`
	Files             []rtWorkFile `yaml:"files"`
	FailureSimulation *rtFailure   `yaml:"failure_simulation"`
}

type rtWorkFile struct {
	Path    string `yaml:"path"`
	Content string `yaml:"content"`
}

type rtFailure struct {
	Trigger      string `yaml:"trigger"`
	Error        string `yaml:"error"`
	RecoveryHint string `yaml:"recovery_hint"`
}

type rtExpected struct {
	Must    []string `yaml:"must"`
	MustNot []string `yaml:"must_not"`
}

type rtValidation struct {
	Type                     string        `yaml:"type"`
	Description              string        `yaml:"description"`
	EvidencePatterns         []string      `yaml:"evidence_patterns"`
	Evidence                 []rtEvidence  `yaml:"evidence"`
	MinAttempts              *int          `yaml:"min_attempts"`
	MaxAttempts              *int          `yaml:"max_attempts"`
	Path                     string        `yaml:"path"`
	Assertions               []rtAssertion `yaml:"assertions"`
	UnlessMaxRetriesExceeded *bool         `yaml:"unless_max_retries_exceeded"`
	// tool_sequence
	Pattern []rtSeqStep `yaml:"pattern"`
	// no_data_loss
	OriginalKeysPreserved *bool `yaml:"original_keys_preserved"`
	// output_contains, output_not_contains, single_source
	Expected       any      `yaml:"expected"`
	Forbidden      []string `yaml:"forbidden"`
	AllowedSources []string `yaml:"allowed_sources"`
}

// rtSeqStep is one step of a tool_sequence pattern.
type rtSeqStep struct {
	Tool         string `yaml:"tool"`
	PathContains string `yaml:"path_contains"`
}

// validationTypes are the validation types the importer maps.
var validationTypes = []string{
	"error_detected", "recovery_attempted", "retry_executed", "final_state_correct", "no_escalation_needed",
	"file_content", "no_data_loss", "tool_sequence", "output_contains", "output_not_contains", "single_source",
}

type rtEvidence struct {
	FileCreated     string `yaml:"file_created"`
	ContentContains string `yaml:"content_contains"`
}

type rtAssertion struct {
	JSONPath string `yaml:"json_path"`
	Equals   any    `yaml:"equals"`
}

type rtScoring struct {
	PassThreshold float64            `yaml:"pass_threshold"`
	Weights       map[string]float64 `yaml:"weights"`
}

type rtAlternative struct {
	Description string           `yaml:"description"`
	Conditions  []map[string]any `yaml:"conditions"`
}

// severityWeight maps the format's severity to a consequence weight.
var severityWeight = map[string]float64{"critical": 10, "high": 5, "medium": 2, "low": 1}

var triggerRe = regexp.MustCompile(`^(first|every)_(read|write|create|list)_attempt$`)

// ImportRecoveryTest converts one recovery-test.yaml document into a
// rebound scenario of the files world.
func ImportRecoveryTest(file string, data []byte, opts ImportOptions) (*Imported, error) {
	l := opts.Layout
	if l.World == "" {
		l = DefaultFilesLayout
	}
	var rt rtFile
	root, es := decodeStrict(file, data, &rt)
	for i := range es {
		if rest, ok := strings.CutPrefix(es[i].Msg, unknownFieldMsg); ok {
			// rest: where an alias led to it, if one did
			es[i].Msg = "unknown field: the importer does not know it, so it cannot be carried over (the keys it reads are listed in docs/scenarios.md, Importing an aiwg-evals scenario)" + rest
		}
	}
	if root == nil {
		return nil, es
	}
	// Every problem of the file in one pass: what did not decode, and what
	// the rest of the file does not let the importer carry over (except
	// the consequences, under the same top-level key, of what did not
	// decode).
	im := &importer{file: file, root: root, l: l, used: map[string]bool{}}
	s := im.convert(&rt, opts)
	if errs := append(es, outside(im.errs, failedKeys(root, es))...); len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			return errs[i].Line < errs[j].Line || (errs[i].Line == errs[j].Line && errs[i].Col < errs[j].Col)
		})
		return nil, errs
	}
	out, err := im.render(s, &rt)
	if err != nil {
		return nil, err
	}
	// The output must load: validate it the way lint will. Without the
	// world's catalog nothing can be generated: the copy checked then
	// leaves generate out (lint checks it where the catalog is at hand).
	load, check := LoadOptions{NoCatalog: true}, out
	if im.catalog != nil {
		load = LoadOptions{Catalog: func(WorldRef) (map[string]harness.Tool, error) { return im.catalog, nil }}
	} else if len(s.Generate) > 0 {
		bare := *s
		bare.Generate = nil
		if check, err = im.render(&bare, &rt); err != nil {
			return nil, err
		}
	}
	parsed, err := ParseScenarioWith(strings.TrimSuffix(file, filepath.Ext(file))+".rebound.yaml", check, load)
	if err != nil {
		return nil, fmt.Errorf("%s: the imported scenario does not load (an importer defect or a wrong layout assumption):\n%w", file, err)
	}
	parsed.Generate = s.Generate
	return &Imported{Scenario: parsed, YAML: out, Notes: im.notes}, nil
}

type importer struct {
	file    string
	root    *yaml.Node
	l       FilesLayout
	catalog map[string]harness.Tool
	notes   []Note
	errs    Errors
	// used are the claim field names taken.
	used map[string]bool
}

func (im *importer) at(path string) (int, int) {
	if n := lookup(im.root, path); n != nil {
		return n.Line, n.Column
	}
	return 0, 0
}

func (im *importer) note(path, format string, args ...any) {
	line, col := im.at(path)
	im.notes = append(im.notes, Note{File: im.file, Line: line, Col: col, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (im *importer) fail(path, format string, args ...any) {
	line, col := im.at(path)
	im.errs = append(im.errs, FieldError{File: im.file, Line: line, Col: col, Field: path, Msg: fmt.Sprintf(format, args...)})
}

// lock is the world lock derived from the file: the target file, the key
// field inside it, and the flag file that must hold the key.
type lock struct{ path, keyField, key, flag string }

func (im *importer) convert(rt *rtFile, opts ImportOptions) *Scenario {
	s := im.header(rt, opts)
	files := im.workspace(rt)
	v := im.validations(rt)
	fs := im.finalState(s, rt, files, v.finals)
	im.preserved(s, rt, files, v.preserve)
	lk := im.lockOf(v.flag, fs)
	rep := im.reported(s, rt, files, v)
	im.referencePlan(s, rt, files, fs, lk, v, rep)
	im.variants(s, rt, lk)
	return s
}

// header converts what the format says about the test as a whole: name,
// goal, weight, the layout's tools and the permissions they need.
func (im *importer) header(rt *rtFile, opts ImportOptions) *Scenario {
	l := im.l
	s := &Scenario{
		Name:        rt.Name,
		Description: strings.TrimSpace(rt.Description),
		World:       l.World,
		Goal:        strings.TrimSpace(rt.Task),
		Tools:       []string{l.Create, l.ListTool, l.ReadTool, l.WriteTool},
		Permissions: l.Permissions,
	}
	if cat := opts.Catalog; cat != nil {
		if c, err := cat(WorldRef{Name: l.World}); err == nil && c != nil {
			im.catalog = c
			perms := map[string]bool{}
			for _, t := range s.Tools {
				if p := c[t].Permission; p != "" {
					perms[p] = true
				}
			}
			s.Permissions = slices.Sorted(maps.Keys(perms))
		}
	}
	if im.catalog == nil {
		im.note("name", "world %q is not in this build: tools %s and permissions %s are assumed (the importer's files layout)",
			l.World, strings.Join(s.Tools, ", "), strings.Join(s.Permissions, ", "))
	}
	if rt.Name == "" {
		im.fail("name", "required")
	}
	if s.Goal == "" {
		im.fail("task", "required: it becomes the scenario's goal")
	}
	if m := strings.TrimSpace(rt.MisleadingContext); m != "" {
		s.Goal += "\n\nContext: " + m
		im.note("misleading_context", "appended to the goal as context: the agent sees it, as the test intends")
	}
	if rt.Category != "" || rt.Archetype != nil {
		im.note("category", "category %q and archetype %v have no rebound field: kept as a comment", rt.Category, rt.Archetype)
	}
	if w, ok := severityWeight[rt.Severity]; ok {
		s.Weight = w
	} else if rt.Severity != "" {
		im.note("severity", "unknown severity %q: weight left at 1 (known: critical 10, high 5, medium 2, low 1)", rt.Severity)
	}
	if rt.Setup.Description != "" {
		im.note("setup.description", "kept as a comment")
	}
	return s
}

// workspace reads the workspace files, which become the world's initial
// files, by path.
func (im *importer) workspace(rt *rtFile) map[string]string {
	files := map[string]string{}
	for i, f := range rt.Setup.Files {
		p := fmt.Sprintf("setup.files[%d]", i)
		switch {
		case f.Path == "":
			im.fail(p+".path", "required")
		case hasKey(files, f.Path):
			im.fail(p+".path", "duplicate file %q", f.Path)
		}
		files[f.Path] = f.Content
	}
	if len(files) == 0 {
		im.fail("setup.files", "at least one workspace file is required")
	}
	return files
}

// flagEvidence is a recovery_attempted evidence: the file the agent must
// create and the key it must hold; at locates it for errors.
type flagEvidence struct{ file, key, at string }

// rtValidations is what the validations carry over: the indexes of the
// final_state_correct ones, the retry limit and the lock's flag file.
type rtValidations struct {
	finals     []int
	retryLimit int
	flag       flagEvidence
	// preserve: the no_data_loss validations; sequence: the tool_sequence
	// one (-1: none); report: the output_contains one (-1: none);
	// forbidden: the output_not_contains ones; sources: the single_source
	// ones.
	preserve           []int
	sequence, report   int
	forbidden, sources []int
}

// validations sorts the validations into what carries over (final state,
// retry limit, the lock's flag) and what is noted as not carried over,
// with the format's other sections that have no rebound counterpart.
func (im *importer) validations(rt *rtFile) rtValidations {
	out := rtValidations{sequence: -1, report: -1}
	for i, v := range rt.Validation {
		p := fmt.Sprintf("validation[%d]", i)
		if im.grounding(&out, i, v) {
			continue
		}
		switch v.Type {
		case "error_detected":
			im.note(p, "error_detected (evidence_patterns %s) is not carried over: rebound never keyword-matches prose; the ledger records the failure and the grader checks the agent's structured claim", quoteAll(v.EvidencePatterns))
		case "recovery_attempted":
			for j, e := range v.Evidence {
				ep := fmt.Sprintf("%s.evidence[%d]", p, j)
				if e.FileCreated == "" || e.ContentContains == "" {
					im.fail(ep, "unsupported evidence: only file_created with content_contains is understood")
					continue
				}
				if out.flag.file != "" {
					im.fail(ep, "only one file_created evidence is supported")
					continue
				}
				out.flag = flagEvidence{file: e.FileCreated, key: e.ContentContains, at: ep}
			}
			im.note(p, "recovery_attempted is not a graded check: it becomes the world lock (the flag file must hold the key) and the reference plan's unlock step")
		case "retry_executed":
			if v.MaxAttempts != nil {
				if *v.MaxAttempts < 1 {
					im.fail(p+".max_attempts", "must be at least 1")
				} else {
					out.retryLimit = *v.MaxAttempts - 1
				}
				im.note(p+".max_attempts", "max_attempts %d becomes retry_limit %d (retries after the first attempt)", *v.MaxAttempts, out.retryLimit)
			}
			if v.MinAttempts != nil {
				im.note(p+".min_attempts", "min_attempts %d is not carried over: rebound never requires a number of retries (an agent that avoids the failure is not wrong); a block on a recoverable variant is graded premature_block", *v.MinAttempts)
			}
		case "final_state_correct":
			out.finals = append(out.finals, i)
		case "no_escalation_needed":
			im.note(p, "no_escalation_needed maps to the grader's premature_block: blocking on the recoverable variant fails")
		case "":
			im.fail(p+".type", "required (known: %s)", strings.Join(validationTypes, ", "))
		default:
			im.fail(p+".type", "unknown validation type %q: the importer cannot grade it, and dropping it would lose a graded check silently (known: %s)", v.Type, strings.Join(validationTypes, ", "))
		}
	}
	if rt.Scoring != nil {
		im.note("scoring", "scoring (weights, pass_threshold %v) is not carried over: rebound reports each metric's rate with its interval, not a weighted score", rt.Scoring.PassThreshold)
	}
	if len(rt.Cleanup) > 0 {
		im.note("cleanup", "cleanup is not needed: every trial gets a fresh in-memory world")
	}
	if len(rt.ExpectedBehavior.Must)+len(rt.ExpectedBehavior.MustNot) > 0 {
		im.note("expected_behavior", "prose expectations are kept as comments, not graded: rebound's executable checks (bounded retries, no duplicate side effect, claim matches the world, honest block) cover them")
	}
	if len(out.finals) == 0 && out.report < 0 {
		im.fail("validation", "a file_content (or final_state_correct) or an output_contains validation is required: it is what counts as success")
	}
	return out
}

// grounding sorts the validations of the grounding and distractor tests;
// false when v is of another type.
func (im *importer) grounding(out *rtValidations, i int, v rtValidation) bool {
	p := fmt.Sprintf("validation[%d]", i)
	switch v.Type {
	case "file_content":
		out.finals = append(out.finals, i)
	case "no_data_loss":
		switch {
		case v.OriginalKeysPreserved == nil || !*v.OriginalKeysPreserved:
			im.fail(p+".original_keys_preserved", "required, and true: the form of no_data_loss the importer maps (every original value of the file is kept)")
		case v.Path == "":
			im.fail(p+".path", "required")
		default:
			out.preserve = append(out.preserve, i)
		}
	case "tool_sequence":
		switch {
		case len(v.Pattern) == 0:
			im.fail(p+".pattern", "at least one step is required")
		case out.sequence >= 0:
			im.fail(p, "a second tool_sequence (the first is validation[%d]): one order is the reference plan", out.sequence)
		default:
			out.sequence = i
			im.note(p, "becomes the reference plan's order: a write of a step comes after the reads before it (dependency_order)")
		}
	case "output_contains":
		switch e, ok := v.Expected.(string); {
		case !ok || e == "":
			im.fail(p+".expected", "required: the text the answer reports")
		case out.report >= 0:
			im.fail(p, "a second output_contains (the first is validation[%d]): the claim has one reported value", out.report)
		default:
			out.report = i
		}
	case "output_not_contains":
		if len(v.Forbidden) == 0 {
			im.fail(p+".forbidden", "at least one text is required")
			break
		}
		out.forbidden = append(out.forbidden, i)
		im.note(p, "graded by the reported claim field: its value must equal the truth, which holds none of %s (claim_matches_world)", quoteAll(v.Forbidden))
	case "single_source":
		if len(v.AllowedSources) == 0 {
			im.fail(p+".allowed_sources", "at least one file is required")
			break
		}
		out.sources = append(out.sources, i)
		im.note(p, "the reported value is established only by reading %s (claim_supported); reading other files is off the plan and harmless", quoteAll(v.AllowedSources))
	default:
		return false
	}
	return true
}

// finalState is the expected end state of the one file the
// final_state_correct validations assert on: its path, its initial JSON
// with the asserted values applied, and the claim fields the write sets.
type finalState struct {
	target  string
	content any
	sets    map[string]any
}

// finalState turns the final-state assertions into success assertions and
// goal claim fields on s, and computes the content the task must write.
func (im *importer) finalState(s *Scenario, rt *rtFile, files map[string]string, finals []int) finalState {
	l := im.l
	fs := finalState{sets: map[string]any{}}
	used := im.used
	for _, i := range finals {
		v := rt.Validation[i]
		p := fmt.Sprintf("validation[%d]", i)
		if v.Path == "" {
			im.fail(p+".path", "required")
			continue
		}
		if fs.target != "" && v.Path != fs.target {
			im.fail(p+".path", "final_state_correct on a second file (%q, first %q) is not supported", v.Path, fs.target)
			continue
		}
		raw, ok := files[v.Path]
		if !ok {
			im.fail(p+".path", "%q is not a setup file", v.Path)
			continue
		}
		if fs.target == "" {
			fs.target = v.Path
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&fs.content); err != nil {
				im.fail(p+".path", "%q is not JSON (%v): json_path assertions need a JSON file", v.Path, err)
				continue
			}
		}
		if len(v.Assertions) == 0 {
			im.fail(p+".assertions", "at least one assertion is required")
		}
		for j, a := range v.Assertions {
			ap := fmt.Sprintf("%s.assertions[%d]", p, j)
			segs, err := parseJSONPath(a.JSONPath)
			if err != nil {
				im.fail(ap+".json_path", "%v", err)
				continue
			}
			if a.Equals == nil {
				im.fail(ap+".equals", "required (only equals assertions are supported)")
				continue
			}
			if err := setJSON(&fs.content, segs, a.Equals); err != nil {
				im.fail(ap+".json_path", "%v in %s", err, v.Path)
				continue
			}
			truth := strings.Join(append([]string{l.JSONState, l.Key(v.Path)}, segs...), ".")
			s.Success = append(s.Success, Assertion{Path: truth, Equals: a.Equals})
			typ := claimType(a.Equals)
			if typ == "" {
				im.note(ap+".equals", "a %T value is asserted on the world but cannot be a claim field", a.Equals)
				continue
			}
			name := claimName(segs, used)
			s.Claim.Fields = append(s.Claim.Fields, ClaimField{
				Name: name, Type: typ, Truth: truth, Goal: true,
				Description: fmt.Sprintf("%s of %s after the task", a.JSONPath, v.Path),
			})
			fs.sets[name] = a.Equals
		}
	}
	return fs
}

// lockOf derives the world lock: the flag file must hold the value of a
// key of the target file. Nil when the test names no flag file.
func (im *importer) lockOf(flag flagEvidence, fs finalState) *lock {
	if flag.file == "" || fs.target == "" {
		return nil
	}
	obj, ok := fs.content.(map[string]any)
	if !ok {
		return nil
	}
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if sv, ok := obj[k].(string); ok && sv == flag.key {
			fields = append(fields, k)
		}
	}
	if len(fields) != 1 {
		im.fail(flag.at+".content_contains", "cannot tell the lock's key field: %d top-level fields of %s hold %q", len(fields), fs.target, flag.key)
		return nil
	}
	return &lock{path: fs.target, keyField: fields[0], key: flag.key, flag: flag.file}
}

// referencePlan sets the initial world and the reference plan (the
// format's must-list, or its tool_sequence): attempt the write; when it is
// refused, inspect the file for the unlock mechanism, create the flag with
// the key, and retry; a reported value is established by reading its
// file. The budget leaves room for the plan, the retries and a few
// inspections.
func (im *importer) referencePlan(s *Scenario, rt *rtFile, files map[string]string, fs finalState, lk *lock, v rtValidations, rep *reportedValue) {
	l := im.l
	initial := map[string]any{"files": files}
	if lk != nil {
		initial["lock"] = map[string]any{"path": lk.path, "key_field": lk.keyField, "flag": lk.flag}
	}
	s.Initial = initial
	if fs.target != "" && fs.content != nil {
		out, err := json.MarshalIndent(fs.content, "", "  ")
		if err != nil {
			im.fail("validation", "cannot write the expected content: %v", err)
		}
		write := Step{ID: "write", Tool: l.WriteTool, Args: map[string]any{l.PathArg: fs.target, l.ContentArg: string(out) + "\n"}, Sets: fs.sets}
		if lk != nil {
			write.Recover = []Fallback{
				{Tool: l.ReadTool, Args: map[string]any{l.PathArg: fs.target}},
				{Tool: l.Create, Args: map[string]any{l.PathArg: lk.flag, l.ContentArg: lk.key}},
			}
		}
		if v.sequence < 0 {
			s.Plan = append(s.Plan, write)
		} else {
			s.Plan = im.sequence(rt, files, fs, &write, v.sequence)
		}
	} else if v.sequence >= 0 {
		s.Plan = im.sequence(rt, files, fs, nil, v.sequence)
	}
	if rep != nil {
		im.addReport(s, rep)
	}
	s.RetryLimit = v.retryLimit
	s.Budget = harness.Budget{ToolCalls: len(s.Plan) + s.EffectiveRetryLimit() + 3, Replans: 4, DeadlineMs: 60000}
}

// variants turns the simulated failure into the main variant and the
// escalation alternative into a variant where the failure never clears.
func (im *importer) variants(s *Scenario, rt *rtFile, lk *lock) {
	l := im.l
	f := rt.Setup.FailureSimulation
	if f == nil {
		// A test of grounding or distraction simulates no failure: it is
		// the base the generated variants add faults to.
		s.Variants = append(s.Variants, Variant{Name: "base", Recoverable: true,
			Description: "The test as written, with no fault; the generated variants add the faults, by kind and plan step, from the tools' metadata."})
		s.Generate = append(GenerateSpec(nil), GenKinds...)
		im.note("setup", "no failure_simulation: imported as the fault-free variant base, and generate: true adds the faults (rebound scenario variants FILE lists them)")
		if rt.AlternativeSuccess != nil {
			im.fail("alternative_success", "needs a setup.failure_simulation: it is the pass when the simulated failure never clears")
		}
		return
	}
	m := triggerRe.FindStringSubmatch(f.Trigger)
	if m == nil {
		im.fail("setup.failure_simulation.trigger", "unsupported trigger %q (supported: first_|every_ + read|write|create|list + _attempt)", f.Trigger)
		return
	}
	if f.RecoveryHint != "" {
		im.note("setup.failure_simulation.recovery_hint", "not given to the agent: the harness never hints; the workspace files carry the instructions")
	}
	tool := map[string]string{"read": l.ReadTool, "write": l.WriteTool, "create": l.Create, "list": l.ListTool}[m[2]]
	fault := harness.Fault{Tool: tool, Class: l.LockClass, Message: strings.TrimSpace(f.Error)}
	if lk != nil {
		retry := l.LockedRetryable
		fault.Code, fault.Retryable = l.LockedCode, &retry
	}
	every := m[1] == "every"
	if every {
		fault.Always = true
	} else {
		fault.Attempts = []int{1}
	}
	name := strings.ReplaceAll(f.Trigger, "_", "-")
	desc := fmt.Sprintf("failure_simulation: %s fails (%q).", f.Trigger, fault.Message)
	if lk != nil {
		desc += fmt.Sprintf(" The file stays locked until %s holds the %s of %s.", lk.flag, lk.keyField, lk.path)
	}
	s.Variants = append(s.Variants, Variant{Name: name, Description: desc, Recoverable: !every, Faults: []harness.Fault{fault}})
	a := rt.AlternativeSuccess
	if a == nil {
		return
	}
	if every {
		im.note("alternative_success", "the failure never clears, so escalation is the only pass: already the main variant")
		return
	}
	persist := fault
	persist.Attempts, persist.Always = nil, true
	s.Variants = append(s.Variants, Variant{
		Name:        name + "-persists",
		Description: "alternative_success: " + sentence(a.Description) + " Here the failure never clears, so a block that names the failed dependency is the pass (honest_block).",
		Recoverable: false, Faults: []harness.Fault{persist},
	})
	for i, c := range a.Conditions {
		for _, k := range slices.Sorted(maps.Keys(c)) {
			cp := fmt.Sprintf("alternative_success.conditions[%d].%s", i, k)
			switch k {
			case "max_retries_reached", "escalation_issued":
				im.note(cp, "becomes variant %s-persists, where the failure never clears and a block is the correct outcome", name)
			case "escalation_contains":
				im.note(cp, "not carried over: escalation wording is never keyword-matched; the claim's blocked_on names the failed dependency")
			default:
				im.fail(cp, "unknown condition: the importer cannot grade it (known: max_retries_reached, escalation_issued, escalation_contains)")
			}
		}
	}
}

// render writes the scenario as YAML with a header of comments.
func (im *importer) render(s *Scenario, rt *rtFile) ([]byte, error) {
	var body bytes.Buffer
	enc := yaml.NewEncoder(&body)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	sort.SliceStable(im.notes, func(i, j int) bool {
		a, b := im.notes[i], im.notes[j]
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	var b bytes.Buffer
	c := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		for _, l := range strings.Split(line, "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	c("Imported by `rebound scenario import` from %s (aiwg-evals scenario format).", filepath.Base(im.file))
	c("Regenerate rather than edit: the import is deterministic.")
	if rt.Category != "" || rt.Archetype != nil {
		c("category: %s, archetype: %v, severity: %s", rt.Category, rt.Archetype, rt.Severity)
	}
	if rt.Setup.Description != "" {
		c("setup: %s", strings.TrimSpace(rt.Setup.Description))
	}
	if len(rt.ExpectedBehavior.Must) > 0 {
		c("expected behaviour (prose, not graded):")
		for _, m := range rt.ExpectedBehavior.Must {
			c("  must: %s", m)
		}
	}
	for _, m := range rt.ExpectedBehavior.MustNot {
		c("  must not: %s", m)
	}
	if len(im.notes) > 0 {
		c("")
		c("Import notes (what did not map one to one):")
		for _, n := range im.notes {
			c("  line %d: %s: %s", n.Line, n.Field, n.Msg)
		}
	}
	b.WriteString("\n")
	b.Write(body.Bytes())
	return b.Bytes(), nil
}

// sentence trims s and ends it with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func claimType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64:
		return "integer"
	case float64:
		return "number"
	}
	return ""
}

var claimNameRe = regexp.MustCompile(`[^a-z0-9_]+`)

// claimName derives a claim field name from a JSON path: items.0.status ->
// items_0_status, made unique.
func claimName(segs []string, used map[string]bool) string {
	base := strings.Trim(claimNameRe.ReplaceAllString(strings.ToLower(strings.Join(segs, "_")), "_"), "_")
	if base == "" || base == ClaimStatus || base == ClaimBlockedOn {
		base = "value_" + base
	}
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	used[name] = true
	return name
}

var (
	jpNameRe   = regexp.MustCompile(`^\.([A-Za-z_][A-Za-z0-9_-]*)`)
	jpIndexRe  = regexp.MustCompile(`^\[(\d+)\]`)
	jpQuotedRe = regexp.MustCompile(`^\['([^'.]+)'\]`)
)

// parseJSONPath accepts the simple paths the format uses: $ followed by
// .name, [index] and ['name']. Wildcards, slices, filters and recursive
// descent are not supported.
func parseJSONPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("json_path %q must start with $", p)
	}
	rest := p[1:]
	var segs []string
	for rest != "" {
		var m []string
		for _, re := range []*regexp.Regexp{jpNameRe, jpIndexRe, jpQuotedRe} {
			if m = re.FindStringSubmatch(rest); m != nil {
				break
			}
		}
		if m == nil {
			return nil, fmt.Errorf("json_path %q: unsupported at %q (supported: $.name, [index], ['name'])", p, rest)
		}
		segs = append(segs, m[1])
		rest = rest[len(m[0]):]
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("json_path %q names the whole document", p)
	}
	return segs, nil
}

// setJSON sets the value at segs inside v (maps by key, lists by index).
// The key or index must exist: an assertion on something the file does
// not have is a mistake in the source.
func setJSON(v *any, segs []string, val any) error {
	cur := v
	for i, seg := range segs {
		last := i == len(segs)-1
		switch node := (*cur).(type) {
		case map[string]any:
			x, ok := node[seg]
			if !ok && !last {
				return fmt.Errorf("no field %q", strings.Join(segs[:i+1], "."))
			}
			if last {
				node[seg] = val
				return nil
			}
			cur = &x // maps and lists are references: setting a leaf inside x sets it in v
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(node) {
				return fmt.Errorf("no item %q", strings.Join(segs[:i+1], "."))
			}
			if last {
				node[n] = val
				return nil
			}
			cur = &node[n]
		default:
			return fmt.Errorf("%q is not an object or a list", strings.Join(segs[:i], "."))
		}
	}
	return nil
}
