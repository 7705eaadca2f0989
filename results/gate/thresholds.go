package gate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/internal/fileerr"
	"rebound/internal/strictyaml"
	"rebound/results/report"
)

// DefaultConfidence is used when the file sets none.
const DefaultConfidence = 0.95

// Threshold is the rule for one metric.
type Threshold struct {
	Metric string
	// Rule is report.RuleMaxIncrease (for metrics where lower is better) or
	// report.RuleMaxDecrease (higher is better); Limit the allowed change as
	// a fraction (0.02 = 2 percentage points).
	Rule  string
	Limit float64
	// Blocking thresholds fail the gate (exit 1) and form the Holm family;
	// the others only warn.
	Blocking bool
	// MinPairs > 0 requires at least that many pairs; fewer is a failure
	// (blocking) or a warning, so a gate cannot pass on no data.
	MinPairs int
	// Weighted decides on the consequence-weighted paired difference.
	Weighted bool
	Line     int // where the metric is defined in the file
}

// Thresholds is a parsed thresholds file.
type Thresholds struct {
	File       string
	Confidence float64
	Metrics    []Threshold // in the file's order
}

// FieldError is one problem in a thresholds file, at a line and column,
// naming the field; Errors is every problem found.
type (
	FieldError = fileerr.FieldError
	Errors     = fileerr.Errors
)

// MaxThresholdsBytes bounds a thresholds file (a few lines in practice).
const MaxThresholdsBytes = 1 << 20

// Load reads and validates a thresholds file: a regular file of at most
// MaxThresholdsBytes (a device such as /dev/zero, a pipe or a directory is
// refused before anything is read).
func Load(path string) (Thresholds, error) {
	data, err := fileerr.ReadRegular(path, MaxThresholdsBytes, "thresholds file")
	if err != nil {
		return Thresholds{}, err
	}
	return Parse(path, data)
}

// Parse decodes and validates thresholds YAML; file names the source in
// errors. Every problem is reported (an Errors value), each with its line,
// column and field.
func Parse(file string, data []byte) (Thresholds, error) {
	th := Thresholds{File: file, Confidence: DefaultConfidence}
	// strictyaml: the encoding checked, one document, aliases and merge
	// keys expanded, no key twice (reported with the rest).
	root, errs := strictyaml.Parse(file, data)
	if root == nil {
		return th, errs
	}
	p := parser{file: file, errs: errs}
	if len(root.Content) == 0 {
		return th, Errors{{File: file, Line: 1, Col: 1, Msg: "empty file: expected a 'metrics' map (see examples/gates/)"}}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return th, Errors{p.at(doc, "", "expected a map with 'metrics' and optionally 'confidence'")}
	}
	var metricsNode *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "metrics":
			metricsNode = v
		case "confidence":
			if c, ok := p.float(v, "confidence"); ok {
				if !(c > 0 && c < 1) {
					p.errorf(v, "confidence", "must lie strictly between 0 and 1 (e.g. 0.95), got %s", v.Value)
				} else {
					th.Confidence = c
				}
			}
		default:
			p.errorf(k, k.Value, "unknown field (known: metrics, confidence)")
		}
	}
	switch {
	case metricsNode == nil:
		p.errs = append(p.errs, p.at(doc, "metrics", "missing: name at least one metric with max_increase or max_decrease"))
	case metricsNode.Kind != yaml.MappingNode:
		p.errorf(metricsNode, "metrics", "expected a map of metric name to rule")
	case len(metricsNode.Content) == 0:
		p.errorf(metricsNode, "metrics", "empty: name at least one metric")
	default:
		for i := 0; i+1 < len(metricsNode.Content); i += 2 {
			k, v := metricsNode.Content[i], metricsNode.Content[i+1]
			if t, ok := p.threshold(k, v); ok {
				th.Metrics = append(th.Metrics, t)
			}
		}
	}
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool {
			a, b := p.errs[i], p.errs[j]
			return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
		})
		return th, p.errs
	}
	return th, nil
}

type parser struct {
	file string
	errs Errors
}

func (p *parser) at(n *yaml.Node, field, msg string) FieldError {
	return FieldError{File: p.file, Line: n.Line, Col: n.Column, Field: field, Msg: msg + strictyaml.ViaNote(n)}
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, p.at(n, field, fmt.Sprintf(format, args...)))
}

func (p *parser) float(n *yaml.Node, field string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errorf(n, field, "expected a number, got %q", n.Value)
		return 0, false
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.errorf(n, field, "expected a finite number, got %q", n.Value)
		return 0, false
	}
	return f, true
}

func knownMetric(m string) bool { return report.KnownMetric(m) }

func (p *parser) threshold(k, v *yaml.Node) (Threshold, bool) {
	name := k.Value
	field := "metrics." + name
	t := Threshold{Metric: name, Line: k.Line}
	ok := true
	if !knownMetric(name) {
		p.errorf(k, field, "unknown metric (known: %s)", strings.Join(report.MetricNames(), ", "))
		ok = false
	}
	if v.Kind != yaml.MappingNode {
		p.errorf(v, field, "expected a map such as {max_increase: 0} or {max_decrease: 0.02, blocking: true}")
		return t, false
	}
	rules := 0
	for i := 0; i+1 < len(v.Content); i += 2 {
		fk, fv := v.Content[i], v.Content[i+1]
		sub := field + "." + fk.Value
		switch fk.Value {
		case report.RuleMaxIncrease, report.RuleMaxDecrease:
			rules++
			f, good := p.float(fv, sub)
			if !good {
				ok = false
				continue
			}
			if f < 0 || f > 1 {
				p.errorf(fv, sub, "must be a fraction between 0 and 1 (0.02 = 2 percentage points), got %s", fv.Value)
				ok = false
				continue
			}
			t.Rule, t.Limit = fk.Value, f
			if knownMetric(name) {
				higher := report.HigherIsBetter(name)
				switch {
				case higher && fk.Value == report.RuleMaxIncrease:
					p.errorf(fk, sub, "%s is better when higher, so a regression is a decrease: use max_decrease", name)
					ok = false
				case !higher && fk.Value == report.RuleMaxDecrease:
					p.errorf(fk, sub, "%s is better when lower, so a regression is an increase: use max_increase", name)
					ok = false
				}
			}
		case "blocking", "weighted":
			if fv.Kind != yaml.ScalarNode || fv.Tag != "!!bool" {
				p.errorf(fv, sub, "expected true or false, got %q", fv.Value)
				ok = false
				continue
			}
			on := fv.Value == "true" || fv.Value == "True" || fv.Value == "TRUE"
			if fk.Value == "blocking" {
				t.Blocking = on
			} else {
				t.Weighted = on
			}
		case "min_pairs":
			n, err := strconv.Atoi(fv.Value)
			if fv.Kind != yaml.ScalarNode || fv.Tag != "!!int" || err != nil || n < 0 {
				p.errorf(fv, sub, "expected a whole number ≥ 0, got %q", fv.Value)
				ok = false
				continue
			}
			t.MinPairs = n
		default:
			p.errorf(fk, sub, "unknown field (known: max_increase, max_decrease, blocking, weighted, min_pairs)")
			ok = false
		}
	}
	switch {
	case rules == 0:
		p.errorf(k, field, "needs max_increase (lower is better) or max_decrease (higher is better)")
		ok = false
	case rules > 1:
		p.errorf(k, field, "set one of max_increase and max_decrease, not both")
		ok = false
	}
	return t, ok
}

// ErrNothingToCompare is returned by Evaluate when no case was graded in
// both arms: a gate never passes on no data.
var ErrNothingToCompare = errors.New("gate: no case was graded in both arms; nothing to compare")
