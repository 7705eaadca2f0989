package declared

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/internal/fileerr"
	"rebound/internal/strictyaml"
)

// parser walks the node tree of a world file (read by internal/strictyaml:
// aliases expanded, merge keys resolved, no key twice) and collects every
// problem, located at file:line:column with the field's path.
type parser struct {
	file string
	errs fileerr.Errors
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	fe := fileerr.FieldError{File: p.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		fe.Line, fe.Col = n.Line, n.Column
		fe.Msg += strictyaml.ViaNote(n)
	}
	p.errs = append(p.errs, fe)
}

// pair is one key of a mapping with its value.
type pair struct {
	key  string
	k, v *yaml.Node
	at   string // the field path of the value
}

// mapping returns the pairs of a mapping node, reporting a node that is
// not a mapping and, when known is not nil, every key it does not list.
func (p *parser) mapping(n *yaml.Node, at string, known []string) []pair {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		p.errorf(n, at, "expected a mapping, got %s", kindOf(n))
		return nil
	}
	out := make([]pair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if known != nil && !slices.Contains(known, k.Value) {
			p.errorf(k, join(at, k.Value), "unknown field (known: %s; see schema/world.schema.json)", strings.Join(known, ", "))
			continue
		}
		out = append(out, pair{key: k.Value, k: k, v: v, at: join(at, k.Value)})
	}
	return out
}

// sequence returns the items of a sequence node (a single value stands for
// a list of one when one is true).
func (p *parser) sequence(n *yaml.Node, at string, one bool) []*yaml.Node {
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		if one {
			return []*yaml.Node{n}
		}
		p.errorf(n, at, "expected a list, got %s", kindOf(n))
		return nil
	}
	return n.Content
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		}
		return n.Value
	}
	return "a value"
}

func (p *parser) str(n *yaml.Node, at string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, at, "expected a string, got %s", kindOf(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) nonEmpty(n *yaml.Node, at string) (string, bool) {
	s, ok := p.str(n, at)
	if ok && s == "" {
		p.errorf(n, at, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *parser) integer(n *yaml.Node, at string, min int64) (int64, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			if i < min {
				p.errorf(n, at, "must be at least %d", min)
				return 0, false
			}
			return i, true
		}
	}
	p.errorf(n, at, "expected an integer, got %s", kindOf(n))
	return 0, false
}

func (p *parser) number(n *yaml.Node, at string) (float64, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 {
			return f, true
		}
	}
	p.errorf(n, at, "expected a non-negative number, got %s", kindOf(n))
	return 0, false
}

func (p *parser) boolean(n *yaml.Node, at string) (bool, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	}
	p.errorf(n, at, "expected true or false, got %s", kindOf(n))
	return false, false
}

// value converts a free-form node (a literal, the initial state) to Go:
// strings, int64, float64, bools, nil, map[string]any, []any.
func (p *parser) value(n *yaml.Node, at string) (any, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, true
		case "!!str":
			return n.Value, true
		case "!!int":
			var i int64
			if err := n.Decode(&i); err == nil {
				return i, true
			}
			var f float64
			if err := n.Decode(&f); err == nil {
				return f, true
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, true
			}
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		default:
			return n.Value, true
		}
		p.errorf(n, at, "unsupported value %s", n.Value)
		return nil, false
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			v, vok := p.value(n.Content[i+1], join(at, k.Value))
			ok = ok && vok
			out[k.Value] = v
		}
		return out, ok
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		ok := true
		for i, c := range n.Content {
			v, vok := p.value(c, fmt.Sprintf("%s[%d]", at, i))
			ok = ok && vok
			out[i] = v
		}
		return out, ok
	}
	p.errorf(n, at, "unsupported value")
	return nil, false
}

// find returns the value of key in a mapping node, or nil.
func find(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
