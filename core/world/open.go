package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// The seam every caller builds a scenario's world through. A scenario's
// world reference (scenario.WorldRef) is resolved once into a definition:
// its tool catalog, its catalog version and how to build a world of it
// from an initial state. A built-in kind resolves to its registered Go
// world; a declared world (a YAML file the reference carries the content
// of) to the world that file describes (declared.go). Definitions are
// cached, so a trial pays for building its world, never for resolving
// the reference again.
//
// A new kind of reference (say, a world whose tools come from an upstream
// server) adds its fields to scenario.WorldRef and a case to resolve that
// returns its definition; nothing else changes: the dispatcher, the
// grader, lint and the loaders all go through Open, ToolsOf and VersionOf.

// Open builds the world a reference names from an initial state, and
// returns it with its tool catalog (shared: callers must not modify it).
// A world that holds an OS resource implements io.Closer; the caller
// closes it.
func Open(ref scenario.WorldRef, initial map[string]any) (harness.World, []harness.Tool, error) {
	d, err := resolve(ref)
	if err != nil {
		return nil, nil, err
	}
	w, err := d.build(initial)
	if err != nil {
		return nil, nil, err
	}
	return w, d.tools, nil
}

// ToolsOf returns the tool catalog of the world a reference names (shared:
// callers must not modify it).
func ToolsOf(ref scenario.WorldRef) ([]harness.Tool, error) {
	d, err := resolve(ref)
	if err != nil {
		return nil, err
	}
	return d.tools, nil
}

// VersionOf is the catalog version of the world a reference names,
// recorded on every trial: for a built-in kind CatalogVersion, for a
// declared world a hash that covers the file's whole content as well as
// the catalog it declares, so an edited world never compares silently with
// the old one.
func VersionOf(ref scenario.WorldRef) (string, error) {
	d, err := resolve(ref)
	if err != nil {
		return "", err
	}
	return d.version, nil
}

// definition is what a world reference resolves to.
type definition struct {
	tools   []harness.Tool
	version string
	build   func(initial map[string]any) (harness.World, error)
}

// definitions caches resolved references: by kind for built-in worlds,
// by file and content for declared ones. Only successful resolutions are
// kept. A worker lives for many sweeps; declared definitions are few (one
// per distinct world file content), and the cache is cleared past a bound.
var definitions = struct {
	sync.Mutex
	m map[defKey]*definition
}{m: map[defKey]*definition{}}

// defKey identifies a resolved reference.
type defKey struct{ kind, a, b string }

const maxDefinitions = 1024

// resolve returns the definition of a reference, cached.
func resolve(ref scenario.WorldRef) (*definition, error) {
	// A struct key: a declared world's content is never copied into a
	// concatenated key (a trial would pay for it).
	key := defKey{kind: "kind", a: ref.Name}
	switch {
	case ref.Declared():
		key = defKey{kind: "declared", a: ref.File, b: ref.Source}
	case ref.Name == scenario.UpstreamWorld:
		key = defKey{kind: "upstream", a: upstreamKey(ref)}
	}
	definitions.Lock()
	d, ok := definitions.m[key]
	definitions.Unlock()
	if ok {
		return d, nil
	}
	var err error
	switch {
	case ref.Declared():
		d, err = declaredDefinition(ref)
	case ref.Name == scenario.UpstreamWorld:
		d, err = upstreamDefinition(ref)
	default:
		d, err = builtinDefinition(ref.Name)
	}
	if err != nil {
		return nil, err
	}
	definitions.Lock()
	if len(definitions.m) >= maxDefinitions {
		clear(definitions.m)
	}
	definitions.m[key] = d
	definitions.Unlock()
	return d, nil
}

// builtinDefinition is a registered Go world.
func builtinDefinition(kind string) (*definition, error) {
	f, ok := registry[kind]
	if !ok {
		return nil, fmt.Errorf("unknown world %q (known: %s, or a declared world's file: ./worlds/NAME.yaml)", kind, strings.Join(Kinds(), ", "))
	}
	tools, err := Tools(kind)
	if err != nil {
		return nil, err
	}
	version, err := CatalogVersion(kind)
	if err != nil {
		return nil, err
	}
	return &definition{tools: tools, version: version, build: f}, nil
}

// versionOf hashes what identifies a declared world: its catalog and its
// file's content.
func versionOf(tools []harness.Tool, source string) (string, error) {
	b, err := json.Marshal(tools)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(source))
	return "d" + hex.EncodeToString(h.Sum(nil)[:6]), nil
}
