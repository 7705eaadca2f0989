package harness

import (
	"reflect"
	"testing"
)

func TestDecodeArgs(t *testing.T) {
	cases := []struct {
		in      string
		want    map[string]any
		wantErr string
	}{
		{"", map[string]any{}, ""},
		{"  null ", map[string]any{}, ""},
		{"{}", map[string]any{}, ""},
		{`{"a": 1, "b": "x"}`, map[string]any{"a": float64(1), "b": "x"}, ""},
		{`[1]`, nil, "json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{`{"a": 1} {"b": 2}`, nil, "trailing content after the object"},
		{`{"a": `, nil, "unexpected EOF"},
	}
	for _, tc := range cases {
		got, err := DecodeArgs([]byte(tc.in))
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("DecodeArgs(%q) error = %v, want %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("DecodeArgs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
