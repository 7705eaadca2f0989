package endpoint

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		base, env, model string
		want             string // joined problems
	}{
		{"http://127.0.0.1:8000/v1", "OPENAI_API_KEY", "m", ""},
		{"https://h/v1", "", "m", ""},
		{"", "", "", "base_url: required (an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1); model: required"},
		{"ftp://h", "", "m", `base_url: "ftp://h" is not an http(s) URL`},
		{"http://user:pw@h/v1", "", "m", "base_url: must not carry credentials"},
		{"http://h/v1", "sk-abc123", "m", "api_key_env: must be the NAME of an environment variable"},
	}
	for _, tc := range cases {
		var got []string
		for _, p := range Check(tc.base, tc.env, tc.model) {
			got = append(got, p.String())
		}
		joined := strings.Join(got, "; ")
		if (tc.want == "") != (joined == "") || !strings.HasPrefix(joined, tc.want) {
			t.Errorf("Check(%q, %q, %q) = %q, want prefix %q", tc.base, tc.env, tc.model, joined, tc.want)
		}
	}
}
