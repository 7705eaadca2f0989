package scenario

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Matrix expands one LLM arm over models x prompt revisions x sampling
// settings: the cross product, minus explicit excludes, becomes named arms
// beside the plan's own.
//
//	matrix:
//	  base: {agent: llm, llm: {base_url: ..., api_key_env: OPENAI_API_KEY, max_turns: 24}}
//	  models: [gpt-4o-2024-08-06, gpt-4o-mini]
//	  prompts: [../prompts/recovery-v1.md, ../prompts/recovery-v2.md]
//	  temperatures: [0, 0.7]
//	  exclude:
//	    - {model: gpt-4o-mini, temperature: 0.7}
//
// Arms are named after the axes that vary ("gpt-4o-mini/recovery-v2/t0.7"),
// or by the name template ("{model}-{prompt}"), and carry their axis values
// (Arm.Axes), so reports can group by model, prompt or setting.
type Matrix struct {
	// Name is an optional template over {model}, {prompt}, {temperature}
	// and {top_p}.
	Name         string           `json:"name,omitempty" yaml:"name,omitempty"`
	Base         Arm              `json:"base" yaml:"base"`
	Models       []string         `json:"models,omitempty" yaml:"models,omitempty"`
	Prompts      []string         `json:"prompts,omitempty" yaml:"prompts,omitempty"`
	Temperatures []float64        `json:"temperatures,omitempty" yaml:"temperatures,omitempty"`
	TopPs        []float64        `json:"top_ps,omitempty" yaml:"top_ps,omitempty"`
	Exclude      []map[string]any `json:"exclude,omitempty" yaml:"exclude,omitempty"`
}

// The matrix axes, in naming order.
const (
	AxisModel       = "model"
	AxisPrompt      = "prompt"
	AxisTemperature = "temperature"
	AxisTopP        = "top_p"
)

var matrixAxes = []string{AxisModel, AxisPrompt, AxisTemperature, AxisTopP}

// axisValues lists one axis's values as strings (nil: the axis is not
// swept and the base arm's setting stands).
func (m *Matrix) axisValues(axis string) []string {
	switch axis {
	case AxisModel:
		return m.Models
	case AxisPrompt:
		return m.Prompts
	case AxisTemperature:
		return floats(m.Temperatures)
	case AxisTopP:
		return floats(m.TopPs)
	}
	return nil
}

func floats(fs []float64) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return out
}

// Expand returns the matrix's arms; errors carry "matrix..." paths.
func (m *Matrix) Expand() ([]Arm, []pathError) {
	var errs []pathError
	add := func(path, format string, args ...any) {
		errs = append(errs, pathError{path, fmt.Sprintf(format, args...)})
	}
	if m.Base.Agent != AgentLLM {
		add("matrix.base.agent", "a matrix expands an arm with agent: %s", AgentLLM)
		return nil, errs
	}
	if m.Base.LLM == nil {
		add("matrix.base.llm", "the base arm needs its llm settings (base_url, and model/prompt unless the matrix sweeps them)")
		return nil, errs
	}
	var axes []string
	for _, ax := range matrixAxes {
		vals := m.axisValues(ax)
		seen := map[string]bool{}
		for _, v := range vals {
			if seen[v] {
				add("matrix."+axisField(ax), "duplicate value %q", v)
			}
			seen[v] = true
		}
		if len(vals) > 0 {
			axes = append(axes, ax)
		}
	}
	if len(axes) == 0 {
		add("matrix", "sweep at least one axis: models, prompts, temperatures or top_ps")
		return nil, errs
	}
	used := make([]bool, len(m.Exclude))
	for i, ex := range m.Exclude {
		for k, v := range ex {
			if !containsString(axes, k) {
				add(fmt.Sprintf("matrix.exclude[%d].%s", i, k), "not a swept axis (swept: %s)", strings.Join(axes, ", "))
			} else if !containsString(m.axisValues(k), fmt.Sprint(v)) {
				add(fmt.Sprintf("matrix.exclude[%d].%s", i, k), "%q is not one of the axis's values", fmt.Sprint(v))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// The name shows the axes that vary; a one-value axis says nothing.
	var varying []string
	for _, ax := range axes {
		if len(m.axisValues(ax)) > 1 {
			varying = append(varying, ax)
		}
	}
	if len(varying) == 0 {
		varying = axes[:1]
	}
	var out []Arm
	var walk func(i int, pick map[string]string)
	walk = func(i int, pick map[string]string) {
		if i == len(axes) {
			for j, ex := range m.Exclude {
				if excludes(ex, pick) {
					used[j] = true
					return
				}
			}
			out = append(out, m.arm(pick, varying))
			return
		}
		for _, v := range m.axisValues(axes[i]) {
			next := map[string]string{}
			for k, x := range pick {
				next[k] = x
			}
			next[axes[i]] = v
			walk(i+1, next)
		}
	}
	walk(0, map[string]string{})
	for i, u := range used {
		if !u {
			add(fmt.Sprintf("matrix.exclude[%d]", i), "excludes no combination")
		}
	}
	if len(out) == 0 {
		add("matrix.exclude", "every combination is excluded")
	}
	return out, errs
}

func axisField(axis string) string {
	switch axis {
	case AxisModel:
		return "models"
	case AxisPrompt:
		return "prompts"
	case AxisTemperature:
		return "temperatures"
	}
	return "top_ps"
}

func excludes(ex map[string]any, pick map[string]string) bool {
	for k, v := range ex {
		if pick[k] != fmt.Sprint(v) {
			return false
		}
	}
	return len(ex) > 0
}

// arm builds one arm of the matrix from the base and the axis values.
func (m *Matrix) arm(pick map[string]string, varying []string) Arm {
	a := m.Base
	llm := *m.Base.LLM
	a.LLM = &llm
	a.Axes = map[string]string{}
	for ax, v := range pick {
		switch ax {
		case AxisModel:
			llm.Model = v
		case AxisPrompt:
			llm.Prompt = v
		case AxisTemperature:
			f, _ := strconv.ParseFloat(v, 64)
			llm.Temperature = &f
		case AxisTopP:
			f, _ := strconv.ParseFloat(v, 64)
			llm.TopP = &f
		}
		a.Axes[ax] = axisLabel(ax, v)
	}
	if m.Name != "" {
		name := m.Name
		for _, ax := range matrixAxes {
			name = strings.ReplaceAll(name, "{"+ax+"}", a.Axes[ax])
		}
		a.Name = name
	} else {
		parts := make([]string, 0, len(varying))
		for _, ax := range varying {
			label := a.Axes[ax]
			switch ax {
			case AxisTemperature:
				label = "t" + label
			case AxisTopP:
				label = "p" + label
			}
			parts = append(parts, label)
		}
		a.Name = strings.Join(parts, "/")
	}
	return a
}

// axisLabel is how an axis value reads in names and reports: a prompt by
// its file name without the extension.
func axisLabel(axis, v string) string {
	if axis == AxisPrompt {
		return strings.TrimSuffix(filepath.Base(v), filepath.Ext(v))
	}
	return v
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// AxisNames lists the axes the arms of a plan carry, sorted.
func AxisNames(arms []Arm) []string {
	seen := map[string]bool{}
	for _, a := range arms {
		for ax := range a.Axes {
			seen[ax] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ax := range seen {
		out = append(out, ax)
	}
	sort.Strings(out)
	return out
}
