package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FieldError is one problem in a file, located at a line and column, naming
// the field.
type FieldError struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
}

func (e FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one or more files.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// pathError is a validation problem at a field path like
// "variants[1].faults[0].class", before it is located in the file.
type pathError struct {
	path string
	msg  string
}

// LoadScenario reads and validates a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScenario(path, data)
}

// ParseScenario decodes and validates scenario YAML; file names the source
// in errors. Unknown fields are errors.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	var s Scenario
	root, err := decodeStrict(file, data, &s)
	if err != nil {
		return nil, err
	}
	if errs := locate(file, root, s.validate()); len(errs) > 0 {
		return nil, errs
	}
	s.File = file
	s.Hash = contentHash(data)
	return &s, nil
}

// decodeStrict decodes one YAML document into v, rejecting unknown fields,
// and returns the node tree for locating later validation errors.
func decodeStrict(file string, data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Errors{yamlSyntaxError(file, err)}
	}
	if len(root.Content) == 0 {
		return nil, Errors{{File: file, Line: 1, Col: 1, Msg: "empty document"}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			out := make(Errors, 0, len(te.Errors))
			for _, msg := range te.Errors {
				out = append(out, typeError(file, &root, msg))
			}
			return nil, out
		}
		return nil, Errors{yamlSyntaxError(file, err)}
	}
	return &root, nil
}

var (
	lineRe    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	cannotRe  = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
)

func yamlSyntaxError(file string, err error) FieldError {
	msg := err.Error()
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return FieldError{File: file, Line: line, Col: 1, Msg: "invalid YAML: " + m[2]}
	}
	return FieldError{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// typeError turns one of yaml.v3's decode messages into a located,
// readable error.
func typeError(file string, root *yaml.Node, msg string) FieldError {
	fe := FieldError{File: file, Msg: msg}
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return fe
	}
	fe.Line, _ = strconv.Atoi(m[1])
	fe.Col = 1
	rest := m[2]
	if u := unknownRe.FindStringSubmatch(rest); u != nil {
		fe.Field = u[1]
		fe.Msg = "unknown field (check the spelling; see the schema in schema/)"
		if n := findKey(root, fe.Line, u[1]); n != nil {
			fe.Col = n.Column
		}
		return fe
	}
	if c := cannotRe.FindStringSubmatch(rest); c != nil {
		fe.Msg = fmt.Sprintf("expected %s, got %s %q", goTypeName(c[3]), c[1], c[2])
		if n := findValue(root, fe.Line, c[2]); n != nil {
			fe.Col = n.Column
			fe.Field = n.keyName
		}
		return fe
	}
	fe.Msg = rest
	return fe
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "int" || t == "int64":
		return "an integer"
	case t == "float64":
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	}
	return "a " + strings.TrimPrefix(t, "scenario.")
}

type keyedNode struct {
	*yaml.Node
	keyName string
}

// findKey finds a mapping key with the given value on the given line.
func findKey(n *yaml.Node, line int, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Line == line && k.Value == key {
				return k
			}
		}
	}
	for _, c := range n.Content {
		if r := findKey(c, line, key); r != nil {
			return r
		}
	}
	return nil
}

// findValue finds a scalar value on the given line, with the key it
// belongs to.
func findValue(n *yaml.Node, line int, value string) *keyedNode {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line == line && (v.Value == value || v.Kind != yaml.ScalarNode) {
				return &keyedNode{Node: v, keyName: k.Value}
			}
		}
	}
	for _, c := range n.Content {
		if r := findValue(c, line, value); r != nil {
			return r
		}
	}
	return nil
}

// locate maps validation errors at field paths onto file positions.
func locate(file string, root *yaml.Node, errs []pathError) Errors {
	out := make(Errors, 0, len(errs))
	for _, e := range errs {
		n := lookup(root, e.path)
		fe := FieldError{File: file, Field: e.path, Msg: e.msg}
		if n != nil {
			fe.Line, fe.Col = n.Line, n.Column
		}
		out = append(out, fe)
	}
	return out
}

var segmentRe = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// lookup walks a path like "variants[1].faults[0].class" through the node
// tree and returns the deepest node it reaches (so a missing field points
// at its parent).
func lookup(root *yaml.Node, path string) *yaml.Node {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, m := range segmentRe.FindAllStringSubmatch(path, -1) {
		if n == nil {
			return nil
		}
		next := (*yaml.Node)(nil)
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			if n.Kind == yaml.SequenceNode && i < len(n.Content) {
				next = n.Content[i]
			}
		} else if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == m[1] {
					// Point at the key for scalars, at the value for
					// collections so deeper segments keep walking.
					next = n.Content[i+1]
					if next.Kind == yaml.ScalarNode {
						next = n.Content[i]
					}
					break
				}
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
