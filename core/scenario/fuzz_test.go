package scenario

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
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
			if _, err := ParseScenarioWith("out.yaml", im.YAML, LoadOptions{NoCatalog: true}); err != nil {
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
