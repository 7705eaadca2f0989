package llm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// object is a JSON object that keeps its keys in insertion order, so the
// schemas the model sees (and the recordings that hash them) are stable and
// read in a sensible order.
type object []member

type member struct {
	key string
	val any
}

func (o object) MarshalJSON() ([]byte, error) { return o.appendJSON(nil) }

// appendJSON writes nested objects directly, so a schema is encoded (and
// compacted by encoding/json) once rather than once per level.
func (o object) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, m.key)
		b = append(b, ':')
		var err error
		switch v := m.val.(type) {
		case object:
			b, err = v.appendJSON(b)
		case string:
			var s []byte
			s, err = json.Marshal(v)
			b = append(b, s...)
		case []any:
			b = append(b, '[')
			for j, x := range v {
				if j > 0 {
					b = append(b, ',')
				}
				if xo, ok := x.(object); ok {
					b, err = xo.appendJSON(b)
				} else {
					var s []byte
					s, err = json.Marshal(x)
					b = append(b, s...)
				}
				if err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
		default:
			var s []byte
			s, err = json.Marshal(v)
			b = append(b, s...)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// toolDefinitions turns the offered tools' metadata into function
// definitions, followed by the built-in functions.
func toolDefinitions(tools []harness.Tool, names nameMap) ([]openai.Tool, error) {
	fn := func(tool string) string { f, _ := FunctionName(tool); return f }
	out := make([]openai.Tool, 0, len(tools)+2)
	for _, t := range tools {
		name := fn(t.Name)
		if names.toTool[name] != t.Name {
			return nil, fmt.Errorf("tool %q is not in the name table", t.Name)
		}
		raw, err := ParametersSchema(t)
		if err != nil {
			return nil, err
		}
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: toolDescription(t), Parameters: json.RawMessage(raw),
		}})
	}
	out = append(out,
		openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        builtinWait,
			Description: "Wait on the task clock for the given number of milliseconds (for example to honour a retry_after_ms). Returns the task time now_ms. Does not count as a tool call.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","description":"milliseconds to wait"}},"required":["ms"],"additionalProperties":false}`),
		}},
		openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        builtinPlan,
			Description: "Publish your current plan when it changes (one or two sentences). Counts against the plan-update budget. Does not count as a tool call.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"the new plan"}},"required":["summary"],"additionalProperties":false}`),
		}},
	)
	return out, nil
}

// ParametersSchema is the JSON Schema of a tool's arguments, built from its
// metadata: the function parameters the LLM agent offers, and the input
// schema of the tool over MCP and HTTP (toolserver). A tool with a schema
// of its own (an upstream MCP server's) is offered that schema, without its
// "$schema" member (a dialect marker providers refuse).
func ParametersSchema(t harness.Tool) (json.RawMessage, error) {
	if len(t.Schema) > 0 {
		var own map[string]any
		if err := json.Unmarshal(t.Schema, &own); err != nil || own == nil {
			return nil, fmt.Errorf("tool %s: its schema is not a JSON object", t.Name)
		}
		delete(own, "$schema")
		if _, ok := own["type"]; !ok {
			own["type"] = "object"
		}
		return json.Marshal(own)
	}
	props := make(object, 0, len(t.Params))
	var required []string
	for _, p := range t.Params {
		s := object{}
		switch p.Type {
		case "string", "integer", "number", "boolean", "object":
			s = append(s, member{"type", p.Type})
		case "":
			s = append(s, member{"type", "string"})
		default:
			return nil, fmt.Errorf("tool %s: parameter %s has unsupported type %q", t.Name, p.Name, p.Type)
		}
		if p.Description != "" {
			s = append(s, member{"description", p.Description})
		}
		if len(p.Enum) > 0 {
			s = append(s, member{"enum", p.Enum})
		}
		props = append(props, member{p.Name, s})
		if p.Required {
			required = append(required, p.Name)
		}
	}
	params := object{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		params = append(params, member{"required", required})
	}
	params = append(params, member{"additionalProperties", false})
	return params.appendJSON(nil)
}

// ToolDescription is the description the LLM agent gives a tool (see
// toolDescription); toolserver offers the same text over MCP and HTTP.
func ToolDescription(t harness.Tool) string { return toolDescription(t) }

// ClaimSchema is the strict JSON Schema of the final claim (see
// claimSchema); toolserver uses it as submit_claim's input schema.
func ClaimSchema(fields []scenario.ClaimField, tools []string) (json.RawMessage, error) {
	return claimSchema(fields, tools)
}

// toolDescription documents a tool the way a real API reference would: what
// it does, its effect, its idempotency key, its status tool, the permission
// it needs and its documented errors. Latency, deadline and the fault
// schedule are never shown.
func toolDescription(t harness.Tool) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(t.Description))
	line := func(format string, args ...any) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, format, args...)
	}
	switch t.Effect {
	case harness.EffectRead:
		line("Effect: read-only; changes nothing.")
	case harness.EffectIdempotent:
		line("Effect: idempotent; repeating the call has no further effect.")
	case harness.EffectConditional:
		line("Effect: writes; idempotent only when the same %q is passed again: without it, every call that reaches the system commits again.", t.IdempotencyKeyParam)
	case harness.EffectWrite:
		line("Effect: writes; not idempotent: every call that reaches the system commits again.")
	}
	if t.ReconciledBy != "" {
		if fn, err := FunctionName(t.ReconciledBy); err == nil {
			line("Status: %s reports whether an earlier call took effect.", fn)
		}
	}
	if t.Permission != "" {
		line("Requires permission: %s.", t.Permission)
	}
	if len(t.Errors) > 0 {
		parts := make([]string, len(t.Errors))
		for i, e := range t.Errors {
			r := "not retryable"
			if e.Retryable {
				r = "retryable"
			}
			parts[i] = e.Code + " (" + r + ")"
		}
		line("Documented errors: %s.", strings.Join(parts, ", "))
	}
	return b.String()
}

// claimSchema is the strict JSON Schema of the final claim: status,
// blocked_on and the scenario's declared fields, every one required and
// nullable except status (strict mode needs every property required; null
// is how the model says "not verified", which the grader reads as unknown).
//
// blocked_on is constrained to the offered tool names (dotted, as the
// grader and the ledger spell them) or null: the model knows the tools as
// function names, and the schema is where the claim's vocabulary is fixed.
func claimSchema(fields []scenario.ClaimField, tools []string) (json.RawMessage, error) {
	blockedOn := object{{"type", "string"}}
	if len(tools) > 0 {
		blockedOn = append(blockedOn, member{"enum", tools})
	}
	props := object{
		{scenario.ClaimStatus, object{{"type", "string"}, {"enum", []string{scenario.StatusDone, scenario.StatusBlocked}},
			{"description", `"completed" if the goal was achieved, "blocked" if it was not`}}},
		{scenario.ClaimBlockedOn, object{{"anyOf", []any{blockedOn, object{{"type", "null"}}}},
			{"description", "when blocked: the tool name (not the function name) of the dependency that could not be resolved; otherwise null"}}},
	}
	required := []string{scenario.ClaimStatus, scenario.ClaimBlockedOn}
	for _, f := range fields {
		switch f.Type {
		case "boolean", "integer", "number", "string":
		default:
			return nil, fmt.Errorf("claim field %s has unsupported type %q", f.Name, f.Type)
		}
		if f.Name == scenario.ClaimStatus || f.Name == scenario.ClaimBlockedOn {
			return nil, fmt.Errorf("claim field %q is reserved", f.Name)
		}
		s := object{{"type", []string{f.Type, "null"}}}
		if f.Description != "" {
			s = append(s, member{"description", f.Description})
		}
		props = append(props, member{f.Name, s})
		required = append(required, f.Name)
	}
	return object{{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}}.appendJSON(nil)
}
