package scenario

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/internal/fileerr"
	"rebound/internal/strictyaml"
)

// Decoding in linear time.
//
// yaml.v3 checks every mapping for duplicate keys by comparing each key with
// every later one: decoding a mapping of n keys costs n² comparisons, so a
// 50,000-key `initial:` took half a minute and a million keys ran for hours
// (issue 10). There is no option to turn that check off. So the loader
// walks the node tree itself, guided by the Go type it decodes into:
//
//   - internal/strictyaml has already expanded aliases, resolved merge keys
//     and dropped (reporting) every key written twice, with sets (linear);
//     the walker sees a plain tree, so what it checks holds however the
//     file was written (issue 25: a document with an alias used to go to
//     yaml.v3 alone, which does not refuse unknown fields there);
//   - struct mappings are checked for unknown fields (what KnownFields did),
//     and the offending keys are dropped so the rest still decodes;
//   - free-form values (map[string]any and any: the world's initial state,
//     step arguments, claim values) are converted to Go values by the
//     walker and removed from the tree, then put back into the decoded
//     struct ("grafted"). Scalars are decoded by yaml.v3 itself, one at a
//     time, so they mean exactly what they meant before.
//
// What remains for yaml.v3 is the typed skeleton: small mappings of known
// fields, whose quadratic check is bounded by the number of fields.

type graft struct {
	path  []any // field names (string) and list indexes (int) from the root
	value any
}

type walker struct {
	file   string
	errs   Errors
	grafts []graft
}

// decodeTyped decodes root (a document node from strictyaml.Parse: no
// aliases, no merge keys, no key twice) into v in time linear in the size
// of the document. Decode problems (unknown fields, wrong types) are
// returned together; v holds everything that decoded.
func decodeTyped(file string, root *yaml.Node, v any) Errors {
	w := &walker{file: file}
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	w.prune(doc, reflect.TypeOf(v).Elem(), nil)
	errs := w.yamlDecode(root, v)
	for _, g := range w.grafts {
		setPath(reflect.ValueOf(v).Elem(), g.path, g.value)
	}
	return append(w.errs, errs...)
}

// yamlDecode runs yaml.v3 on the (pruned) tree and locates its messages.
func (w *walker) yamlDecode(root *yaml.Node, v any) Errors {
	err := root.Decode(v)
	if err == nil {
		return nil
	}
	if te, ok := err.(*yaml.TypeError); ok {
		out := make(Errors, 0, len(te.Errors))
		for _, msg := range te.Errors {
			out = append(out, typeError(w.file, root, msg))
		}
		return out
	}
	return Errors{fileerr.YAMLSyntax(w.file, err)}
}

// unknownFieldMsg is the message of a key no field of its struct has.
const unknownFieldMsg = "unknown field (check the spelling; see the schema in schema/)"

var yamlUnmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func (w *walker) errorf(n *yaml.Node, field, format string, args ...any) {
	w.errs = append(w.errs, FieldError{File: w.file, Line: n.Line, Col: n.Column, Field: field, Msg: fmt.Sprintf(format, args...) + strictyaml.ViaNote(n)})
}

// prune walks n as a value of type t (see the package comment above).
func (w *walker) prune(n *yaml.Node, t reflect.Type, path []any) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshalerType) || t.Implements(yamlUnmarshalerType) {
		return // decodes itself (small values: counts, flags, kinds)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // yaml.v3 reports the type error
		}
		fields := yamlFields(t)
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				w.errorf(k, k.Value, "%s", unknownFieldMsg)
				continue
			}
			w.prune(val, f.Type, append(path[:len(path):len(path)], f.Name))
			kept = append(kept, k, val)
		}
		n.Content = kept
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			w.prune(c, t.Elem(), append(path[:len(path):len(path)], i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface && t.Elem().NumMethod() == 0 {
			w.grafts = append(w.grafts, graft{path: path, value: w.convertMap(n, true)})
			n.Content = nil
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.prune(n.Content[i+1], t.Elem(), append(path[:len(path):len(path)], mapKey(n.Content[i].Value)))
		}
	case reflect.Interface:
		if t.NumMethod() != 0 || (n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode) {
			return
		}
		w.grafts = append(w.grafts, graft{path: path, value: w.convert(n)})
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: n.Line, Column: n.Column}
	}
}

// mapKey marks a path step through a map (as opposed to a struct field).
type mapKey string

// convert turns a free-form subtree into the Go value yaml.v3 would give
// an `any`: map[string]any, []any and scalars (decoded by yaml.v3 itself).
func (w *walker) convert(n *yaml.Node) any {
	switch n.Kind {
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			w.errorf(n, "", "%v", err)
			return nil
		}
		return v
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, w.convert(c))
		}
		return out
	case yaml.MappingNode:
		return w.convertMap(n, false)
	}
	return nil
}

// convertMap converts a mapping. Keys of a typed map[string]any (typed) are
// strings whatever they look like, as yaml.v3 decodes them; inside an any,
// yaml.v3 would build a map[any]any for a non-string key, which no JSON
// encoder (nor a stored plan) accepts, so that is reported here, as is a
// key that is a list or a mapping (a "complex key"), which neither can
// hold.
func (w *walker) convertMap(n *yaml.Node, typed bool) map[string]any {
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			w.errorf(k, "", "a mapping key must be a string, not %s", map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[k.Kind])
			continue
		}
		if !typed && k.ShortTag() != "!!str" {
			w.errorf(k, k.Value, "mapping key %s is not a string (%s); quote it", k.Value, strings.TrimPrefix(k.ShortTag(), "!!"))
			continue
		}
		out[k.Value] = w.convert(n.Content[i+1])
	}
	return out
}

// yamlFields maps a struct's YAML keys to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := strings.ToLower(f.Name)
		if tag, ok := f.Tag.Lookup("yaml"); ok {
			tn, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && f.Type.Kind() == reflect.Struct && opts == "inline" {
				// An embedded struct's keys are the outer struct's
				// (yaml.v3's inline); setPath reaches them by their
				// promoted Go names.
				maps.Copy(out, yamlFields(f.Type))
				continue
			}
			if tn == "-" {
				continue
			}
			if tn != "" {
				name = tn
			}
		}
		out[name] = f
	}
	return out
}

// setPath stores value at path inside v (a struct), descending through
// struct fields (by Go name), list indexes and map keys.
func setPath(v reflect.Value, path []any, value any) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if len(path) == 0 {
		if value == nil {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		val := reflect.ValueOf(value)
		if val.Type().AssignableTo(v.Type()) {
			v.Set(val)
		} else if val.Type().ConvertibleTo(v.Type()) {
			v.Set(val.Convert(v.Type()))
		}
		return
	}
	switch step := path[0].(type) {
	case string:
		if v.Kind() == reflect.Struct {
			setPath(v.FieldByName(step), path[1:], value)
		}
	case int:
		if (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && step < v.Len() {
			setPath(v.Index(step), path[1:], value)
		}
	case mapKey:
		if v.Kind() != reflect.Map || v.IsNil() {
			return
		}
		k := reflect.ValueOf(string(step)).Convert(v.Type().Key())
		elem := v.MapIndex(k)
		if !elem.IsValid() {
			return
		}
		cp := reflect.New(elem.Type()).Elem()
		cp.Set(elem)
		setPath(cp, path[1:], value)
		v.SetMapIndex(k, cp)
	}
}
