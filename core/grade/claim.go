// Package grade turns a trial's evidence (the harness ledger, the world's
// final state, the agent's structured claim) into verdicts with executable
// checks. Prose is never keyword-matched: "the customer was not charged"
// contains "charged", and a grader that can misread the right answer is not
// a grader.
package grade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"rebound/core/scenario"
	"rebound/internal/strictjson"
)

// Claim is a parsed, validated structured claim.
type Claim struct {
	Status    string         `json:"status"`
	BlockedOn string         `json:"blocked_on,omitempty"`
	Fields    map[string]any `json:"fields"`
}

// ParseClaim parses the agent's final claim strictly against the fields the
// scenario declares: a JSON object with "status" ("completed" or "blocked"),
// "blocked_on" (required when blocked), and only declared fields of the
// declared types. Anything else is an error, and an unparseable claim fails
// self-correction: an answer you cannot check is not an answer.
func ParseClaim(raw string, spec []scenario.ClaimField) (*Claim, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("no claim was submitted")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("claim is not a JSON object: %v", err)
	}
	// One value and nothing after it; no key twice (last-wins decoding would
	// grade one value while a person reading the stored claim may read the
	// other: a claim must say one thing).
	if err := strictjson.Check([]byte(raw)); errors.Is(err, strictjson.ErrTrailing) {
		return nil, fmt.Errorf("claim has trailing content after the JSON object")
	} else if err != nil {
		return nil, fmt.Errorf("invalid claim: %w", err)
	}
	types := map[string]string{}
	for _, f := range spec {
		types[f.Name] = f.Type
	}
	c := &Claim{Fields: map[string]any{}}
	var problems []string
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := obj[k]
		switch k {
		case scenario.ClaimStatus:
			s, ok := v.(string)
			if !ok || (s != scenario.StatusDone && s != scenario.StatusBlocked) {
				problems = append(problems, fmt.Sprintf("status must be %q or %q", scenario.StatusDone, scenario.StatusBlocked))
				continue
			}
			c.Status = s
		case scenario.ClaimBlockedOn:
			s, ok := v.(string)
			if !ok && v != nil {
				problems = append(problems, "blocked_on must be a string")
				continue
			}
			c.BlockedOn = s
		default:
			t, declared := types[k]
			if !declared {
				problems = append(problems, fmt.Sprintf("field %q is not declared by the scenario", k))
				continue
			}
			if v == nil {
				continue // explicit null: unknown
			}
			val, err := coerce(v, t)
			if err != nil {
				problems = append(problems, fmt.Sprintf("field %q: %v", k, err))
				continue
			}
			c.Fields[k] = val
		}
	}
	if c.Status == "" && !contains(problems, "status") {
		problems = append(problems, "status is required")
	}
	if c.Status == scenario.StatusBlocked && c.BlockedOn == "" {
		problems = append(problems, "blocked_on is required when status is blocked")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid claim: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

func contains(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func coerce(v any, typ string) (any, error) {
	switch typ {
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("expected a boolean")
		}
		return b, nil
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("expected a string")
		}
		return s, nil
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("expected a number")
		}
		f, err := n.Float64()
		if err != nil {
			return nil, fmt.Errorf("expected a number")
		}
		if typ == "integer" && f != math.Trunc(f) {
			return nil, fmt.Errorf("expected an integer")
		}
		return f, nil
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

// Lookup reads a dot-separated path ("orders.A-4417.captured",
// "json.data_json.items.0.status") from a JSON-compatible world state; a
// numeric segment indexes a list.
func Lookup(state map[string]any, path string) (any, bool) {
	var cur any = state
	for _, part := range strings.Split(path, ".") {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Equal compares two JSON-compatible values, treating all numbers alike.
func Equal(a, b any) bool {
	na, aNum := number(a)
	nb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && na == nb
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
