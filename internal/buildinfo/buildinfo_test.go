package buildinfo

import (
	"encoding/json"
	"os/exec"
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "3fa2c1d4e5b6a7b8c9d0e1f2a3b4c5d6e7f8a9b0"},
		{Key: "vcs.time", Value: "2026-12-01T23:40:45Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name       string
		ver, rev   string
		bi         *debug.BuildInfo
		want       Info
		short, str string
	}{
		{"nothing known", "", "", nil,
			Info{Version: "devel", Revision: Unknown},
			"devel", "devel, revision unknown, built with "},
		{"toolchain stamp of a checkout", "", "", vcs,
			Info{Version: "devel", Revision: "3fa2c1d4e5b6a7b8c9d0e1f2a3b4c5d6e7f8a9b0", Time: "2026-12-01T23:40:45Z", Modified: true, GoVersion: "go1.26.8"},
			"devel+3fa2c1d4e5b6.modified", "devel, revision 3fa2c1d4e5b6a7b8c9d0e1f2a3b4c5d6e7f8a9b0 (modified), committed 2026-12-01T23:40:45Z, built with go1.26.8"},
		{"go install module@version", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			Info{Version: "v1.2.3", Revision: Unknown, GoVersion: "go1.26.8"},
			"v1.2.3", "v1.2.3, revision unknown, built with go1.26.8"},
		{"the linker wins", "v2.0.0", "abc", vcs,
			Info{Version: "v2.0.0", Revision: "abc", Time: "2026-12-01T23:40:45Z", Modified: true, GoVersion: "go1.26.8"},
			"v2.0.0+abc.modified", "v2.0.0, revision abc (modified), committed 2026-12-01T23:40:45Z, built with go1.26.8"},
	} {
		got := From(tc.ver, tc.rev, tc.bi)
		if tc.bi == nil {
			tc.want.GoVersion = got.GoVersion // runtime.Version()
			tc.str += got.GoVersion
		}
		if got != tc.want || got.Short() != tc.short || got.String() != tc.str {
			t.Errorf("%s: got %+v %q %q\nwant %+v %q %q", tc.name, got, got.Short(), got.String(), tc.want, tc.short, tc.str)
		}
	}
	if Get().GoVersion == "" || Get().Version == "" {
		t.Fatalf("Get: %+v", Get())
	}
}

// The variables make build and the Dockerfile set with -X exist under
// these names: a build with them prints what they say.
func TestLinkerStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	flags := "-X rebound/internal/buildinfo.version=v9.8.7 -X rebound/internal/buildinfo.revision=0123456789abcdef -X rebound/internal/buildinfo.modified=true"
	out, err := exec.Command("go", "run", "-ldflags", flags, "./testdata/stamp").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Version != "v9.8.7" || got.Revision != "0123456789abcdef" || !got.Modified || got.Short() != "v9.8.7+0123456789ab.modified" {
		t.Fatalf("stamped build: %+v", got)
	}
}
