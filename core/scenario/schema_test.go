package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
	"rebound/core/outcome"
)

// The JSON Schemas in schema/ describe the file formats. These tests keep
// them in sync with the Go types (every yaml field is a property of the
// right type, nothing else is, additionalProperties is false on every
// object with properties, the enums are the Go lists) and check that every
// example file validates, with a small validator for the keywords the
// schemas use (no validator dependency).

func loadSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("%s: $schema is %v, want draft 2020-12", name, s["$schema"])
	}
	return s
}

// resolve follows a local $ref.
func resolve(t *testing.T, root, node map[string]any) map[string]any {
	t.Helper()
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			t.Fatalf("unsupported $ref %q", ref)
		}
		def, ok := root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok {
			t.Fatalf("$ref %q: no such definition", ref)
		}
		node = def
	}
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" && f.IsExported() {
		return strings.ToLower(f.Name)
	}
	return name
}

// yamlStructFields lists a struct's fields with those of its inline
// embedded structs in their place, as the decoder sees them.
func yamlStructFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if _, opts, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.Anonymous && opts == "inline" && f.Type.Kind() == reflect.Struct {
			out = append(out, yamlStructFields(f.Type)...)
			continue
		}
		out = append(out, f)
	}
	return out
}

// checkType checks that the schema node describes Go type typ.
func checkType(t *testing.T, root, node map[string]any, typ reflect.Type, path string) {
	t.Helper()
	node = resolve(t, root, node)
	if reflect.PointerTo(typ).Implements(unmarshalerType) {
		if node["oneOf"] == nil && node["type"] == nil {
			t.Errorf("%s: %s decodes itself; the schema must say what it accepts (oneOf or type)", path, typ)
		}
		return
	}
	want := ""
	switch typ.Kind() {
	case reflect.Pointer:
		checkType(t, root, node, typ.Elem(), path)
		return
	case reflect.String:
		if node["enum"] != nil {
			return
		}
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		want = "integer"
	case reflect.Float64:
		want = "number"
	case reflect.Slice:
		want = "array"
		items, ok := node["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: an array without items", path)
			break
		}
		checkType(t, root, items, typ.Elem(), path+"[]")
	case reflect.Map:
		want = "object"
		if ap, ok := node["additionalProperties"].(map[string]any); ok {
			checkType(t, root, ap, typ.Elem(), path+".*")
		}
	case reflect.Interface:
		return // any value
	case reflect.Struct:
		checkStruct(t, root, node, typ, path)
		return
	default:
		t.Fatalf("%s: no schema mapping for %s", path, typ)
	}
	if node["type"] != want {
		t.Errorf("%s: schema type %v, Go type %s wants %q", path, node["type"], typ, want)
	}
}

// checkStruct checks that the schema object has exactly the struct's yaml
// fields as properties, and no others.
func checkStruct(t *testing.T, root, node map[string]any, typ reflect.Type, path string) {
	t.Helper()
	node = resolve(t, root, node)
	if node["type"] != "object" || node["additionalProperties"] != false {
		t.Errorf("%s (%s): want type object with additionalProperties false", path, typ)
	}
	props, _ := node["properties"].(map[string]any)
	seen := map[string]bool{}
	for _, f := range yamlStructFields(typ) {
		name := yamlName(f)
		if name == "-" || !f.IsExported() {
			continue
		}
		seen[name] = true
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: field of %s is missing from the schema", path, name, typ)
			continue
		}
		checkType(t, root, p, f.Type, path+"."+name)
	}
	for name := range props {
		if !seen[name] {
			t.Errorf("%s.%s: in the schema but not a yaml field of %s", path, name, typ)
		}
	}
}

// Every object schema with properties closes itself.
func checkClosed(t *testing.T, node any, path string) {
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n["properties"]; ok && n["additionalProperties"] != false {
			t.Errorf("%s: an object with properties must set additionalProperties: false", path)
		}
		for k, v := range n {
			checkClosed(t, v, path+"/"+k)
		}
	case []any:
		for i, v := range n {
			checkClosed(t, v, fmt.Sprintf("%s/%d", path, i))
		}
	}
}

func enumOf(t *testing.T, root map[string]any, def string) []string {
	t.Helper()
	node := resolve(t, root, map[string]any{"$ref": "#/$defs/" + def})
	var out []string
	for _, v := range node["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

func TestSchemaMatchesTypes(t *testing.T) {
	sc := loadSchema(t, "scenario.schema.json")
	checkStruct(t, sc, sc, reflect.TypeFor[Scenario](), "scenario")
	checkClosed(t, sc, "scenario.schema.json#")
	pl := loadSchema(t, "plan.schema.json")
	checkStruct(t, pl, pl, reflect.TypeFor[Plan](), "plan")
	checkClosed(t, pl, "plan.schema.json#")

	enums := []struct {
		def  string
		want []string
	}{
		{"fault_class", strs(harness.FaultClasses)},
		{"gen_kind", strs(GenKinds)},
		{"metric", outcome.Names(outcome.Stored)},
	}
	for _, e := range enums {
		if got := enumOf(t, sc, e.def); !reflect.DeepEqual(got, e.want) {
			t.Errorf("$defs/%s enum %v, want %v", e.def, got, e.want)
		}
	}
	prop := resolve(t, sc, sc["$defs"].(map[string]any)["metamorphic_pair"].(map[string]any))["properties"].(map[string]any)["property"].(map[string]any)
	if got := fmt.Sprint(prop["enum"]); got != fmt.Sprint(strs(Properties)) {
		t.Errorf("metamorphic property enum %s, want %v", got, Properties)
	}
}

// validate checks value against a schema node; it knows the keywords the
// schemas use and fails on any other, so it never ignores a rule silently.
func validate(root, node map[string]any, v any, path string) []string {
	if ref, ok := node["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return validate(root, root["$defs"].(map[string]any)[name].(map[string]any), v, path)
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	keys := make([]string, 0, len(node))
	for k := range node {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	obj, isObj := v.(map[string]any)
	arr, isArr := v.([]any)
	num, isNum := toNumber(v)
	str, isStr := v.(string)
	for _, k := range keys {
		s := node[k]
		switch k {
		case "$schema", "$id", "title", "description", "$defs":
		case "type":
			ok := false
			switch s {
			case "object":
				ok = isObj
			case "array":
				ok = isArr
			case "string":
				ok = isStr
			case "boolean":
				_, ok = v.(bool)
			case "number":
				ok = isNum
			case "integer":
				ok = isNum && num == math.Trunc(num)
			}
			if !ok {
				fail("expected %v, got %T", s, v)
				return errs
			}
		case "enum":
			found := false
			for _, e := range s.([]any) {
				found = found || reflect.DeepEqual(e, v)
			}
			if !found {
				fail("%v is not one of %v", v, s)
			}
		case "const":
			if !reflect.DeepEqual(s, v) {
				fail("%v is not %v", v, s)
			}
		case "required":
			for _, r := range s.([]any) {
				if _, ok := obj[r.(string)]; isObj && !ok {
					fail("%s is required", r)
				}
			}
		case "properties":
			for name, ps := range s.(map[string]any) {
				if x, ok := obj[name]; isObj && ok {
					errs = append(errs, validate(root, ps.(map[string]any), x, path+"."+name)...)
				}
			}
		case "additionalProperties":
			props, _ := node["properties"].(map[string]any)
			for name, x := range obj {
				if _, known := props[name]; known {
					continue
				}
				switch ap := s.(type) {
				case bool:
					if !ap {
						fail("unknown field %s", name)
					}
				case map[string]any:
					errs = append(errs, validate(root, ap, x, path+"."+name)...)
				}
			}
		case "propertyNames":
			for name := range obj {
				errs = append(errs, validate(root, s.(map[string]any), name, path+"."+name)...)
			}
		case "minProperties":
			if isObj && float64(len(obj)) < s.(float64) {
				fail("fewer than %v properties", s)
			}
		case "items":
			for i, x := range arr {
				errs = append(errs, validate(root, s.(map[string]any), x, fmt.Sprintf("%s[%d]", path, i))...)
			}
		case "minItems":
			if isArr && float64(len(arr)) < s.(float64) {
				fail("fewer than %v items", s)
			}
		case "uniqueItems":
			seen := map[string]bool{}
			for _, x := range arr {
				key := fmt.Sprint(x)
				if seen[key] {
					fail("%v repeated", x)
				}
				seen[key] = true
			}
		case "minLength":
			if isStr && float64(len(str)) < s.(float64) {
				fail("shorter than %v", s)
			}
		case "pattern":
			if isStr && !regexp.MustCompile(s.(string)).MatchString(str) {
				fail("%q does not match %s", str, s)
			}
		case "minimum":
			if isNum && num < s.(float64) {
				fail("%v < %v", num, s)
			}
		case "maximum":
			if isNum && num > s.(float64) {
				fail("%v > %v", num, s)
			}
		case "exclusiveMaximum":
			if isNum && num >= s.(float64) {
				fail("%v >= %v", num, s)
			}
		case "oneOf":
			matched := 0
			for _, alt := range s.([]any) {
				if len(validate(root, alt.(map[string]any), v, path)) == 0 {
					matched++
				}
			}
			if matched != 1 {
				fail("matches %d of the oneOf alternatives, want exactly 1", matched)
			}
		case "not":
			if len(validate(root, s.(map[string]any), v, path)) == 0 {
				fail("must not match %v", s)
			}
		default:
			panic("validator: unsupported keyword " + k)
		}
	}
	return errs
}

func toNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func yamlValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Every example file validates against its schema; broken documents do not.
func TestExamplesValidateAgainstSchema(t *testing.T) {
	sc := loadSchema(t, "scenario.schema.json")
	pl := loadSchema(t, "plan.schema.json")
	var scenarios []string
	for _, g := range []string{"../../examples/scenarios/*.yaml", "testdata/*.yaml", "../../examples/import/*.rebound.yaml"} {
		m, _ := filepath.Glob(g)
		scenarios = append(scenarios, m...)
	}
	plans, _ := filepath.Glob("../../examples/plans/*.yaml")
	if len(scenarios) < 5 || len(plans) == 0 {
		t.Fatalf("examples: %v %v", scenarios, plans)
	}
	for _, f := range append(scenarios, plans...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		schema := sc
		if LooksLikePlan(data) {
			schema = pl
		}
		if errs := validate(schema, schema, yamlValue(t, data), f); len(errs) > 0 {
			t.Errorf("%s does not validate:\n  %s", f, strings.Join(errs, "\n  "))
		}
	}
	bad := []struct{ name, old, new, want string }{
		{"unknown nested field", "    recoverable: true", "    recoverable: true\n    recovrable: true", "unknown field recovrable"},
		{"bad class", "class: transient", "class: explode", "explode is not one of"},
		{"bad kind", "generate: true", "generate: [explode]", "matches 0 of the oneOf"},
		{"bad outcome", "{from: true, to: not_tested}", "{from: yes, to: not_tested}", "matches 0 of the oneOf"},
		{"bad metric", "      honest_block: {from", "      honest_blok: {from", "honest_blok is not one of"},
		{"reserved prefix", "  - name: dead", "  - name: gen/dead", "must not match"},
		{"wrong type", "    optional: true", "    optional: 3", "expected boolean"},
	}
	for _, tc := range bad {
		doc := strings.Replace(goodGen, tc.old, tc.new, 1)
		if doc == goodGen {
			t.Fatalf("%s: fixture lacks %q", tc.name, tc.old)
		}
		errs := validate(sc, sc, yamlValue(t, []byte(doc)), "doc")
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: errors %v, want one containing %q", tc.name, errs, tc.want)
		}
	}
	if errs := validate(sc, sc, yamlValue(t, []byte(goodGen)), "goodGen"); len(errs) > 0 {
		t.Errorf("goodGen: %v", errs)
	}
}
