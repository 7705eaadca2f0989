package fileerr

import (
	"errors"
	"testing"
)

func TestFormatting(t *testing.T) {
	es := Errors{
		{File: "a.yaml", Line: 3, Col: 5, Field: "name", Msg: "required"},
		{File: "a.yaml", Msg: "empty document"},
	}
	if got := es.Error(); got != "a.yaml:3:5: name: required\na.yaml: empty document" {
		t.Fatalf("got %q", got)
	}
	if got := YAMLSyntax("b.yaml", errors.New("yaml: line 7: did not find expected key")); got.Line != 7 || got.Msg != "invalid YAML: did not find expected key" {
		t.Fatalf("got %+v", got)
	}
	if got := YAMLSyntax("b.yaml", errors.New("yaml: control characters are not allowed")); got.Line != 0 || got.Msg != "invalid YAML: control characters are not allowed" {
		t.Fatalf("got %+v", got)
	}
}
