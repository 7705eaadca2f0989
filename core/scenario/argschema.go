package scenario

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/google/jsonschema-go/jsonschema"

	"rebound/core/harness"
)

// validateArgSchemas checks the plan's arguments against the input schema
// of tools that carry one (an upstream MCP server's): every step, fallback,
// recovery action and setup or probe call. A step with corrected
// arguments is checked as corrected: its first arguments may be wrong on
// purpose, to draw the world's INVALID_INPUT.
func (s *Scenario) validateArgSchemas(catalog map[string]harness.Tool) []pathError {
	var errs []pathError
	compiled := map[string]*jsonschema.Resolved{}
	check := func(path, tool string, args map[string]any) {
		t, ok := catalog[tool]
		if !ok || len(t.Schema) == 0 {
			return
		}
		rs, seen := compiled[tool]
		if !seen {
			rs = compileSchema(t.Schema)
			compiled[tool] = rs
		}
		if rs == nil {
			return // a schema the validator cannot read: the upstream judges
		}
		if err := rs.Validate(jsonValue(args)); err != nil {
			errs = append(errs, pathError{path: path, msg: fmt.Sprintf("does not match %s's input schema: %v", tool, err)})
		}
	}
	for i, st := range s.Plan {
		args := st.Args
		if len(st.Corrected) > 0 {
			args = maps.Clone(st.Args)
			if args == nil {
				args = map[string]any{}
			}
			maps.Copy(args, st.Corrected)
		}
		check(fmt.Sprintf("plan[%d].args", i), st.Tool, args)
		for j, fb := range st.Fallbacks {
			check(fmt.Sprintf("plan[%d].fallbacks[%d].args", i, j), fb.Tool, fb.Args)
		}
		for j, rc := range st.Recover {
			check(fmt.Sprintf("plan[%d].recover[%d].args", i, j), rc.Tool, rc.Args)
		}
	}
	if u := s.Upstream; u != nil {
		for i, c := range u.Setup {
			check(fmt.Sprintf("upstream.setup[%d].args", i), c.Tool, c.Args)
		}
		for i, p := range u.Probes {
			check(fmt.Sprintf("upstream.probes[%d].args", i), p.Tool, p.Args)
		}
	}
	return errs
}

func compileSchema(raw json.RawMessage) *jsonschema.Resolved {
	var sch jsonschema.Schema
	if err := json.Unmarshal(raw, &sch); err != nil {
		return nil
	}
	rs, err := sch.Resolve(nil)
	if err != nil {
		return nil
	}
	return rs
}

// jsonValue is v as encoding/json would decode it (YAML's ints become
// float64s), the form a validator expects.
func jsonValue(v map[string]any) any {
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
