package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
)

// FuzzLoad feeds arbitrary bytes to every parser of the package: scenario
// (with generation and metamorphic checks), plan and the recovery-test
// importer. None may panic; a failure must come back as located errors.
// `make fuzz` runs it: go test -run='^$' -fuzz='^FuzzLoad$' -fuzztime=10s ./scenario/
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, g := range []string{"../../examples/scenarios/*.yaml", "../../examples/plans/*.yaml", "../../examples/import/*.yaml", "testdata/*.yaml"} {
		m, _ := filepath.Glob(g)
		seeds = append(seeds, m...)
	}
	for _, file := range seeds {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(good))
	f.Add([]byte(goodGen))
	f.Add([]byte("name: x\nworld: test\ngoal: g\ntools: [t.read]\nplan: [{id: a, tool: t.read}]\ngenerate: [slow]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("- [\n"))
	f.Add([]byte(aliased))
	f.Add(append([]byte{0xEF, 0xBB, 0xBF}, aliased...))
	f.Add(utf16Text(good, false))
	f.Add([]byte("initial:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"))
	f.Add([]byte(good + "---\n" + good))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenarioWith("fuzz.yaml", data, withTest)
		checkErr(t, err)
		if err == nil {
			if _, err := json.Marshal(s); err != nil {
				t.Fatalf("a loaded scenario does not marshal: %v", err)
			}
			Generate(s, testCatalog())
			s.CheckMetamorphic(map[string]map[string]*bool{})
		}
		_, err = ParseScenarioWith("fuzz.yaml", data, LoadOptions{NoCatalog: true})
		checkErr(t, err)
		_, err = ParsePlan("fuzz.yaml", data)
		checkErr(t, err)
		LooksLikePlan(data)
		im, err := ImportRecoveryTest("fuzz.yaml", data, ImportOptions{})
		checkErr(t, err)
		if err == nil {
			if _, err := ParseScenarioWith("out.yaml", im.YAML, LoadOptions{Catalog: filesCatalog}); err != nil {
				t.Fatalf("imported scenario does not load: %v", err)
			}
		}
	})
}

// checkErr: errors are located Errors naming the file, never empty.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var es Errors
	if !errors.As(err, &es) {
		return // e.g. an importer defect is wrapped with its cause
	}
	if len(es) == 0 {
		t.Fatal("empty error list")
	}
	for _, e := range es {
		if e.File == "" || e.Msg == "" {
			t.Fatalf("unlocated error %#v", e)
		}
	}
}

// FuzzAliases checks alias expansion and merge keys against documents that
// say the same thing without them. The oracle is a rewrite that cannot
// change a document's meaning, made without the code under test: from a
// document D with no anchor, alias or merge key, D' writes one value that
// is equal (in kind, tag, style and content) to a value written earlier as
// an alias of it (mode even), or moves a run of a mapping's keys, all
// distinct, into a merge key (<<: {run}, or <<: [{first}, {rest}]; mode
// odd). YAML reads D and D' as the same data, so every parser must refuse
// D' exactly when it refuses D, and read both alike. pick chooses the pair
// or the run.
func FuzzAliases(f *testing.F) {
	var seeds [][]byte
	for _, g := range []string{"../../examples/scenarios/*.yaml", "../../examples/plans/*.yaml", "../../examples/import/*.yaml", "testdata/*.yaml"} {
		m, _ := filepath.Glob(g)
		for _, file := range m {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, data)
		}
	}
	seeds = append(seeds, []byte(good), []byte(goodGen), []byte(strings.Replace(good, "recoverable: true", "recoverable: true\n    bogus: 1", 1)))
	for i, data := range seeds {
		f.Add(data, uint16(i*7), uint8(i%4))
	}
	f.Fuzz(func(t *testing.T, data []byte, pick uint16, mode uint8) {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || !plainDoc(&doc, new(int)) {
			return
		}
		plain, err := yaml.Marshal(&doc)
		if err != nil {
			return
		}
		var changed bool
		if mode%2 == 0 {
			changed = aliasOne(&doc, int(pick))
		} else {
			changed = mergeRun(&doc, int(pick), mode&2 != 0)
		}
		if !changed {
			return
		}
		aliased, err := yaml.Marshal(&doc)
		if err != nil {
			return
		}
		parsers := map[string]func([]byte) (any, error){
			"scenario": func(b []byte) (any, error) {
				s, err := ParseScenarioWith("f.yaml", b, LoadOptions{NoCatalog: true})
				if s != nil {
					s.Hash = ""
				}
				return s, err
			},
			"generated scenario": func(b []byte) (any, error) {
				s, err := ParseScenarioWith("f.yaml", b, withTest)
				if s != nil {
					s.Hash = ""
				}
				return s, err
			},
			"plan": func(b []byte) (any, error) { return ParsePlan("f.yaml", b) },
			"import": func(b []byte) (any, error) {
				_, err := ImportRecoveryTest("f.yaml", b, ImportOptions{})
				return nil, err
			},
		}
		for name, parse := range parsers {
			a, errA := parse(plain)
			b, errB := parse(aliased)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("%s: written out %v, aliased %v\n--- written out:\n%s--- aliased:\n%s", name, errA, errB, plain, aliased)
			}
			if errA == nil && !sameValue(a, b) {
				t.Fatalf("%s: read differently\n%+v\n%+v\n--- written out:\n%s--- aliased:\n%s", name, a, b, plain, aliased)
			}
		}
	})
}

// plainDoc: no anchors, aliases or merge keys (nor keys that read as one),
// and small enough to search for equal values.
func plainDoc(n *yaml.Node, size *int) bool {
	if *size++; *size > 3000 || n.Anchor != "" || n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Value == "<<") {
		return false
	}
	for _, c := range n.Content {
		if !plainDoc(c, size) {
			return false
		}
	}
	return true
}

// canon is a value as decoding sees it: kind, tag, style and content.
func canon(n *yaml.Node, b *strings.Builder) {
	fmt.Fprintf(b, "(%d %s %d %d:%s", n.Kind, n.ShortTag(), n.Style&^yaml.FlowStyle, len(n.Value), n.Value)
	for _, c := range n.Content {
		canon(c, b)
	}
	b.WriteString(")")
}

// slot is a value's place: the index of its node in its parent's Content.
type slot struct {
	parent *yaml.Node
	i      int
	pre    int // preorder index of the node
	size   int // nodes in its subtree
	key    string
}

func slots(root *yaml.Node) []slot {
	var out []slot
	pre := 0
	var walk func(n *yaml.Node) int
	walk = func(n *yaml.Node) int {
		start := pre
		pre++
		for i, c := range n.Content {
			isValue := n.Kind == yaml.SequenceNode || (n.Kind == yaml.MappingNode && i%2 == 1)
			at := len(out)
			if isValue {
				var b strings.Builder
				canon(c, &b)
				out = append(out, slot{parent: n, i: i, pre: pre, key: b.String()})
			}
			size := walk(c)
			if isValue {
				out[at].size = size
			}
		}
		return pre - start
	}
	walk(root)
	return out
}

// aliasOne anchors a value and writes a later equal one (not inside it) as
// its alias.
func aliasOne(doc *yaml.Node, pick int) bool {
	ss := slots(doc)
	var pairs [][2]int
	byKey := map[string][]int{}
	for j := range ss {
		for _, i := range byKey[ss[j].key] {
			if ss[j].pre >= ss[i].pre+ss[i].size {
				pairs = append(pairs, [2]int{i, j})
			}
		}
		if len(byKey[ss[j].key]) < 8 {
			byKey[ss[j].key] = append(byKey[ss[j].key], j)
		}
	}
	if len(pairs) == 0 {
		return false
	}
	p := pairs[pick%len(pairs)]
	v, w := ss[p[0]], ss[p[1]]
	target := v.parent.Content[v.i]
	target.Anchor = "fz"
	w.parent.Content[w.i] = &yaml.Node{Kind: yaml.AliasNode, Value: "fz", Alias: target}
	return true
}

// mergeRun moves a run of a mapping's keys (all keys of the mapping
// distinct scalars) into a merge key at the run's place.
func mergeRun(doc *yaml.Node, pick int, split bool) bool {
	var maps []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && len(n.Content) >= 2 {
			seen := map[string]bool{}
			ok := true
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode || seen[k.Value] {
					ok = false
					break
				}
				seen[k.Value] = true
			}
			if ok {
				maps = append(maps, n)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	if len(maps) == 0 {
		return false
	}
	m := maps[pick%len(maps)]
	pairs := len(m.Content) / 2
	pick /= len(maps)
	from := pick % pairs
	n := 1 + (pick/pairs)%(pairs-from)
	run := append([]*yaml.Node(nil), m.Content[2*from:2*(from+n)]...)
	var value *yaml.Node
	if split && n >= 2 {
		value = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle, Content: []*yaml.Node{
			{Kind: yaml.MappingNode, Tag: "!!map", Content: run[:2]},
			{Kind: yaml.MappingNode, Tag: "!!map", Content: run[2:]},
		}}
	} else {
		value = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: run}
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!merge", Value: "<<"}
	rest := append([]*yaml.Node(nil), m.Content[2*(from+n):]...)
	m.Content = append(append(m.Content[:2*from], key, value), rest...)
	return true
}

// sameValue: equal, or (NaN is not equal to itself) rendered alike.
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ya, errA := yaml.Marshal(a)
	yb, errB := yaml.Marshal(b)
	return errA == nil && errB == nil && string(ya) == string(yb) && !reflect.DeepEqual(a, a)
}

// filesCatalog stands in for the files world's catalog (core/world is not
// a dependency of this package): the importer layout's tools with the
// metadata generation reads.
func filesCatalog(ref WorldRef) (map[string]harness.Tool, error) {
	if ref.Name != DefaultFilesLayout.World {
		return nil, fmt.Errorf("unknown world %q (known: %s)", ref.Name, DefaultFilesLayout.World)
	}
	l := DefaultFilesLayout
	out := map[string]harness.Tool{}
	for _, t := range []harness.Tool{
		{Name: l.ReadTool, Effect: harness.EffectRead, Permission: "fs.read", LatencyMs: 20, DeadlineMs: 1000},
		{Name: l.ListTool, Effect: harness.EffectRead, Permission: "fs.read", LatencyMs: 20, DeadlineMs: 1000},
		{Name: l.WriteTool, Effect: harness.EffectWrite, Permission: "fs.write", ReconciledBy: l.ReadTool, LatencyMs: 30, DeadlineMs: 1000},
		{Name: l.Create, Effect: harness.EffectWrite, Permission: "fs.write", ReconciledBy: l.ReadTool, LatencyMs: 30, DeadlineMs: 1000},
	} {
		out[t.Name] = t
	}
	return out, nil
}

// FuzzImport feeds the aiwg-evals importer hostile variations of the
// format: it must never panic; a failure comes back as errors located in
// the input file, none naming a source file of the importer; a success
// loads, generated variants included.
// make fuzz FUZZ=FuzzImport
func FuzzImport(f *testing.F) {
	m, _ := filepath.Glob("../../examples/import/*.yaml")
	for _, file := range m {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\ntask: t\nsetup: {files: [{path: a.json, content: '{\"k\": \"v\"}'}]}\nvalidation: [{type: output_contains, expected: v}]\n"))
	f.Add([]byte("name: x\ntask: t\nsetup: {files: [{path: a.json, content: '[1, {\"a.b\": null}]'}]}\nvalidation: [{type: no_data_loss, path: a.json, original_keys_preserved: true}, {type: file_content, path: a.json, assertions: [{json_path: '$[0]', equals: 2}]}]\n"))
	f.Add([]byte("name: x\ntask: t\nsetup: {files: [{path: a.json, content: '{}'}]}\nvalidation: [{type: tool_sequence, pattern: [{tool: Edit, path_contains: a}, {tool: Read, path_contains: a}]}, {type: bogus}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []ImportOptions{{}, {Catalog: filesCatalog}} {
			im, err := ImportRecoveryTest("fuzz.yaml", data, opts)
			checkErr(t, err)
			var es Errors
			if errors.As(err, &es) {
				for _, e := range es {
					if e.File != "fuzz.yaml" || strings.Contains(e.Msg, ".go") {
						t.Fatalf("error not about the input, or naming a source file: %v", e)
					}
				}
			}
			if err == nil {
				if _, err := ParseScenarioWith("out.yaml", im.YAML, LoadOptions{Catalog: filesCatalog}); err != nil {
					t.Fatalf("imported scenario does not load: %v\n%s", err, im.YAML)
				}
			}
		}
	})
}
