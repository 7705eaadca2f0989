package scenario

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func writeMatrixPlan(t *testing.T, matrix string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"v1.md", "v2.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("You are a careful agent ("+f+")."), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := filepath.Abs("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := "name: m\nscenarios: [" + sc + "]\nseeds: 2\narms:\n  - {name: careful, agent: careful}\n" + matrix
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const baseMatrix = `matrix:
  base: {agent: llm, llm: {base_url: "http://127.0.0.1:1/v1", max_turns: 8}}
  models: [model-a, model-b]
  prompts: [v1.md, v2.md]
  temperatures: [0, 0.7]
`

func TestMatrixExpandsTheCrossProductMinusExcludes(t *testing.T) {
	path := writeMatrixPlan(t, baseMatrix+"  exclude:\n    - {model: model-b, temperature: 0.7}\n")
	r, err := LoadPlanWith(path, LoadOptions{NoCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range r.Arms {
		names = append(names, a.Name)
	}
	want := []string{"careful", "model-a/v1/t0", "model-a/v1/t0.7", "model-a/v2/t0", "model-a/v2/t0.7", "model-b/v1/t0", "model-b/v2/t0"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("arms = %v, want %v", names, want)
	}
	a := r.Arms[4] // model-a/v2/t0.7
	if a.LLM.Model != "model-a" || *a.LLM.Temperature != 0.7 || a.LLM.PromptHash == "" || !strings.Contains(a.LLM.PromptText, "v2.md") || a.LLM.MaxTurns != 8 {
		t.Fatalf("arm %s = %+v", a.Name, *a.LLM)
	}
	if a.Axes["model"] != "model-a" || a.Axes["prompt"] != "v2" || a.Axes["temperature"] != "0.7" {
		t.Fatalf("axes = %v", a.Axes)
	}
	// The arms share nothing mutable: one arm's settings are its own.
	if r.Arms[1].LLM == r.Arms[2].LLM || *r.Arms[1].LLM.Temperature == *r.Arms[2].LLM.Temperature {
		t.Fatalf("arms share their settings")
	}
	if got := AxisNames(r.Arms); strings.Join(got, ",") != "model,prompt,temperature" {
		t.Fatalf("axes = %v", got)
	}
	if r.TrialCount() != 7*2*len(r.Scenarios[0].Variants) {
		t.Fatalf("trial count %d", r.TrialCount())
	}
}

func TestMatrixNameTemplate(t *testing.T) {
	path := writeMatrixPlan(t, baseMatrix+"  name: \"{prompt}@{model}~{temperature}\"\n")
	r, err := LoadPlanWith(path, LoadOptions{NoCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range r.Arms[1:] {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	if names[0] != "v1@model-a~0" || len(names) != 8 {
		t.Fatalf("names = %v", names)
	}
}

func TestMatrixErrorsPointAtTheMatrix(t *testing.T) {
	cases := []struct {
		name, matrix, want string
	}{
		{"exclude on an unswept axis", baseMatrix + "  exclude:\n    - {top_p: 0.5}\n", "matrix.exclude[0].top_p: not a swept axis"},
		{"exclude of an unknown value", baseMatrix + "  exclude:\n    - {model: model-c}\n", `matrix.exclude[0].model: "model-c" is not one of`},
		{"nothing swept", "matrix:\n  base: {agent: llm, llm: {base_url: \"http://127.0.0.1:1/v1\", model: m, prompt: v1.md}}\n", "sweep at least one axis"},
		{"not an llm base", "matrix:\n  base: {agent: careful}\n  models: [a]\n", "a matrix expands an arm with agent: llm"},
		{"duplicate value", strings.Replace(baseMatrix, "[model-a, model-b]", "[model-a, model-a]", 1), `matrix.models: duplicate value "model-a"`},
		{"a missing prompt file", strings.Replace(baseMatrix, "[v1.md, v2.md]", "[v1.md, v3.md]", 1), "matrix.prompts: cannot read prompt file"},
		{"a template that collides", baseMatrix + "  name: \"{model}\"\n", "is used twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadPlanWith(writeMatrixPlan(t, tc.matrix), LoadOptions{NoCatalog: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// The shipped example expands to its documented six LLM arms.
func TestMatrixExample(t *testing.T) {
	r, err := LoadPlanWith("../../examples/plans/prompt-matrix.yaml", LoadOptions{NoCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Arms) != 1+6 || r.Arms[1].Name != "llama3.1:8b/recovery-v1/t0" {
		t.Fatalf("arms: %d, first %q", len(r.Arms), r.Arms[1].Name)
	}
}
