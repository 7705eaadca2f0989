package scenario

import (
	"path/filepath"
	"strings"

	"rebound/internal/fileerr"
)

// MaxWorldBytes bounds a declared world file.
const MaxWorldBytes = 1 << 20

// WorldRef is what a scenario says about its world, resolved: a built-in
// kind ("payments"), or a declared world, a YAML file named relative to
// the scenario's directory ("./worlds/support-desk.yaml"). The loader reads
// a declared world's file once and the scenario carries its content, so a
// worker with no access to the files builds the same world, and a changed
// file never passes silently for the one the scenario was loaded with.
// core/world turns a reference into a world and its catalog (world.Open).
type WorldRef struct {
	// Name is the scenario's world: value as written.
	Name string
	// File is a declared world's file, resolved against the scenario's
	// directory; empty for a built-in kind.
	File string
	// Source is a declared world's file content as the loader read it.
	Source string
	// Upstream is a world: mcp scenario's upstream (its Dir resolved).
	Upstream *Upstream
}

// Declared reports whether the reference names a declared world file.
func (r WorldRef) Declared() bool { return IsWorldFile(r.Name) }

// IsWorldFile reports whether a world: value names a declared world's
// file (a path: it holds a slash, or ends in .yaml or .yml) rather than a
// built-in kind (a bare name).
func IsWorldFile(name string) bool {
	if strings.ContainsAny(name, `/\`) {
		return true
	}
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// WorldRef returns the scenario's world reference.
func (s *Scenario) WorldRef() WorldRef {
	return WorldRef{Name: s.World, File: s.WorldFile, Source: s.WorldSource, Upstream: s.Upstream}
}

// resolveWorld reads the declared world file a scenario loaded from file
// names (relative to the scenario's directory) into WorldFile and
// WorldSource. A built-in kind needs nothing.
func (s *Scenario) resolveWorld(file string) []pathError {
	s.resolveUpstream(file)
	if !IsWorldFile(s.World) {
		return nil
	}
	path := filepath.FromSlash(s.World)
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	data, err := fileerr.ReadRegular(path, MaxWorldBytes, "world file")
	if err != nil {
		return []pathError{{path: "world", msg: err.Error()}}
	}
	s.WorldFile, s.WorldSource = path, string(data)
	return nil
}
