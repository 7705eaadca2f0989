package llm

import (
	"fmt"
	"strings"
)

// Tool names contain dots (payments.charge); OpenAI function names must
// match ^[a-zA-Z0-9_-]{1,64}$. The mapping replaces each dot with a double
// underscore: payments.charge <-> payments__charge. It is a bijection on
// the names FunctionName accepts: names of letters, digits, '_', '-' and
// '.', without "__" and without an underscore next to a dot (a_.b and a._b
// would both map to a___b). Worlds use names like payments.charge_status,
// which qualify.

// validToolName reports whether s is non-empty and made of letters,
// digits, '_', '-' and '.'.
func validToolName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// FunctionName maps a tool name to the function name offered to the model.
func FunctionName(tool string) (string, error) {
	switch {
	case !validToolName(tool):
		return "", fmt.Errorf("tool name %q: only letters, digits, '_', '-' and '.' can be offered as a function", tool)
	case strings.Contains(tool, "__"):
		return "", fmt.Errorf("tool name %q: contains \"__\", which the function-name mapping reserves for '.'", tool)
	case strings.Contains(tool, "_.") || strings.Contains(tool, "._"):
		return "", fmt.Errorf("tool name %q: an underscore next to a dot cannot be mapped reversibly", tool)
	}
	fn := strings.ReplaceAll(tool, ".", "__")
	if len(fn) > 64 {
		return "", fmt.Errorf("tool name %q: function name %q is longer than 64 characters", tool, fn)
	}
	return fn, nil
}

// ToolName maps a function name back to the tool name: the inverse of
// FunctionName. Any string is accepted, so a name the model invented still
// reaches the harness (which answers TOOL_UNAVAILABLE and records it).
func ToolName(fn string) string { return strings.ReplaceAll(fn, "__", ".") }

// Built-in functions the agent answers itself. They are not harness tools:
// wait advances the trial's simulated clock (Env.Sleep) so the model can
// honour a retry-after, update_plan publishes a plan update (Env.Replan,
// counted against the replan budget). Neither contains "__", so no mapped
// tool name can equal them unless a world names a tool "wait" or
// "update_plan", which Run rejects.
const (
	builtinWait = "wait"
	builtinPlan = "update_plan"
)

// nameMap is the per-run table of offered functions.
type nameMap struct {
	toTool map[string]string // function name -> tool name
}

func newNameMap(tools []string) (nameMap, error) {
	m := nameMap{toTool: make(map[string]string, len(tools))}
	for _, t := range tools {
		fn, err := FunctionName(t)
		if err != nil {
			return nameMap{}, err
		}
		if fn == builtinWait || fn == builtinPlan {
			return nameMap{}, fmt.Errorf("tool name %q collides with the agent's built-in function %q", t, fn)
		}
		if prev, dup := m.toTool[fn]; dup {
			return nameMap{}, fmt.Errorf("tool names %q and %q map to the same function name %q", prev, t, fn)
		}
		m.toTool[fn] = t
	}
	return m, nil
}

// tool returns the tool name a function name stands for; for names that
// were not offered, the inverse mapping.
func (m nameMap) tool(fn string) string {
	if t, ok := m.toTool[fn]; ok {
		return t
	}
	return ToolName(fn)
}
