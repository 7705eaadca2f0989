package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"rebound/core/harness"
)

// Catalog returns the tool metadata of the world a reference names (a
// built-in kind or a declared world file), keyed by tool name. The world
// package provides it (world.Catalog); scenario takes it as a parameter
// because it must not import world.
type Catalog func(ref WorldRef) (map[string]harness.Tool, error)

// ErrNoCatalog is returned by every loader given neither a catalog nor
// LoadOptions.NoCatalog: a loader that silently skipped the tool-name
// checks would accept a scenario that names a tool its world lacks.
var ErrNoCatalog = errors.New("scenario: the loader needs the worlds' tool catalog (world.Catalog), or LoadOptions.NoCatalog to load without one")

// CatalogOf builds a Catalog from a function that lists a world's tools.
func CatalogOf(tools func(ref WorldRef) ([]harness.Tool, error)) Catalog {
	return func(ref WorldRef) (map[string]harness.Tool, error) {
		list, err := tools(ref)
		if err != nil {
			return nil, err
		}
		out := make(map[string]harness.Tool, len(list))
		for _, t := range list {
			out[t.Name] = t
		}
		return out, nil
	}
}

// LoadOptions tunes loading.
type LoadOptions struct {
	// Catalog provides the worlds' tool metadata, for generated variants
	// and for checking tool names (world.Catalog). One of Catalog and
	// NoCatalog is required: loading with neither is ErrNoCatalog.
	Catalog Catalog
	// NoCatalog loads without a catalog: tool names are not checked and
	// generate is an error.
	NoCatalog bool
	// Context, when set, interrupts loading (Ctrl-C): checked before every
	// file.
	Context context.Context
	// Note, when set, receives remarks that are not problems (a default
	// that applies), located like errors; lint prints them.
	Note func(FieldError)
}

func (o LoadOptions) interrupted() error {
	if o.Context != nil {
		return o.Context.Err()
	}
	return nil
}

func (o LoadOptions) note(notes ...FieldError) {
	if o.Note != nil {
		for _, n := range notes {
			o.Note(n)
		}
	}
}

// check rejects options that say nothing about the catalog, and options
// that say both things.
func (o LoadOptions) check() error {
	switch {
	case o.NoCatalog && o.Catalog != nil:
		return errors.New("scenario: LoadOptions sets both Catalog and NoCatalog")
	case !o.NoCatalog && o.Catalog == nil:
		return ErrNoCatalog
	}
	return nil
}

// catalog is the catalog to load with (nil with NoCatalog); check has
// accepted o.
func (o LoadOptions) catalog() Catalog {
	if o.NoCatalog {
		return nil
	}
	return o.Catalog
}

// validateFallbacks checks one plan step's fallbacks.
func (s *Scenario) validateFallbacks(p string, st Step, offered, fields map[string]bool) []pathError {
	var errs []pathError
	add := func(path, format string, args ...any) {
		errs = append(errs, pathError{path: path, msg: fmt.Sprintf(format, args...)})
	}
	forbidden := map[string]bool{}
	for _, t := range s.Forbidden {
		forbidden[t] = true
	}
	seen := map[string]bool{}
	for j, fb := range st.Fallbacks {
		fp := fmt.Sprintf("%s.fallbacks[%d]", p, j)
		switch {
		case fb.Tool == "":
			add(fp+".tool", "required")
		case fb.Tool == st.Tool:
			add(fp+".tool", "a step cannot fall back to its own tool %q", fb.Tool)
		case !offered[fb.Tool]:
			add(fp+".tool", "tool %q is not offered by this scenario (tools: %s)", fb.Tool, strings.Join(s.Tools, ", "))
		case forbidden[fb.Tool]:
			add(fp+".tool", "tool %q is forbidden by this scenario: a fallback must be an authorized path", fb.Tool)
		case seen[fb.Tool]:
			add(fp+".tool", "duplicate fallback %q", fb.Tool)
		}
		seen[fb.Tool] = true
		for _, k := range slices.Sorted(maps.Keys(fb.Sets)) {
			if !fields[k] {
				add(fp+".sets."+k, "%q is not a declared claim field", k)
			}
		}
	}
	for j, rc := range st.Recover {
		rp := fmt.Sprintf("%s.recover[%d]", p, j)
		switch {
		case rc.Tool == "":
			add(rp+".tool", "required")
		case !offered[rc.Tool]:
			add(rp+".tool", "tool %q is not offered by this scenario (tools: %s)", rc.Tool, strings.Join(s.Tools, ", "))
		case forbidden[rc.Tool]:
			add(rp+".tool", "tool %q is forbidden by this scenario: a recovery action must be authorized", rc.Tool)
		}
		for _, k := range slices.Sorted(maps.Keys(rc.Sets)) {
			if !fields[k] {
				add(rp+".sets."+k, "%q is not a declared claim field", k)
			}
		}
	}
	return errs
}

// validateCatalog checks the scenario's tool names against its world's
// catalog.
func (s *Scenario) validateCatalog(catalog map[string]harness.Tool) []pathError {
	var errs []pathError
	known := func(name string) bool { _, ok := catalog[name]; return ok }
	list := strings.Join(slices.Sorted(maps.Keys(catalog)), ", ")
	for i, t := range s.Tools {
		if t != "" && !known(t) {
			errs = append(errs, pathError{fmt.Sprintf("tools[%d]", i), fmt.Sprintf("tool %q is not in the catalog of world %q (known: %s)", t, s.World, list)})
		}
	}
	for i, t := range s.Forbidden {
		if t != "" && !known(t) {
			errs = append(errs, pathError{fmt.Sprintf("forbidden[%d]", i), fmt.Sprintf("tool %q is not in the catalog of world %q (known: %s)", t, s.World, list)})
		}
	}
	// A declared alternative is an authorized path only when the scenario
	// grants what it needs: a fallback the provider will answer FORBIDDEN
	// is no path at all, and an agent that takes it must not be blamed for
	// escalating.
	granted := map[string]bool{}
	for _, p := range s.Permissions {
		granted[p] = true
	}
	for i, st := range s.Plan {
		for j, fb := range st.Fallbacks {
			if t, ok := catalog[fb.Tool]; ok && t.Permission != "" && !granted[t.Permission] {
				errs = append(errs, pathError{fmt.Sprintf("plan[%d].fallbacks[%d].tool", i, j), fmt.Sprintf("fallback %q needs permission %q, which the scenario does not grant (permissions: %s)", fb.Tool, t.Permission, strings.Join(s.Permissions, ", "))})
			}
		}
		for j, rc := range st.Recover {
			if t, ok := catalog[rc.Tool]; ok && t.Permission != "" && !granted[t.Permission] {
				errs = append(errs, pathError{fmt.Sprintf("plan[%d].recover[%d].tool", i, j), fmt.Sprintf("recovery action %q needs permission %q, which the scenario does not grant (permissions: %s)", rc.Tool, t.Permission, strings.Join(s.Permissions, ", "))})
			}
		}
	}
	return append(errs, s.validateArgSchemas(catalog)...)
}
