package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
	"rebound/internal/fileerr"
	"rebound/internal/strictyaml"
)

// FieldError is one problem in a file, located at file:line:column and
// naming the field; Errors is every problem found.
type (
	FieldError = fileerr.FieldError
	Errors     = fileerr.Errors
)

// pathError is a validation problem at a field path like
// "variants[1].faults[0].class", before it is located in the file.
type pathError struct {
	path string
	msg  string
}

// Input limits. Files are read only when they are regular files (not a
// directory, device, pipe or socket) no larger than these.
const (
	// MaxScenarioBytes bounds a scenario file.
	MaxScenarioBytes = 4 << 20
	// MaxPlanBytes bounds a plan file.
	MaxPlanBytes = 1 << 20
	// MaxPromptBytes bounds a prompt file of an LLM arm or judge.
	MaxPromptBytes = 256 << 10
	// MaxPlanScenarios bounds the scenario files one plan loads.
	MaxPlanScenarios = 10_000
)

// LoadScenario reads and validates a scenario file, checking its tool names
// against catalog (world.Catalog) and expanding generated variants with it.
// A nil catalog is ErrNoCatalog; LoadScenarioWith loads without one.
func LoadScenario(path string, catalog Catalog) (*Scenario, error) {
	return LoadScenarioWith(path, LoadOptions{Catalog: catalog})
}

// LoadScenarioWith is LoadScenario with options.
func LoadScenarioWith(path string, opts LoadOptions) (*Scenario, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := opts.interrupted(); err != nil {
		return nil, err
	}
	data, err := fileerr.ReadRegular(path, MaxScenarioBytes, "scenario file")
	if err != nil {
		return nil, err
	}
	return ParseScenarioWith(path, data, opts)
}

// ParseScenario decodes and validates scenario YAML; file names the source
// in errors. Unknown fields are errors.
// Its tool names are checked against catalog, as LoadScenario does.
func ParseScenario(file string, data []byte, catalog Catalog) (*Scenario, error) {
	return ParseScenarioWith(file, data, LoadOptions{Catalog: catalog})
}

// ParseScenarioWith is ParseScenario with options. When the scenario sets
// generate, the generated variants are appended to the hand-written ones;
// the metamorphic pairs are checked against the complete list.
func ParseScenarioWith(file string, data []byte, opts LoadOptions) (*Scenario, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	var s Scenario
	root, decodeErrs := decodeStrict(file, data, &s)
	if root == nil {
		return nil, decodeErrs
	}
	var errs []pathError
	switch {
	case s.Budget.ToolCalls == 0:
		// Every trial has a finite call budget: a scenario that sets none
		// gets the harness's default, and lint says so.
		s.Budget.ToolCalls = harness.DefaultToolCalls
		opts.note(locate(file, root, []pathError{{path: "budget.tool_calls", msg: fmt.Sprintf("not set: the default budget of %d tool calls applies", harness.DefaultToolCalls)}})...)
	case s.Budget.ToolCalls > harness.MaxToolCalls:
		errs = append(errs, pathError{path: "budget.tool_calls", msg: fmt.Sprintf("%d is above the harness's cap of %d calls per trial", s.Budget.ToolCalls, harness.MaxToolCalls)})
	}
	errs = append(errs, s.validate()...)
	worldErrs := s.resolveWorld(file)
	errs = append(errs, worldErrs...)
	var (
		catalog  map[string]harness.Tool
		declared Errors // problems of the declared world's own file
	)
	pending := false // generation could not run
	if cat := opts.catalog(); cat != nil && s.World != "" && len(worldErrs) == 0 {
		c, err := cat(s.WorldRef())
		var located Errors
		switch {
		case errors.As(err, &located):
			declared = located
			errs = append(errs, pathError{path: "world", msg: fmt.Sprintf("the declared world %s has %d problem(s), listed at their place in it", s.WorldFile, len(located))})
			pending = len(s.Generate) > 0
		case err != nil:
			errs = append(errs, pathError{path: "world", msg: err.Error()})
			pending = len(s.Generate) > 0
		default:
			catalog = c
			errs = append(errs, s.validateCatalog(c)...)
		}
	} else if len(worldErrs) > 0 {
		pending = len(s.Generate) > 0
	} else if len(s.Generate) > 0 {
		if s.World != "" {
			errs = append(errs, pathError{path: "generate", msg: fmt.Sprintf("needs the tool catalog of world %q and the loader was given none (LoadOptions.NoCatalog)", s.World)})
		}
		pending = true
	}
	var generated []Variant
	if len(s.Generate) > 0 && catalog != nil {
		var adjusted []Adjusted
		generated, adjusted = GenerateChecked(&s, catalog)
		for _, a := range adjusted {
			opts.note(locate(file, root, []pathError{{path: "generate", msg: fmt.Sprintf("generated variant %s: %s", a.Variant, a.Msg)}})...)
		}
		names := map[string]bool{}
		for _, v := range s.Variants {
			names[v.Name] = true
		}
		for _, v := range generated {
			if names[v.Name] {
				errs = append(errs, pathError{path: "generate", msg: fmt.Sprintf("generated variant name %q is used twice (step ids must be unique)", v.Name)})
			}
			names[v.Name] = true
		}
		if len(generated) == 0 {
			errs = append(errs, pathError{path: "generate", msg: "no variant was generated: the listed kinds do not apply to the plan's tools"})
		}
		s.Variants = append(s.Variants, generated...)
	}
	errs = append(errs, s.validateMetamorphic(catalog, pending)...)
	if errs := append(append(decodeErrs, locate(file, root, errs)...), declared...); len(errs) > 0 {
		return nil, errs
	}
	s.File = file
	hashed := data
	if s.WorldSource != "" {
		// The declared world is part of what the scenario means.
		hashed = append(append(append([]byte(nil), data...), "\x00world\x00"...), s.WorldSource...)
	}
	s.Hash = contentHash(hashed)
	if len(generated) > 0 {
		g, err := json.Marshal(generated)
		if err != nil {
			return nil, fmt.Errorf("%s: generated variants: %w", file, err)
		}
		s.Hash = contentHash(append(append(append([]byte(nil), hashed...), 0), g...))
	}
	return &s, nil
}

// decodeStrict decodes one YAML document into v, rejecting unknown fields
// and duplicate keys, in time linear in the document (decode.go). The file
// is read by internal/strictyaml: its encoding checked, one document,
// aliases expanded and merge keys resolved, so every field is checked
// however it was written. It returns the node tree for locating later
// validation errors and the decode problems; v holds everything that
// decoded, so validation can still run and every problem of a file is
// reported in one pass. A nil tree means the document could not be parsed
// at all (the problems say why).
func decodeStrict(file string, data []byte, v any) (*yaml.Node, Errors) {
	root, errs := strictyaml.Parse(file, data)
	if root == nil {
		return nil, errs
	}
	if len(root.Content) == 0 {
		return nil, append(errs, FieldError{File: file, Line: 1, Col: 1, Msg: "empty document"})
	}
	// Keep a pristine copy for locating errors: decoding prunes the tree.
	located := cloneNode(root)
	return located, distinct(append(errs, decodeTyped(file, root, v)...))
}

// distinct drops repeats of one error: a value copied for an alias holds
// what the value it copies holds, and yaml.v3 names both alike.
func distinct(errs Errors) Errors {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[FieldError]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// cloneNode deep-copies a node tree.
func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = cloneNode(x)
		}
	}
	return &c
}

var (
	columnRe  = regexp.MustCompile(`^column (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	cannotRe  = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
)

// typeError turns one of yaml.v3's decode messages into a located,
// readable error.
func typeError(file string, root *yaml.Node, msg string) FieldError {
	fe := FieldError{File: file, Msg: msg}
	m := fileerr.LineRe.FindStringSubmatch(msg)
	if m == nil {
		return fe
	}
	fe.Line, _ = strconv.Atoi(m[1])
	fe.Col = 1
	rest := m[2]
	if c := columnRe.FindStringSubmatch(rest); c != nil {
		// From locatedError: a custom decoder that knows its node.
		fe.Col, _ = strconv.Atoi(c[1])
		fe.Msg = c[2]
		fe.Field = keyAt(root, fe.Line, fe.Col, "")
		return fe
	}
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

// locatedMsg formats a decode problem at node n the way typeError reads it
// back: "line L: column C: message".
func locatedMsg(n *yaml.Node, format string, args ...any) string {
	return fmt.Sprintf("line %d: column %d: %s", n.Line, n.Column, fmt.Sprintf(format, args...))
}

// locatedError is a decode error of a custom UnmarshalYAML. A *yaml.TypeError
// lets the decoder go on and report the other problems too.
func locatedError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{locatedMsg(n, format, args...)}}
}

// keyAt returns the mapping key whose value (or an item of whose list
// value) sits at line:col.
func keyAt(n *yaml.Node, line, col int, key string) string {
	if n == nil {
		return ""
	}
	if n.Line == line && n.Column == col && n.Kind != yaml.DocumentNode {
		return key
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := keyAt(n.Content[i+1], line, col, n.Content[i].Value); k != "" {
				return k
			}
		}
	default:
		for _, c := range n.Content {
			if k := keyAt(c, line, col, key); k != "" {
				return k
			}
		}
	}
	return ""
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
			fe.Msg += strictyaml.ViaNote(n)
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
