// Package fileerr is how rebound reports a problem in an input file (a
// scenario, a plan, a gate's thresholds): located at file:line:column and
// naming the field, every problem at once.
package fileerr

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// FieldError is one problem in a file, located at a line and column,
// naming the field.
type FieldError struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
}

func (e FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one or more files.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// LineRe matches the "line N: message" form of yaml.v3's messages.
var LineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// YAMLSyntax locates a YAML syntax error reported by yaml.v3.
func YAMLSyntax(file string, err error) FieldError {
	msg := err.Error()
	if m := LineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return FieldError{File: file, Line: line, Col: 1, Msg: "invalid YAML: " + m[2]}
	}
	return FieldError{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}
