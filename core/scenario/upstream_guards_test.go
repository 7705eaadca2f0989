package scenario

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// An upstream tool declares what it reaches beyond its own permission
// (upstream.tools.X.guards), like a declared world's tool; an empty entry
// names nothing and is refused where it stands.
func TestUpstreamToolGuards(t *testing.T) {
	const file = "../../examples/upstreams/scenarios/fs-notes-edit.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const tool = "    read_text_file: {latency_ms: 20, deadline_ms: 1000}"
	if !strings.Contains(string(data), tool) {
		t.Fatalf("%s no longer declares read_text_file as this test expects", file)
	}
	for _, tc := range []struct {
		name, guards, wantErr string
		want                  []string
	}{
		{name: "one permission", guards: "[notes.admin]", want: []string{"notes.admin"}},
		{name: "an empty entry", guards: `[""]`, wantErr: "upstream.tools.read_text_file.guards[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(string(data), tool, "    read_text_file: {latency_ms: 20, deadline_ms: 1000, guards: "+tc.guards+"}", 1)
			sc, err := ParseScenarioWith(file, []byte(src), LoadOptions{NoCatalog: true})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Upstream.Tools["read_text_file"].Guards; !slices.Equal(got, tc.want) {
				t.Errorf("guards = %v, want %v", got, tc.want)
			}
		})
	}
}
