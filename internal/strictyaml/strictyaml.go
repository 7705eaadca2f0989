// Package strictyaml reads a rebound input file (a scenario, a plan, a
// recovery test to import, a gate's thresholds) as one YAML document that
// says one thing, and locates every problem at file:line:column. Readers
// then walk a plain tree: every field is checked the same way however the
// file spelled it.
//
//   - Encoding (Text): UTF-8 with or without a byte-order mark, or UTF-16
//     with one, converted to UTF-8; anything else is refused, naming the
//     encoding found or the line and column of the offending byte.
//   - One document: a second one (after ---) is refused; a trailing empty
//     one (a --- with nothing after it) is not a document worth refusing.
//   - Aliases are expanded here, into copies that keep the positions of
//     the value they copy (so a problem inside one is named at the line
//     where it is written) and are marked with the alias they were copied
//     for (Via), so a reader can say where it was used. Expansion is
//     bounded: an alias bomb ("billion laughs") is refused when its copies
//     pass a budget, before they take memory or time, and so is an alias
//     inside the value it names.
//   - Merge keys (<<) are resolved here, as the YAML merge-key type says:
//     a key written in the mapping overrides a merged one (that is what a
//     merge is for), and among merged mappings the first that has a key
//     wins. The value of << must be a mapping or a list of mappings.
//   - No key twice in one mapping, as written: the later one is reported
//     and dropped, so the rest still decodes and every other problem of the
//     file is reported in the same pass.
//   - Nesting is bounded (MaxDepth), after expansion too.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"rebound/internal/fileerr"
)

// MaxDepth is how deep values may nest (the root is at depth 1). No rebound
// file needs more than a few dozen levels; the bound keeps every recursive
// reader, encoder and store of a value far from its own limits.
const MaxDepth = 1000

// minAliasBudget is how many nodes aliases may add to any document; a
// larger document may add as many as it has (so expansion at most doubles
// what the size limit of its file already allows).
const minAliasBudget = 100_000

// Parse reads data (the contents of file) as one YAML document and returns
// its document node, aliases expanded and merge keys resolved. A document
// with no content is a document node with no Content. Problems that leave
// a usable tree (a key written twice, a bad merge value) are returned with
// it; a nil node means the file could not be read as YAML at all.
func Parse(file string, data []byte) (*yaml.Node, fileerr.Errors) {
	text, fe := Text(file, data)
	if fe != nil {
		return nil, fileerr.Errors{*fe}
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1}, nil
		}
		return nil, fileerr.Errors{syntaxError(file, text, err)}
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fileerr.Errors{syntaxError(file, text, err)}
		}
		if len(next.Content) > 0 && !emptyValue(next.Content[0]) {
			return nil, fileerr.Errors{{File: file, Line: next.Line, Col: next.Column,
				Msg: "a second YAML document starts here (after ---): a rebound file holds one document; split the file, or remove the ---"}}
		}
	}
	if len(doc.Content) > 0 && emptyValue(doc.Content[0]) && doc.Content[0].Anchor == "" {
		doc.Content = nil // only comments, or a lone ---
	}
	budget := minAliasBudget
	if n := count(&doc); n > budget {
		budget = n
	}
	e := &expander{file: file, budget: budget, limit: budget, done: map[*yaml.Node]bool{}}
	root := e.process(&doc, 0)
	if e.fatal {
		return nil, e.errs
	}
	return root, e.errs
}

// Via returns the alias a node was copied for when aliases were expanded
// (the copy keeps it in its Alias field; its Kind stays that of the value,
// so decoders never follow it), or nil for a node written where it is.
func Via(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind == yaml.AliasNode || n.Alias == nil || n.Alias.Kind != yaml.AliasNode {
		return nil
	}
	return n.Alias
}

// ViaNote is what an error at n adds to say it was reached through an
// alias ("" for a node written where it is).
func ViaNote(n *yaml.Node) string {
	a := Via(n)
	if a == nil {
		return ""
	}
	return fmt.Sprintf(" (reached through the alias *%s at line %d, column %d)", a.Value, a.Line, a.Column)
}

// emptyValue is the null of a document or value with nothing written.
func emptyValue(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.Tag == "!!null" && n.Style == 0
}

func count(n *yaml.Node) int {
	c := 1
	for _, x := range n.Content {
		c += count(x)
	}
	return c
}

type expander struct {
	file          string
	errs          fileerr.Errors
	budget, limit int                 // nodes aliases may still add; at most
	done          map[*yaml.Node]bool // anchored nodes fully processed
	fatal         bool
}

func (e *expander) errorf(n *yaml.Node, field, format string, args ...any) {
	e.errs = append(e.errs, fileerr.FieldError{File: e.file, Line: n.Line, Col: n.Column, Field: field, Msg: fmt.Sprintf(format, args...) + ViaNote(n)})
}

func (e *expander) fail(n *yaml.Node, format string, args ...any) {
	e.errorf(n, "", format, args...)
	e.fatal = true
}

// process expands the aliases under n (in document order, so the value an
// alias names is either complete, or still open above it: the alias is
// inside it), then checks and resolves n's keys. It returns what stands in
// n's place: n, or a copy for an alias.
func (e *expander) process(n *yaml.Node, depth int) *yaml.Node {
	if depth > MaxDepth {
		e.fail(n, "values nest deeper than %d levels", MaxDepth)
		return n
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || !e.done[n.Alias] {
			e.fail(n, "the alias *%s is inside the value &%s it names: a value cannot contain itself", n.Value, n.Value)
			return n
		}
		return e.copy(n.Alias, n, depth)
	}
	for i, c := range n.Content {
		n.Content[i] = e.process(c, depth+1)
		if e.fatal {
			return n
		}
	}
	if n.Kind == yaml.MappingNode {
		e.uniqueKeys(n)
		e.merge(n)
	}
	if n.Anchor != "" {
		e.done[n] = true
	}
	return n
}

// copy copies t (processed: no aliases left in it) for the alias via,
// within the budget.
func (e *expander) copy(t, via *yaml.Node, depth int) *yaml.Node {
	if depth > MaxDepth {
		e.fail(via, "through the alias *%s, values nest deeper than %d levels", via.Value, MaxDepth)
		return via
	}
	if e.budget--; e.budget < 0 {
		e.fail(via, "aliases expand this document by more than %d nodes (an alias bomb?): write the repeated values out, or alias fewer or smaller ones", e.limit)
		return via
	}
	c := *t
	c.Anchor = ""
	c.Alias = via
	if len(t.Content) > 0 {
		c.Content = make([]*yaml.Node, len(t.Content))
		for i, x := range t.Content {
			c.Content[i] = e.copy(x, via, depth+1)
			if e.fatal {
				break
			}
		}
	}
	return &c
}

// uniqueKeys reports and drops every key written a second time in one
// mapping (a merge key << among them: list the mappings to merge instead).
func (e *expander) uniqueKeys(n *yaml.Node) {
	var seen map[string]int
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode {
			if seen == nil {
				seen = make(map[string]int, len(n.Content)/2)
			}
			if line, dup := seen[k.Value]; dup {
				if isMerge(k) {
					e.errorf(k, k.Value, "mapping key %q already defined at line %d (to merge several mappings, list them: <<: [*a, *b])", k.Value, line)
				} else {
					e.errorf(k, k.Value, "mapping key %q already defined at line %d", k.Value, line)
				}
				continue
			}
			seen[k.Value] = k.Line
		}
		kept = append(kept, k, v)
	}
	n.Content = kept
}

// isMerge is yaml.v3's test for a merge key: a plain << (or one tagged
// !!merge); a quoted "<<" is an ordinary key.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// merge resolves n's merge key, if it has one: the merged keys take its
// place, except those n writes itself, and among the merged mappings the
// first that has a key gives it. The merged mappings are themselves
// resolved (they were processed first) and their nodes move into n.
func (e *expander) merge(n *yaml.Node) {
	at := -1
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMerge(n.Content[i]) {
			at = i
			break
		}
	}
	if at < 0 {
		return
	}
	v := n.Content[at+1]
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		for _, s := range v.Content {
			if s.Kind != yaml.MappingNode {
				e.errorf(s, "<<", "a merge key (<<) merges mappings; this item of its list is %s", describe(s))
				continue
			}
			sources = append(sources, s)
		}
	default:
		e.errorf(v, "<<", "a merge key (<<) takes a mapping, an alias of one, or a list of them; got %s", describe(v))
	}
	have := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; i != at && k.Kind == yaml.ScalarNode {
			have[k.Value] = true
		}
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	out = append(out, n.Content[:at]...)
	for _, s := range sources {
		for j := 0; j+1 < len(s.Content); j += 2 {
			k := s.Content[j]
			if k.Kind == yaml.ScalarNode {
				if have[k.Value] {
					continue
				}
				have[k.Value] = true
			}
			out = append(out, k, s.Content[j+1])
		}
	}
	n.Content = append(out, n.Content[at+2:]...)
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "an alias"
}
