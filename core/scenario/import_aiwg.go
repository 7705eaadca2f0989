package scenario

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The validations of the grounding and distractor tests of the aiwg-evals
// format, as the importer carries them over:
//
//   - file_content (like final_state_correct): the asserted values become
//     success assertions and goal claim fields, and the reference plan
//     writes the file with them;
//   - no_data_loss with original_keys_preserved: every other original
//     value of the file becomes a success assertion;
//   - tool_sequence ("read before edit"): the reference plan's order, so a
//     write before the read it depends on fails dependency_order;
//   - output_contains ("report only X"): a goal claim field whose truth is
//     X's place in the workspace's JSON (found among single_source's
//     allowed sources), established by the plan's read of that file;
//   - output_not_contains: graded by that field's exact value (the two
//     must not contradict each other);
//   - single_source: the field is established by reading the allowed file
//     only (claim_supported).

// seqTools maps a tool_sequence tool name to what the plan step does.
var seqTools = map[string]string{"read": "read", "view": "read", "cat": "read", "edit": "edit", "write": "edit", "multiedit": "edit"}

// sequence builds the reference plan in the order of the tool_sequence at
// validation[at]: a read step per read, the write at the edit (write is
// the file_content write; nil when there is none).
func (im *importer) sequence(rt *rtFile, files map[string]string, fs finalState, write *Step, at int) []Step {
	l := im.l
	var plan []Step
	wrote := false
	for j, st := range rt.Validation[at].Pattern {
		sp := fmt.Sprintf("validation[%d].pattern[%d]", at, j)
		kind, known := seqTools[strings.ToLower(st.Tool)]
		if !known {
			im.fail(sp+".tool", "unknown tool %q (known: Read, Edit, Write, MultiEdit)", st.Tool)
			continue
		}
		path, ok := im.patternPath(sp, st.PathContains, files)
		switch {
		case !ok:
		case kind == "read":
			plan = append(plan, Step{ID: uniqueID(plan, "read"), Tool: l.ReadTool, Args: map[string]any{l.PathArg: path}})
		case write == nil:
			im.fail(sp+".tool", "an edit needs a file_content validation saying what the file holds after it")
		case path != fs.target:
			im.fail(sp+".path_contains", "the edit is of %q, but the file_content validation asserts on %q", path, fs.target)
		case wrote:
			im.fail(sp, "a second edit of %q: the reference plan writes it once", path)
		default:
			plan = append(plan, *write)
			wrote = true
		}
	}
	if write != nil && !wrote {
		plan = append(plan, *write)
	}
	return plan
}

// patternPath is the one setup file a pattern step's path_contains names:
// the only path containing it, or else the only one ending with it.
func (im *importer) patternPath(at, needle string, files map[string]string) (string, bool) {
	if needle == "" {
		im.fail(at+".path_contains", "required: which file the step is about")
		return "", false
	}
	var hits, ends []string
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if strings.Contains(p, needle) {
			hits = append(hits, p)
			if strings.HasSuffix(p, needle) {
				ends = append(ends, p)
			}
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0], true
	case len(ends) == 1:
		return ends[0], true
	case len(hits) == 0:
		im.fail(at+".path_contains", "no setup file's path contains %q", needle)
	default:
		im.fail(at+".path_contains", "%d setup files' paths contain %q (%s): say which", len(hits), needle, strings.Join(hits, ", "))
	}
	return "", false
}

// uniqueID is base, or base-N when the plan already has it.
func uniqueID(plan []Step, base string) string {
	id := base
	for n := 2; slices.ContainsFunc(plan, func(s Step) bool { return s.ID == id }); n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	return id
}

// preserved adds, for each no_data_loss validation, a success assertion
// that every original value of its file is kept (the values the
// file_content assertions change excepted).
func (im *importer) preserved(s *Scenario, rt *rtFile, files map[string]string, preserve []int) {
	for _, i := range preserve {
		v := rt.Validation[i]
		p := fmt.Sprintf("validation[%d]", i)
		doc, ok := im.jsonFile(p+".path", v.Path, files)
		if !ok {
			continue
		}
		n, skipped := 0, 0
		walkLeaves(doc, nil, func(segs []string, val any) {
			truth := strings.Join(append([]string{im.l.JSONState, im.l.Key(v.Path)}, segs...), ".")
			switch {
			case val == nil || slices.ContainsFunc(segs, func(k string) bool { return k == "" || strings.Contains(k, ".") }):
				skipped++ // a null, or a key a dot path cannot address
			case slices.ContainsFunc(s.Success, func(a Assertion) bool { return a.Path == truth || strings.HasPrefix(truth, a.Path+".") }):
				// the file_content assertions say what it becomes
			default:
				s.Success = append(s.Success, Assertion{Path: truth, Equals: plainJSON(val)})
				n++
			}
		})
		msg := fmt.Sprintf("becomes %d success assertion(s): every original value of %s stays as it was", n, v.Path)
		if skipped > 0 {
			msg += fmt.Sprintf(" (%d null value(s) or key(s) with a dot not asserted: a state path cannot address them)", skipped)
		}
		im.note(p, "%s", msg)
	}
}

// jsonFile parses setup file path as the files world does (*.json only).
func (im *importer) jsonFile(at, path string, files map[string]string) (any, bool) {
	raw, ok := files[path]
	switch {
	case path == "":
		im.fail(at, "required")
		return nil, false
	case !ok:
		im.fail(at, "%q is not a setup file", path)
		return nil, false
	case !strings.HasSuffix(path, ".json"):
		im.fail(at, "%q is not a .json file: the world keeps the keys of .json files only", path)
		return nil, false
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		im.fail(at, "%q is not JSON (%v)", path, err)
		return nil, false
	}
	return doc, true
}

func decodeJSON(raw string) (any, error) {
	var doc any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// walkLeaves calls fn with the path and value of every scalar in doc, in
// key order.
func walkLeaves(doc any, segs []string, fn func([]string, any)) {
	switch x := doc.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			walkLeaves(x[k], append(slices.Clone(segs), k), fn)
		}
	case []any:
		for i, v := range x {
			walkLeaves(v, append(slices.Clone(segs), fmt.Sprint(i)), fn)
		}
	default:
		if len(segs) > 0 {
			fn(segs, x)
		}
	}
}

// plainJSON turns a json.Number into an integer or a float.
func plainJSON(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) {
		return f
	}
	return n.String()
}

// reportedValue is the claim field an output_contains validation becomes.
type reportedValue struct {
	field, source string
	value         any
}

// reported turns the output_contains validation into a goal claim field:
// its truth is the one place among the allowed sources' JSON that holds
// the expected text.
func (im *importer) reported(s *Scenario, rt *rtFile, files map[string]string, v rtValidations) *reportedValue {
	if v.report < 0 {
		return nil
	}
	p := fmt.Sprintf("validation[%d]", v.report)
	want, _ := rt.Validation[v.report].Expected.(string)
	sources := im.allowedSources(rt, files, v.sources)
	type hit struct {
		path  string
		segs  []string
		value any
	}
	var hits []hit
	for _, src := range sources {
		if !strings.HasSuffix(src, ".json") {
			continue
		}
		doc, err := decodeJSON(files[src])
		if err != nil {
			continue
		}
		walkLeaves(doc, nil, func(segs []string, val any) {
			if val != nil && fmt.Sprint(val) == want && !slices.ContainsFunc(segs, func(k string) bool { return k == "" || strings.Contains(k, ".") }) {
				hits = append(hits, hit{src, segs, plainJSON(val)})
			}
		})
	}
	for _, i := range v.forbidden {
		for j, f := range rt.Validation[i].Forbidden {
			if f != "" && strings.Contains(want, f) {
				im.fail(fmt.Sprintf("validation[%d].forbidden[%d]", i, j), "%q is part of the reported value %q: the two validations contradict each other", f, want)
			}
		}
	}
	switch len(hits) {
	case 0:
		im.fail(p+".expected", "%q is no value in the JSON of %s: the reported value needs its place in the workspace to be checked against", want, strings.Join(sources, ", "))
		return nil
	case 1:
	default:
		var at []string
		for _, h := range hits {
			at = append(at, h.path+" "+strings.Join(h.segs, "."))
		}
		im.fail(p+".expected", "%q is the value at %d places (%s): add a single_source validation naming the file it comes from", want, len(hits), strings.Join(at, "; "))
		return nil
	}
	h := hits[0]
	typ := claimType(h.value)
	if typ == "" {
		typ = "string"
	}
	name := claimName(h.segs, im.used)
	s.Claim.Fields = append(s.Claim.Fields, ClaimField{
		Name: name, Type: typ, Goal: true,
		Truth:       strings.Join(append([]string{im.l.JSONState, im.l.Key(h.path)}, h.segs...), "."),
		Description: "the value the task asks to report, and only it",
	})
	im.note(p, "becomes the goal claim field %s (%s of %s): the agent reports it alone, as structured data, and the grader compares it with the workspace", name, strings.Join(h.segs, "."), h.path)
	return &reportedValue{field: name, source: h.path, value: h.value}
}

// allowedSources are the single_source files (every setup file when there
// is no single_source), each once.
func (im *importer) allowedSources(rt *rtFile, files map[string]string, sources []int) []string {
	if len(sources) == 0 {
		return slices.Sorted(maps.Keys(files))
	}
	var out []string
	for _, i := range sources {
		for j, src := range rt.Validation[i].AllowedSources {
			if !hasKey(files, src) {
				im.fail(fmt.Sprintf("validation[%d].allowed_sources[%d]", i, j), "%q is not a setup file", src)
				continue
			}
			if !slices.Contains(out, src) {
				out = append(out, src)
			}
		}
	}
	return out
}

// addReport makes the plan's read of the reported value's source establish
// it, adding that read first when the plan has none.
func (im *importer) addReport(s *Scenario, r *reportedValue) {
	for i, st := range s.Plan {
		if st.Tool == im.l.ReadTool && st.Args[im.l.PathArg] == r.source {
			if s.Plan[i].Sets == nil {
				s.Plan[i].Sets = map[string]any{}
			}
			s.Plan[i].Sets[r.field] = r.value
			return
		}
	}
	read := Step{ID: uniqueID(s.Plan, "read"), Tool: im.l.ReadTool, Args: map[string]any{im.l.PathArg: r.source}, Sets: map[string]any{r.field: r.value}}
	s.Plan = append([]Step{read}, s.Plan...)
}

// failedKeys names where the problems of decoding lie: the top-level key,
// and for a list, its item (validation[3]).
func failedKeys(root *yaml.Node, es Errors) map[string]bool {
	out := map[string]bool{}
	doc := root
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc == nil || doc.Kind != yaml.MappingNode {
		return out
	}
	for _, e := range es {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			end := math.MaxInt
			if i+2 < len(doc.Content) {
				end = doc.Content[i+2].Line
			}
			if e.Line < doc.Content[i].Line || e.Line >= end {
				continue
			}
			key, val := doc.Content[i].Value, doc.Content[i+1]
			out[key] = true
			if val.Kind == yaml.SequenceNode {
				for j, item := range val.Content {
					next := end
					if j+1 < len(val.Content) {
						next = val.Content[j+1].Line
					}
					if e.Line >= item.Line && e.Line < next {
						out[fmt.Sprintf("%s[%d]", key, j)] = true
					}
				}
			}
		}
	}
	return out
}

// outside drops the errors that follow from a problem of decoding: those
// under a list item that did not decode, or, outside lists, under a
// top-level key that did not.
func outside(es Errors, failed map[string]bool) Errors {
	var out Errors
	for _, e := range es {
		scope := e.Field
		if i := strings.IndexAny(scope, ".["); i >= 0 && scope[i] == '.' {
			scope = scope[:i]
		} else if j := strings.Index(scope, "]"); j >= 0 {
			scope = scope[:j+1]
		}
		if !failed[scope] {
			out = append(out, e)
		}
	}
	return out
}
