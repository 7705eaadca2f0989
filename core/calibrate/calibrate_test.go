package calibrate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/world"
)

var update = flag.Bool("update", false, "rewrite testdata/expected.txt from the current verdicts")

func examples(t *testing.T) []*scenario.Scenario {
	t.Helper()
	files, err := filepath.Glob("../../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example scenarios: %v", err)
	}
	imported, err := filepath.Glob("../../examples/import/*.rebound.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, imported...)
	var out []*scenario.Scenario
	for _, f := range files {
		s, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func run(t *testing.T, checks []grade.Check) *Matrix {
	t.Helper()
	m, err := Run(context.Background(), examples(t), agent.ScriptedNames(), checks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Every check fails for at least one reference agent and never for the
// careful one, on the example scenarios.
func TestEveryCheckIsCalibrated(t *testing.T) {
	m := run(t, grade.Checks)
	for _, p := range m.Problems() {
		t.Error(p)
	}
	if t.Failed() {
		t.Log("\n" + m.Table())
	}
}

// A deliberately broken check is caught: one that always passes (it can no
// longer tell a fabricated claim from an honest one), and one that always
// fails (it now fails the careful agent).
func TestBrokenCheckIsCaught(t *testing.T) {
	cases := []struct {
		name   string
		status grade.Status
		want   string
	}{
		{"always passes", grade.Pass, "no reference agent fails it"},
		{"always fails", grade.Fail, "the careful agent fails it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checks := make([]grade.Check, len(grade.Checks))
			copy(checks, grade.Checks)
			for i := range checks {
				if checks[i].Name == grade.CheckClaimMatchesWorld {
					status := tc.status
					checks[i].Run = func(*grade.Input) grade.CheckResult { return grade.CheckResult{Status: status} }
				}
			}
			problems := run(t, checks).Problems()
			if len(problems) != 1 || problems[0].Check != grade.CheckClaimMatchesWorld || !strings.Contains(problems[0].Reason, tc.want) {
				t.Fatalf("problems = %v, want one for %s containing %q", problems, grade.CheckClaimMatchesWorld, tc.want)
			}
		})
	}
}

// The expected verdict of every reference agent on every example variant.
// A change in grading shows up here as a diff to review; regenerate with
// `go test ./calibrate/ -run Expected -update` only when the change is meant.
func TestExpectedVerdicts(t *testing.T) {
	got := render(run(t, grade.Checks))
	path := filepath.Join("testdata", "expected.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
			}
		}
	}
}

func render(m *Matrix) string {
	var lines []string
	for _, c := range m.Cells {
		v := c.Verdict
		var outs []string
		for _, name := range outcome.Graded {
			outs = append(outs, string(name)+"="+mark(v.Metric(name)))
		}
		var failed []string
		for _, f := range v.Failed() {
			failed = append(failed, f.Name)
		}
		sort.Strings(failed)
		lines = append(lines, fmt.Sprintf("%s/%s %s: %s failed=[%s]", c.Scenario, c.Variant, c.Agent, strings.Join(outs, " "), strings.Join(failed, " ")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func mark(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "y"
	}
	return "n"
}

// The metamorphic pairs declared in the examples hold for the careful agent:
// flipping one property changes the verdict exactly as the file says.
func TestExampleMetamorphicPairs(t *testing.T) {
	pairs := 0
	for _, s := range examples(t) {
		if len(s.Metamorphic) == 0 {
			continue
		}
		pairs += len(s.Metamorphic)
		m, err := Run(context.Background(), []*scenario.Scenario{s}, []string{Reference}, grade.Checks)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]*bool{}
		for _, c := range m.Cells {
			o := map[string]*bool{}
			for _, n := range outcome.Graded {
				o[string(n)] = c.Verdict.Metric(n)
			}
			out[c.Variant] = o
		}
		for _, v := range s.CheckMetamorphic(out) {
			t.Errorf("%s: %v", s.Name, v)
		}
	}
	if pairs < 3 {
		t.Fatalf("only %d metamorphic pairs in the examples", pairs)
	}
}
