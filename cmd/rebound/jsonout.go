package main

import (
	"encoding/json"
	"io"
	"reflect"
)

// Every command's --output json goes through writeJSON (a test holds every
// command to it), so machines read one shape everywhere:
//
//   - keys are snake_case (the types' json tags; TestJSONOutputOfEveryCommand
//     checks the output);
//   - a list with nothing in it is [], never null, and so is an empty map
//     ({}): nil slices and maps are written empty, however deep. A null is
//     a value that is not there (a rate NOT TESTED, an interval that
//     cannot be estimated), never an empty list.

// writeJSON writes v as one JSON document and a newline, indented when
// indent is set.
func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(emptyLists(reflect.ValueOf(v)).Interface())
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// emptyLists returns v with every nil slice and map it holds (through
// pointers, structs, slices, maps and interfaces) replaced by an empty one.
// v itself is not modified: what changes is copied. Values that marshal
// themselves (time.Time, json.RawMessage, ...) are left as they are.
func emptyLists(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	t := v.Type()
	if t.Implements(marshalerType) && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		return v
	}
	switch t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := emptyLists(v.Elem())
		out := reflect.New(t).Elem()
		out.Set(inner)
		return out
	case reflect.Pointer:
		if v.IsNil() || t.Implements(marshalerType) {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(emptyLists(v.Elem()))
		return p
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte is base64, a string
			return v
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(emptyLists(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(emptyLists(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(t, v.Len())
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(it.Key(), emptyLists(it.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v) // unexported fields too
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				out.Field(i).Set(emptyLists(v.Field(i)))
			}
		}
		return out
	}
	return v
}
