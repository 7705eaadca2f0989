package main

import (
	"encoding/json"
	"strings"
	"testing"

	"rebound/internal/buildinfo"
)

// rebound --version and rebound version print the build's stamp; --output
// json gives it to machines.
func TestVersion(t *testing.T) {
	bi := buildinfo.Get()
	want := "rebound " + bi.String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || out != want || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, want %q\nstderr: %s", args, code, out, want, errOut)
		}
	}
	code, out, _ := runCLI(t, "version", "--output", "json")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got != bi {
		t.Fatalf("version --output json: exit %d, %v: %s", code, err, out)
	}
	if !strings.Contains(out, `"go_version":`) || !strings.Contains(out, `"revision":`) {
		t.Fatalf("version --output json: %s", out)
	}
	if code, _, errOut := runCLI(t, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "version takes no arguments") {
		t.Fatalf("version extra: exit %d %s", code, errOut)
	}
}
