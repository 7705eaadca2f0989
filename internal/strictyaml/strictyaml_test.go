package strictyaml

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"gopkg.in/yaml.v3"
)

func render(t *testing.T, n *yaml.Node) string {
	t.Helper()
	b, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func utf16Of(s string, bigEndian bool) []byte {
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

func utf32Of(s string, bigEndian, bom bool) []byte {
	var out []byte
	put := func(r rune) {
		if bigEndian {
			out = append(out, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
		} else {
			out = append(out, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
		}
	}
	if bom {
		put(0xFEFF)
	}
	for _, r := range s {
		put(r)
	}
	return out
}

const sample = "name: café\nplan:\n  - {id: a, tool: t.read}\n  - id: b\n    args: {q: \"ü\", n: 2}\n"

// A UTF-8 byte-order mark and UTF-16 (either order, with its mark) read as
// the same document, with the same positions, as plain UTF-8.
func TestEncodingsAccepted(t *testing.T) {
	want, errs := Parse("f.yaml", []byte(sample))
	if errs != nil {
		t.Fatal(errs)
	}
	for name, data := range map[string][]byte{
		"UTF-8 with BOM": append([]byte{0xEF, 0xBB, 0xBF}, sample...),
		"UTF-16LE":       utf16Of(sample, false),
		"UTF-16BE":       utf16Of(sample, true),
		"UTF-16LE CRLF":  utf16Of(strings.ReplaceAll(sample, "\n", "\r\n"), false),
	} {
		got, errs := Parse("f.yaml", data)
		if errs != nil {
			t.Fatalf("%s: %v", name, errs)
		}
		if render(t, got) != render(t, want) {
			t.Errorf("%s: read as\n%s\nwant\n%s", name, render(t, got), render(t, want))
		}
		q := got.Content[0].Content[3].Content[1].Content[3].Content[1] // plan[1].args.q's value
		if q.Value != "ü" || q.Line != 5 || q.Column != 15 {
			t.Errorf("%s: args.q = %q at %d:%d, want \"ü\" at 5:15", name, q.Value, q.Line, q.Column)
		}
	}
}

// What is not UTF-8 or UTF-16 with a mark is refused, naming the file and
// the encoding found.
func TestEncodingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"UTF-32LE with BOM", utf32Of(sample, false, true), "f.yaml:1:1: the file is UTF-32LE (it starts with that byte-order mark); rebound reads UTF-8, or UTF-16 with a byte-order mark: save the file as UTF-8"},
		{"UTF-32BE with BOM", utf32Of(sample, true, true), "f.yaml:1:1: the file is UTF-32BE"},
		{"UTF-32LE", utf32Of(sample, false, false), "f.yaml:1:1: the file looks like UTF-32LE without a byte-order mark"},
		{"UTF-32BE", utf32Of(sample, true, false), "f.yaml:1:1: the file looks like UTF-32BE without a byte-order mark"},
		{"UTF-16LE without BOM", utf16Of(sample, false)[2:], "f.yaml:1:1: the file looks like UTF-16LE without a byte-order mark"},
		{"UTF-16BE without BOM", utf16Of(sample, true)[2:], "f.yaml:1:1: the file looks like UTF-16BE without a byte-order mark"},
	} {
		n, errs := Parse("f.yaml", tc.data)
		if n != nil || len(errs) != 1 || !strings.HasPrefix(errs.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, errs, tc.want)
		}
	}
}

// Every encoding problem, and the syntax problems whose character can be
// found (a tab as indentation, a reserved indicator, an alias naming no
// anchor), is named at file:line:column.
func TestProblemsAreLocated(t *testing.T) {
	lone := utf16Of("a: 1\nb: x", false)
	lone = append(lone, 0x00, 0xD8, 'y', 0) // a high surrogate, then 'y'
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"invalid UTF-8", []byte("a: 1\nb: caf\xe9\n"), "f.yaml:2:7: invalid UTF-8: byte 0xE9 does not start a character here"},
		{"invalid UTF-8 after multibyte", []byte("a: 1\nb: ü\xff\n"), "f.yaml:2:5: invalid UTF-8: byte 0xFF"},
		{"truncated UTF-8 at the end", []byte("a: 1\nb: \xe2\x82"), "f.yaml:2:4: invalid UTF-8: byte 0xE2"},
		{"UTF-8 surrogate", []byte("a: \xed\xa0\x80\n"), "f.yaml:1:4: invalid UTF-8: byte 0xED"},
		{"NUL", []byte("a: 1\nb: x\x00y\n"), "f.yaml:2:5: a NUL byte (U+0000): control characters are not allowed in YAML"},
		{"bell", []byte("a: \"x\a\"\n"), "f.yaml:1:6: control character U+0007 is not allowed in YAML"},
		{"DEL", []byte("a: x\x7f\n"), "f.yaml:1:5: control character U+007F"},
		{"C1 control", []byte("a: x\u0080\n"), "f.yaml:1:5: control character U+0080"},
		{"U+FFFE", []byte("a: x\uFFFE\n"), "f.yaml:1:5: control character U+FFFE"},
		{"BOM inside", []byte("a: 1\n\xef\xbb\xbfb: 2\n"), "f.yaml:2:1: a byte-order mark (U+FEFF) inside the text"},
		{"BOM after a BOM", []byte("\xef\xbb\xbf\xef\xbb\xbfa: 1\n"), "f.yaml:1:1: a byte-order mark (U+FEFF) inside the text"},
		{"CRLF lines", []byte("a: 1\r\nb: 2\r\nc: \x01\r\n"), "f.yaml:3:4: control character U+0001"},
		{"CR lines", []byte("a: 1\rb: 2\rc: \x01\r"), "f.yaml:3:4: control character U+0001"},
		{"NEL ends a line", []byte("a: 1\u0085b: \x01\n"), "f.yaml:2:4: control character U+0001"},
		{"NUL in UTF-16", utf16Of("a: 1\nb: x\x00\n", false), "f.yaml:2:5: a NUL byte"},
		{"lone surrogate in UTF-16", lone, "f.yaml:2:5: invalid UTF-16LE: a lone surrogate 0xD800 is not a character"},
		{"odd UTF-16", append(utf16Of("a: 1\nbc", true), 'x'), "f.yaml:2:3: invalid UTF-16BE: the file ends in the middle of a character"},
		{"tab as indentation", []byte("a:\n\tb: 1\n"), "f.yaml:2:1: invalid YAML: a tab character in the indentation: YAML indents with spaces only"},
		{"tab after spaces", []byte("a:\n  b: 1\n  \tc: 2\n"), "f.yaml:3:3: invalid YAML: a tab character in the indentation"},
		{"tab on a later line", []byte("a:\n  b: 1\n\tc: 2\n"), "f.yaml:3:1: invalid YAML: a tab character in the indentation"},
		{"tab after a dash", []byte("a:\n  -\tb\n"), "f.yaml:2:4: invalid YAML: a tab character in the indentation"},
		{"tab on line 1", []byte("\ta: 1\n"), "f.yaml:1:1: invalid YAML: a tab character in the indentation"},
		{"tab in a plain scalar's indentation", []byte("a:\n  b: x\n\t y\n"), "f.yaml:3:1: invalid YAML: a tab character in the indentation"},
		{"reserved @", []byte("a: 1\nb: @x\n"), "f.yaml:2:4: invalid YAML: a plain value cannot start with @ or `"},
		{"reserved @ on line 1", []byte("a: @x\n"), "f.yaml:1:4: invalid YAML: a plain value cannot start with @ or `"},
		{"unknown anchor", []byte("a: 1\nb: [x, *nope]\n"), "f.yaml:2:8: invalid YAML: the alias *nope names no anchor"},
		{"other syntax on line 1", []byte("a: [1\n"), "f.yaml:1:1: invalid YAML: did not find expected"},
	} {
		n, errs := Parse("f.yaml", tc.data)
		if n != nil || len(errs) != 1 || !strings.HasPrefix(errs.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.name, errs, tc.want)
		}
	}
}

// The lines and columns this package counts are yaml.v3's: after every
// kind of line break and after multibyte characters, a node yaml.v3 places
// at L:C is where a bad character at the same place is reported.
func TestPositionsAgreeWithYAML(t *testing.T) {
	for _, prefix := range []string{
		"a: 1\nb: ",
		"a: 1\r\nb: ",
		"a: 1\rb: ",
		"a: 1\u0085b: ",
		"a: 1\u2028b: ",
		"a: \"é\u2029\"\nb: ",
		"a: ü✓😀\nbb: ",
		"a: |\n  x\r\n  y\n\nb: ",
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(prefix+"z\n"), &doc); err != nil {
			t.Fatalf("%q: %v", prefix, err)
		}
		m := doc.Content[0]
		z := m.Content[len(m.Content)-1]
		_, errs := Parse("f.yaml", []byte(prefix+"\x01\n"))
		want := fmt.Sprintf("f.yaml:%d:%d: ", z.Line, z.Column)
		if len(errs) != 1 || !strings.HasPrefix(errs.Error(), want) {
			t.Errorf("%q: %v, want at %s", prefix, errs, want)
		}
	}
}

// One document per file: a second is refused where it starts; a trailing
// --- or ... and a file of comments only are not second documents.
func TestOneDocument(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"a: 1\n---\nb: 2\n", "f.yaml:2:1: a second YAML document starts here (after ---)"},
		{"---\na: 1\n--- # two\n- x\n", "f.yaml:3:1: a second YAML document starts here"},
		{"a: 1\n...\n---\n~\n", "f.yaml:3:1: a second YAML document starts here"},
		{"---\n---\na: 1\n", "f.yaml:2:1: a second YAML document starts here"},
		{"a: 1\n---\nb: [\n", "f.yaml:3:1: invalid YAML"},
		{"a: 1\n---\n", ""},
		{"a: 1\n...\n", ""},
		{"---\na: 1\n", ""},
	} {
		n, errs := Parse("f.yaml", []byte(tc.src))
		if tc.want == "" {
			if errs != nil || render(t, n) != "a: 1\n" {
				t.Errorf("%q: %v, %q", tc.src, errs, render(t, n))
			}
			continue
		}
		if n != nil || len(errs) != 1 || !strings.HasPrefix(errs.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, errs, tc.want)
		}
	}
	for _, src := range []string{"", "# only a comment\n", "---\n", "--- # c\n...\n"} {
		n, errs := Parse("f.yaml", []byte(src))
		if errs != nil || n == nil || n.Kind != yaml.DocumentNode || len(n.Content) != 0 {
			t.Errorf("%q: %v, %+v: want an empty document", src, errs, n)
		}
	}
}

// Aliases are expanded into copies that keep the positions of what they
// copy and name the alias they were copied for.
func TestAliasesExpand(t *testing.T) {
	src := "a: &x\n  k: [1, &y {j: 2}]\nb: *x\nc: [*y, *x]\n"
	n, errs := Parse("f.yaml", []byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	want := "a: &x\n    k: [1, &y {j: 2}]\nb:\n    k: [1, {j: 2}]\nc: [{j: 2}, {k: [1, {j: 2}]}]\n"
	if got := render(t, n); got != want {
		t.Fatalf("expanded to\n%s\nwant\n%s", got, want)
	}
	m := n.Content[0]
	b := m.Content[3]
	if Via(m.Content[1]) != nil || Via(b) == nil || Via(b).Line != 3 || Via(b).Column != 4 {
		t.Fatalf("Via: written %v, copy %v", Via(m.Content[1]), Via(b))
	}
	j := b.Content[1].Content[1].Content[0] // b.k[1].j
	if j.Value != "j" || j.Line != 2 || j.Column != 14 || Via(j) != Via(b) {
		t.Errorf("b.k[1].j: %q at %d:%d via %v", j.Value, j.Line, j.Column, Via(j))
	}
	if got := ViaNote(j); got != " (reached through the alias *x at line 3, column 4)" {
		t.Errorf("ViaNote = %q", got)
	}
	// A copy inside a copy names the outer alias, where the value is used.
	inner := m.Content[5].Content[1].Content[1].Content[1] // c[1].k[1]
	if Via(inner) == nil || Via(inner).Line != 4 || Via(inner).Column != 9 {
		t.Errorf("c[1].k[1] via %+v", Via(inner))
	}
	// Every copy is a tree of its own: changing one changes no other.
	b.Content[1].Content[0].Value = "changed"
	if m.Content[1].Content[1].Content[0].Value != "1" || m.Content[5].Content[1].Content[1].Content[0].Value != "1" {
		t.Error("a copy shares nodes with the value it copies")
	}
	// An alias inside the value it names.
	for _, src := range []string{"a: &a [*a]\n", "a: &a {b: {c: *a}}\n"} {
		if n, errs := Parse("f.yaml", []byte(src)); n != nil || len(errs) != 1 || !strings.Contains(errs.Error(), "the alias *a is inside the value &a it names") {
			t.Errorf("%q: %v", src, errs)
		}
	}
}

// Billion laughs: refused when the copies pass the budget, in bounded
// time and memory, at the alias that passed it.
func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	n, errs := Parse("bomb.yaml", []byte(b.String()))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if n != nil || len(errs) != 1 || !strings.Contains(errs.Error(), "aliases expand this document by more than 100000 nodes (an alias bomb?)") {
		t.Fatalf("%v", errs)
	}
	if !strings.HasPrefix(errs.Error(), "bomb.yaml:5:") {
		t.Errorf("not located at the alias that passed the budget: %v", errs)
	}
	if took > 2*time.Second || after.TotalAlloc-before.TotalAlloc > 200<<20 {
		t.Errorf("took %v and %d MB", took, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
	// A large document may add as many nodes as it holds.
	var big strings.Builder
	big.WriteString("base: &b [")
	for i := range 150_000 {
		if i > 0 {
			big.WriteString(", ")
		}
		big.WriteString("1")
	}
	big.WriteString("]\ncopy: *b\n")
	if _, errs := Parse("f.yaml", []byte(big.String())); errs != nil {
		t.Errorf("one copy of half a large document: %v", errs)
	}
	if _, errs := Parse("f.yaml", []byte(big.String()+"again: *b\n")); len(errs) != 1 || !strings.Contains(errs.Error(), "f.yaml:3:8: aliases expand this document by more than") {
		t.Errorf("two copies of half a large document: %v", errs)
	}
}

// Merge keys, as the YAML merge-key type says; and no key twice as written.
func TestMergeKeysAndDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name, src, want, errs string
	}{
		{"explicit key overrides a merged one", "a: &a {x: 1, y: 2}\nb: {<<: *a, x: 3}\n", "a: &a {x: 1, y: 2}\nb: {y: 2, x: 3}\n", ""},
		{"explicit key before the merge", "a: &a {x: 1, y: 2}\nb: {x: 3, <<: *a}\n", "a: &a {x: 1, y: 2}\nb: {x: 3, y: 2}\n", ""},
		{"first merged mapping wins", "a: &a {x: 1}\nc: &c {x: 2, z: 3}\nb: {<<: [*a, *c]}\n", "a: &a {x: 1}\nc: &c {x: 2, z: 3}\nb: {x: 1, z: 3}\n", ""},
		{"inline mapping", "b: {<<: {x: 1}, y: 2}\n", "b: {x: 1, y: 2}\n", ""},
		{"merge of a merge", "a: &a {x: 1}\nc: &c {<<: *a, y: 2}\nb: {<<: *c, z: 3}\n", "a: &a {x: 1}\nc: &c {x: 1, y: 2}\nb: {x: 1, y: 2, z: 3}\n", ""},
		{"block style", "base: &base\n  x: 1\nb:\n  <<: *base\n  y: 2\n", "base: &base\n    x: 1\nb:\n    x: 1\n    y: 2\n", ""},
		{"quoted << is a key", "b: {\"<<\": {x: 1}}\n", "b: {\"<<\": {x: 1}}\n", ""},
		{"merge of a scalar", "a: &a 1\nb: {<<: *a, y: 2}\n", "a: &a 1\nb: {y: 2}\n", "f.yaml:1:4: <<: a merge key (<<) takes a mapping, an alias of one, or a list of them; got the scalar \"1\" (reached through the alias *a at line 2, column 9)"},
		{"merge of null", "b: {<<: null}\n", "b: {}\n", "f.yaml:1:9: <<: a merge key (<<) takes a mapping, an alias of one, or a list of them; got null"},
		{"merge of a list of scalars", "b: {<<: [{x: 1}, 2]}\n", "b: {x: 1}\n", "f.yaml:1:18: <<: a merge key (<<) merges mappings; this item of its list is the scalar \"2\""},
		{"two merge keys", "a: &a {x: 1}\nb: {<<: *a, <<: {y: 2}}\n", "a: &a {x: 1}\nb: {x: 1}\n", "f.yaml:2:13: <<: mapping key \"<<\" already defined at line 2 (to merge several mappings, list them: <<: [*a, *b])"},
		{"key twice", "a: 1\nb: 2\na: 3\n", "a: 1\nb: 2\n", "f.yaml:3:1: a: mapping key \"a\" already defined at line 1"},
		{"key twice beside a merge", "a: &a {x: 1}\nb: {<<: *a, x: 2, x: 3}\n", "a: &a {x: 1}\nb: {x: 2}\n", "f.yaml:2:19: x: mapping key \"x\" already defined at line 2"},
		{"key twice inside a merged mapping", "b: {<<: {x: 1, x: 2}}\n", "b: {x: 1}\n", "f.yaml:1:16: x: mapping key \"x\" already defined at line 1"},
		{"key twice in an anchored mapping, reported once", "a: &a {x: 1, x: 2}\nb: *a\nc: *a\n", "a: &a {x: 1}\nb: {x: 1}\nc: {x: 1}\n", "f.yaml:1:14: x: mapping key \"x\" already defined at line 1"},
		{"1 and \"1\" are one key", "a: {1: x, \"1\": y}\n", "a: {1: x}\n", "f.yaml:1:11: 1: mapping key \"1\" already defined at line 1"},
	} {
		n, errs := Parse("f.yaml", []byte(tc.src))
		if n == nil {
			t.Errorf("%s: no tree: %v", tc.name, errs)
			continue
		}
		if got := render(t, n); got != tc.want {
			t.Errorf("%s: read as\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		if got := fmt.Sprint(errs); (tc.errs == "") != (errs == nil) || got != tc.errs && tc.errs != "" {
			t.Errorf("%s: errors %q\nwant %q", tc.name, got, tc.errs)
		}
	}
}

// Nesting is bounded, written or reached through aliases; yaml.v3's own
// bound (10,000) is located too.
func TestDepthIsBounded(t *testing.T) {
	flow := func(n int) string { return "a: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }
	if _, errs := Parse("f.yaml", []byte(flow(MaxDepth-1))); errs != nil {
		t.Errorf("depth %d: %v", MaxDepth, errs)
	}
	if n, errs := Parse("f.yaml", []byte(flow(MaxDepth))); n != nil || len(errs) != 1 || errs.Error() != fmt.Sprintf("f.yaml:1:%d: values nest deeper than %d levels", 3+MaxDepth, MaxDepth) {
		t.Errorf("depth %d: %v", MaxDepth+1, errs)
	}
	if n, errs := Parse("f.yaml", []byte(flow(20_000))); n != nil || len(errs) != 1 || !strings.HasPrefix(errs.Error(), "f.yaml:1:1: invalid YAML: exceeded max depth of 10000") {
		t.Errorf("depth 20,000: %v", errs)
	}
	// Aliases can nest deeper than what is written: each of these levels
	// nests the last 150 levels deeper.
	var chain strings.Builder
	chain.WriteString("l0: &l0 " + strings.Repeat("[", 150) + "x" + strings.Repeat("]", 150) + "\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&chain, "l%d: &l%d %s*l%d%s\n", i, i, strings.Repeat("[", 150), i-1, strings.Repeat("]", 150))
	}
	start := time.Now()
	n, errs := Parse("f.yaml", []byte(chain.String()))
	if n != nil || len(errs) != 1 || !strings.HasPrefix(errs.Error(), fmt.Sprintf("f.yaml:7:159: through the alias *l5, values nest deeper than %d levels", MaxDepth)) {
		t.Errorf("alias chain: %v", errs)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("alias chain took %v", time.Since(start))
	}
}

// The text is what the YAML says: nothing is lost converting UTF-16.
func TestTextRoundTrip(t *testing.T) {
	s := "k: \"😀 é \\t\"\r\n# ✓\n"
	for _, data := range [][]byte{utf16Of(s, false), utf16Of(s, true), append([]byte{0xEF, 0xBB, 0xBF}, s...), []byte(s)} {
		got, fe := Text("f.yaml", data)
		if fe != nil || !bytes.Equal(got, []byte(s)) {
			t.Errorf("% x: %q, %v", data[:4], got, fe)
		}
	}
}
