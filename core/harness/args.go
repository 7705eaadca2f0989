package harness

import (
	"encoding/json"
	"errors"
	"strings"
)

// DecodeArgs decodes a tool call's arguments as every agent transport
// receives them (the LLM agent's function calls, the tool server's HTTP
// and MCP calls): one JSON object. An empty body or null stands for no
// arguments (some servers send that for parameterless calls); anything
// else, or trailing content, is rejected before it reaches the harness.
func DecodeArgs(raw []byte) (map[string]any, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing content after the object")
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}
