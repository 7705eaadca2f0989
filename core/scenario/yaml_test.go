package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"gopkg.in/yaml.v3"
)

// aliased is good written with an anchor, an alias and merge keys.
const aliased = `name: s
world: payments
goal: charge it
tools: [payments.charge]
permissions: [payments.write]
plan:
  - &charge
    id: charge
    tool: payments.charge
    args: {order_id: A}
    sets: {charged: true}
  - <<: *charge
    id: again
    optional: true
claim:
  fields:
    - {name: charged, type: boolean, truth: orders.A.captured}
variants:
  - &v
    name: v
    recoverable: true
    faults:
      - &fault {tool: payments.charge, class: transient, attempts: [1]}
  - <<: *v
    name: w
    faults: [*fault, {<<: *fault, attempts: [2]}]
`

// Issue 25: a document with an alias accepted unknown fields (yaml.v3
// alone decoded it, without KnownFields). Every field is now checked
// however it was written: beside a merge key, inside a merged mapping,
// inside an aliased value used in several places (named at the line where
// it is written, and where the alias used it), at the top level.
func TestAliasedDocumentsAreChecked(t *testing.T) {
	if _, err := ParseScenarioWith("a.yaml", []byte(aliased), noCatalog); err != nil {
		t.Fatalf("the aliased scenario does not load: %v", err)
	}
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"misspelled beside a merge key", "    optional: true\n", "    optional: true\n    needs_curent: true\n",
			[]string{"a.yaml:15:5: needs_curent: unknown field (check the spelling; see the schema in schema/)"}},
		{"misspelled in an aliased value", "    sets: {charged: true}\n", "    sets: {charged: true}\n    needs_curent: true\n",
			[]string{"a.yaml:12:5: needs_curent: unknown field (check the spelling; see the schema in schema/)\n",
				"a.yaml:12:5: needs_curent: unknown field (check the spelling; see the schema in schema/) (reached through the alias *charge at line 13, column 9)"}},
		{"stray top-level key", "goal: charge it\n", "goal: charge it\nextra: 1\n",
			[]string{"a.yaml:4:1: extra: unknown field"}},
		{"misspelled in an inline merge", "{name: charged, type: boolean, truth", "{<<: {name: charged, type: boolean, tpye: x}, truth",
			[]string{"a.yaml:17:43: tpye: unknown field"}},
		{"misspelled in a value aliased three times", "class: transient, attempts", "class: transient, atempts",
			[]string{"a.yaml:23:58: atempts: unknown field (check the spelling; see the schema in schema/)\n",
				"a.yaml:23:58: atempts: unknown field (check the spelling; see the schema in schema/) (reached through the alias *fault at line 26, column 14)",
				"a.yaml:23:58: atempts: unknown field (check the spelling; see the schema in schema/) (reached through the alias *fault at line 26, column 27)"}},
		{"invalid value through an alias", "class: transient", "class: explode",
			[]string{`a.yaml:23:40: variants[0].faults[0].class: unknown fault class "explode"` + "\n",
				`a.yaml:23:40: variants[1].faults[0].class: unknown fault class "explode" (reached through the alias *fault at line 26, column 14)`,
				`a.yaml:23:40: variants[1].faults[1].class: unknown fault class "explode" (reached through the alias *fault at line 26, column 27)`}},
		{"wrong type through an alias, once", "    recoverable: true\n", "    recoverable: maybe\n",
			[]string{`a.yaml:21:18: recoverable: expected true or false, got str "maybe"`}},
		{"key twice beside a merge key", "    id: again\n", "    id: again\n    id: twice\n",
			[]string{`a.yaml:14:5: id: mapping key "id" already defined at line 13`}},
		{"merge of a list", "  - <<: *charge\n", "  - <<: [a]\n",
			[]string{`a.yaml:12:10: <<: a merge key (<<) merges mappings; this item of its list is the scalar "a"`}},
		{"alias inside itself", "    faults: [*fault, {<<: *fault, attempts: [2]}]\n", "    faults: [*fault, {<<: *fault, attempts: [2]}]\n    description: &d [*d]\n",
			[]string{"a.yaml:27:22: the alias *d is inside the value &d it names"}},
		{"second document", "    faults: [*fault, {<<: *fault, attempts: [2]}]\n", "    faults: [*fault, {<<: *fault, attempts: [2]}]\n---\nname: t\n",
			[]string{"a.yaml:27:1: a second YAML document starts here"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(aliased, tc.old) {
				t.Fatalf("%q not in the scenario", tc.old)
			}
			_, err := ParseScenarioWith("a.yaml", []byte(strings.Replace(aliased, tc.old, tc.new, 1)), noCatalog)
			if err == nil {
				t.Fatal("accepted")
			}
			got := err.Error() + "\n"
			for _, want := range tc.want {
				if n := strings.Count(got, want); n != 1 {
					t.Errorf("%d times %q in:\n%s", n, want, got)
				}
			}
		})
	}
}

// An aliased document decodes to what yaml.v3's strict decoder (which
// expands aliases and merge keys itself, and checks fields through them)
// gives; and one it refuses is refused.
func TestAliasedDecodeMatchesYAMLStrict(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		ok        bool
	}{
		{"aliased scenario", aliased, true},
		{"aliased free-form values", good + "initial:\n  orders:\n    A: &o {amount_cents: 5, tags: [x]}\n    B: {<<: *o, amount_cents: 6}\n    C: *o\n", true},
		{"merged list of mappings", strings.Replace(aliased, "  - <<: *v\n", "  - <<: [*v, {description: d, weight: 2}]\n", 1), true},
		{"unknown field in a merged mapping", strings.Replace(aliased, "  - <<: *charge\n", "  - <<: {bogus: 1}\n    tool: payments.charge\n", 1), false},
		{"unknown field through an alias", strings.Replace(aliased, "    sets: {charged: true}\n", "    sets: {charged: true}\n    bogus: 1\n", 1), false},
		{"key twice", strings.Replace(aliased, "    id: again\n", "    id: again\n    id: twice\n", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got Scenario
			dec := yaml.NewDecoder(strings.NewReader(tc.src))
			dec.KnownFields(true)
			yerr := dec.Decode(&want)
			_, errs := decodeStrict("f.yaml", []byte(tc.src), &got)
			if (yerr == nil) != tc.ok || (len(errs) == 0) != tc.ok {
				t.Fatalf("yaml.v3: %v; rebound: %v; want ok %v", yerr, errs, tc.ok)
			}
			if tc.ok && !reflect.DeepEqual(want, got) {
				t.Errorf("decoded\n %+v\nyaml.v3\n %+v", got, want)
			}
		})
	}
}

func utf16Text(s string, bigEndian bool) []byte {
	out := []byte{0xFF, 0xFE}
	if bigEndian {
		out = []byte{0xFE, 0xFF}
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

// encodings are the forms every reader accepts, each read as the UTF-8
// text it holds.
var encodings = map[string]func(string) []byte{
	"UTF-8":          func(s string) []byte { return []byte(s) },
	"UTF-8 with BOM": func(s string) []byte { return append([]byte{0xEF, 0xBB, 0xBF}, s...) },
	"UTF-16LE":       func(s string) []byte { return utf16Text(s, false) },
	"UTF-16BE":       func(s string) []byte { return utf16Text(s, true) },
}

// A scenario, a plan and a recovery test to import load alike in every
// accepted encoding; a plan in UTF-16 loads its scenarios whatever theirs.
// The content hash stays that of the bytes (no file changes hash).
func TestEncodingsLoadAlike(t *testing.T) {
	want, err := ParseScenarioWith("s.yaml", []byte(good), noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	plan := "name: p\nscenarios: [s.yaml]\narms:\n  - {name: a, agent: careful}\nseeds: 3\n"
	wantPlan, err := ParsePlan("p.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := os.ReadFile("../../examples/import/recovery-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantIm, err := ImportRecoveryTest("r.yaml", rt, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, enc := range encodings {
		got, err := ParseScenarioWith("s.yaml", enc(good), noCatalog)
		if err != nil {
			t.Fatalf("%s scenario: %v", name, err)
		}
		if got.Hash != contentHash(enc(good)) {
			t.Errorf("%s: hash %s is not the bytes'", name, got.Hash)
		}
		got.Hash = want.Hash
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s scenario: %+v\nwant %+v", name, got, want)
		}
		p, err := ParsePlan("p.yaml", enc(plan))
		if err != nil || !reflect.DeepEqual(p, wantPlan) {
			t.Errorf("%s plan: %+v, %v", name, p, err)
		}
		im, err := ImportRecoveryTest("r.yaml", enc(string(rt)), ImportOptions{})
		if err != nil || !bytes.Equal(im.YAML, wantIm.YAML) {
			t.Errorf("%s import: %v", name, err)
		}
		if KindOf(enc(plan)) != KindPlan || KindOf(enc(good)) != KindScenario || !LooksLikePlan(enc(plan)) {
			t.Errorf("%s: kinds %q %q", name, KindOf(enc(plan)), KindOf(enc(good)))
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), enc(good), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p.yaml"), utf16Text(plan, true), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := LoadPlanWith(filepath.Join(dir, "p.yaml"), noCatalog)
		if err != nil || len(r.Scenarios) != 1 || r.Scenarios[0].Goal != "charge it" {
			t.Errorf("%s: plan in UTF-16BE with the scenario: %v", name, err)
		}
	}
}

// A file that cannot be read (its encoding, its syntax, an alias bomb, a
// second document) loses nothing else: a plan reports it with the problems
// of its other scenarios, each located.
func TestUnreadableScenariosAreReportedTogether(t *testing.T) {
	dir := t.TempDir()
	bomb := "name: b\ninitial:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i < 8; i++ {
		bomb += "  a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat("*a"+string(rune('0'+i-1))+", ", 9) + "*a" + string(rune('0'+i-1)) + "]\n"
	}
	files := map[string][]byte{
		"1-utf32.yaml":   append([]byte{0xFF, 0xFE, 0, 0}, []byte("n\x00\x00\x00")...),
		"2-binary.yaml":  []byte("name: x\x00\n"),
		"3-alias.yaml":   []byte(strings.Replace(aliased, "    optional: true\n", "    optional: true\n    needs_curent: true\n", 1)),
		"4-tab.yaml":     []byte("name: x\nplan:\n\t- id: a\n"),
		"5-bomb.yaml":    []byte(bomb),
		"6-two.yaml":     []byte(good + "---\n" + good),
		"7-latin-1.yaml": []byte(strings.Replace(good, "charge it", "d\xe9bit", 1)),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(plan, []byte("name: p\nscenarios: ['*-*.yaml']\narms:\n  - {name: a, agent: careful}\nseeds: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadPlanWith(plan, noCatalog)
	if err == nil {
		t.Fatal("accepted")
	}
	got := err.Error()
	for _, want := range []string{
		"1-utf32.yaml:1:1: the file is UTF-32LE",
		"2-binary.yaml:1:8: a NUL byte (U+0000)",
		"3-alias.yaml:15:5: needs_curent: unknown field",
		"4-tab.yaml:3:1: invalid YAML: a tab character in the indentation",
		"5-bomb.yaml:7:47: aliases expand this document by more than 100000 nodes (an alias bomb?)",
		"6-two.yaml:19:1: a second YAML document starts here",
		"7-latin-1.yaml:3:8: invalid UTF-8: byte 0xE9",
	} {
		if !strings.Contains(got, filepath.Join(dir, want)) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
