// Package buildinfo says which build of rebound is running: the module
// version and the VCS revision it was built from. Plain Go, no I/O.
//
// Two sources, the first that knows wins:
//
//   - the linker: `go build -ldflags "-X rebound/internal/buildinfo.version=v1.2.3
//     -X rebound/internal/buildinfo.revision=<commit>
//     -X rebound/internal/buildinfo.modified=true"` (make build and the
//     image's Dockerfile do this, so a build from a tree without .git, or
//     with -buildvcs=false, is still stamped);
//   - the Go toolchain's own stamp (runtime/debug.ReadBuildInfo): the
//     module version of `go install rebound/cmd/rebound@v1.2.3`, and
//     vcs.revision, vcs.time and vcs.modified of a build inside a git
//     checkout.
//
// What neither knows is "unknown": never a guess.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by the linker (-X); empty otherwise. modified is "true" for a tree
// with uncommitted changes.
var (
	version  string
	revision string
	modified string
)

// Unknown is what a field no source knows holds.
const Unknown = "unknown"

// Info is one build's stamp. Its JSON is what `rebound version --output
// json` prints.
type Info struct {
	// Version is the module version (v1.2.3, or a pseudo-version), or
	// "devel" for a build of a checkout that was not given one.
	Version string `json:"version"`
	// Revision is the VCS commit, or "unknown".
	Revision string `json:"revision"`
	// Time is the commit's time (RFC 3339) when the toolchain stamped it.
	Time string `json:"time,omitempty"`
	// Modified says the tree had uncommitted changes (toolchain stamp only).
	Modified bool `json:"modified"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get returns the running binary's stamp.
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = From(version, revision, bi)
		if modified == "true" {
			info.Modified = true
		}
	})
	return info
}

// From builds the stamp from the linker's values (which win) and the
// toolchain's build info (nil when the binary has none).
func From(linkVersion, linkRevision string, bi *debug.BuildInfo) Info {
	i := Info{Version: linkVersion, Revision: linkRevision, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Revision == "" {
					i.Revision = s.Value
				}
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Revision == "" {
		i.Revision = Unknown
	}
	return i
}

// Short is the version with the revision's first 12 characters as
// semver build metadata: "v1.2.3+3fa2c1d4e5b6", "devel+3fa2c1d4e5b6.modified",
// or the version alone when the revision is unknown. It is the OTel
// resource's service.version and what a stored sweep records.
func (i Info) Short() string {
	if i.Revision == Unknown {
		return i.Version
	}
	rev := i.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if i.Modified {
		rev += ".modified"
	}
	return i.Version + "+" + rev
}

// String is the one-line answer of `rebound --version`.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString(", revision ")
	b.WriteString(i.Revision)
	if i.Modified {
		b.WriteString(" (modified)")
	}
	if i.Time != "" {
		b.WriteString(", committed ")
		b.WriteString(i.Time)
	}
	b.WriteString(", built with ")
	b.WriteString(i.GoVersion)
	return b.String()
}
