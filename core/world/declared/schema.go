package declared

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The state schema. A declared world's state is one JSON document whose
// shape the file declares: objects with named fields, maps keyed by id,
// lists, and scalars. Like a Go struct, every declared field of an object
// has a value (its default, or its type's zero value) unless it is
// omit_empty and empty; an object's undeclared fields are errors.

type kind uint8

const (
	kAny kind = iota
	kString
	kInteger
	kNumber
	kBoolean
	kObject
	kMap
	kList
)

var kindNames = map[string]kind{
	"any": kAny, "string": kString, "integer": kInteger, "number": kNumber,
	"boolean": kBoolean, "object": kObject, "map": kMap, "list": kList,
}

func (k kind) String() string {
	for name, v := range kindNames {
		if v == k {
			return name
		}
	}
	return "?"
}

// typ is a type of the state schema or of a tool argument.
type typ struct {
	kind   kind
	fields []*field // object, in declared order
	byName map[string]*field
	elem   *typ     // map values, list items
	enum   []string // string
}

// field is one declared field of an object.
type field struct {
	name      string
	t         *typ
	def       any // the default, normalized; used when hasDef
	hasDef    bool
	required  bool
	omitEmpty bool
}

var anyType = &typ{kind: kAny}

func (t *typ) fieldNames() string {
	names := make([]string, len(t.fields))
	for i, f := range t.fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// describe names a type for messages.
func (t *typ) describe() string {
	switch t.kind {
	case kMap:
		return "a map"
	case kList:
		return "a list"
	case kObject:
		return "an object"
	case kInteger:
		return "an integer"
	case kAny:
		return "any value"
	}
	return "a " + t.kind.String()
}

// zero is the value a declared field without a default holds.
func (t *typ) zero() any {
	switch t.kind {
	case kString:
		return ""
	case kInteger:
		return int64(0)
	case kNumber:
		return float64(0)
	case kBoolean:
		return false
	case kObject:
		out := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			if v, ok := f.initial(); ok {
				out[f.name] = v
			}
		}
		return out
	case kMap:
		return map[string]any{}
	case kList:
		return []any{}
	}
	return nil
}

// initial is the value a field holds when nothing set it: a copy of its
// default, or its type's zero (none for a field of any type).
func (f *field) initial() (any, bool) {
	if f.hasDef {
		return clone(f.def), true
	}
	if f.t.kind == kAny {
		return nil, false
	}
	return f.t.zero(), true
}

// valueError is a value that does not fit the schema, at a path.
type valueError struct {
	at  string
	msg string
}

func (e *valueError) Error() string {
	if e.at == "" {
		return e.msg
	}
	return e.at + ": " + e.msg
}

func join(at, seg string) string {
	if at == "" {
		return seg
	}
	return at + "." + seg
}

// normalize checks v against t and returns a fresh copy of it in the
// state's representation: integers int64, numbers float64, objects with
// every declared field materialized. at names v's place for errors.
func (t *typ) normalize(v any, at string) (any, error) {
	switch t.kind {
	case kAny:
		return normalizeAny(v, at)
	case kString:
		s, ok := v.(string)
		if !ok {
			return nil, &valueError{at, "expected a string, got " + describeValue(v)}
		}
		if len(t.enum) > 0 && !slices.Contains(t.enum, s) {
			return nil, &valueError{at, fmt.Sprintf("%q is not one of %s", s, strings.Join(t.enum, ", "))}
		}
		return s, nil
	case kInteger:
		if i, ok := asInteger(v); ok {
			return i, nil
		}
		return nil, &valueError{at, "expected an integer, got " + describeValue(v)}
	case kNumber:
		if f, ok := asNumber(v); ok {
			return f, nil
		}
		return nil, &valueError{at, "expected a number, got " + describeValue(v)}
	case kBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, &valueError{at, "expected true or false, got " + describeValue(v)}
	case kObject:
		return t.normalizeObject(v, at)
	case kMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, &valueError{at, "expected a map, got " + describeValue(v)}
		}
		out := make(map[string]any, len(m))
		for _, k := range sortedKeys(m) {
			n, err := t.elem.normalize(m[k], join(at, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case kList:
		l, ok := v.([]any)
		if !ok {
			return nil, &valueError{at, "expected a list, got " + describeValue(v)}
		}
		out := make([]any, len(l))
		for i, x := range l {
			n, err := t.elem.normalize(x, join(at, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, &valueError{at, "unknown type"}
}

// normalizeObject checks an object: no undeclared field, every required
// one given, every other materialized with its default.
func (t *typ) normalizeObject(v any, at string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &valueError{at, "expected an object (fields: " + t.fieldNames() + "), got " + describeValue(v)}
	}
	for _, k := range sortedKeys(m) {
		if _, ok := t.byName[k]; !ok {
			return nil, &valueError{join(at, k), "unknown field (fields: " + t.fieldNames() + ")"}
		}
	}
	out := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		x, given := m[f.name]
		if !given || x == nil {
			if f.required {
				return nil, &valueError{join(at, f.name), "required"}
			}
			if iv, ok := f.initial(); ok {
				out[f.name] = iv
			}
			continue
		}
		n, err := f.t.normalize(x, join(at, f.name))
		if err != nil {
			return nil, err
		}
		out[f.name] = n
	}
	return out, nil
}

// normalizeAny copies a free-form value into the state's representation.
func normalizeAny(v any, at string) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return float64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, &valueError{at, "not a number: " + x.String()}
		}
		return f, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalizeAny(e, join(at, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalizeAny(e, join(at, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, &valueError{at, fmt.Sprintf("unsupported value %T (keys of a mapping must be strings)", v)}
}

func asInteger(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}

func asNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("%t", x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	if f, ok := asNumber(v); ok {
		return "the number " + strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprintf("%T", v)
}

// empty reports whether a value is its type's empty value (what
// omit_empty leaves out, as Go's omitempty does).
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// clone deep-copies a state value.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// equal compares two values as JSON would: numbers by value, whatever
// their Go type.
func equal(a, b any) bool {
	if fa, ok := asNumber(a); ok {
		fb, ok := asNumber(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !equal(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// text is a value as it reads inside a string template.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// stateJSON copies a state value for State(): numbers as float64 (what a
// JSON round trip gives, as the built-in worlds' states read), omit_empty
// fields left out when empty.
func stateJSON(t *typ, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			et := anyType
			if t != nil {
				switch t.kind {
				case kObject:
					if f, ok := t.byName[k]; ok {
						if f.omitEmpty && empty(e) {
							continue
						}
						et = f.t
					}
				case kMap:
					et = t.elem
				}
			}
			out[k] = stateJSON(et, e)
		}
		return out
	case []any:
		et := anyType
		if t != nil && t.kind == kList {
			et = t.elem
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stateJSON(et, e)
		}
		return out
	case int64:
		return float64(x)
	}
	return v
}
