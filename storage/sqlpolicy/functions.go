package sqlpolicy

import (
	_ "embed"
	"sort"
	"strings"
)

// functionsFile is the allowlist: one function per line, "name kind", kind
// being scalar, aggregate or special (syntax the parser turns into a
// function node: lambda, exists, grouping). It is generated from the
// engine's catalog (system.functions) by the rules in
// storage/sqlpolicy_functions_test.go, which fails when the catalog of the
// engine rebound ships and this file disagree, so an engine upgrade that
// adds or moves a function is reviewed here, line by line, before the door
// lets it through.
//
//go:embed functions.txt
var functionsFile string

type kind uint8

const (
	scalar kind = iota + 1
	aggregate
	special
)

var allowed = func() map[string]kind {
	m := map[string]kind{}
	for _, line := range strings.Split(functionsFile, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, k, _ := strings.Cut(line, " ")
		switch k {
		case "aggregate":
			m[strings.ToLower(name)] = aggregate
		case "special":
			m[strings.ToLower(name)] = special
		default:
			m[strings.ToLower(name)] = scalar
		}
	}
	return m
}()

// combinators are the engine's aggregate function combinators
// (system.aggregate_function_combinators), longest first so that
// "MergeState" is not read as "State".
var combinators = func() []string {
	c := []string{"If", "Array", "Map", "SimpleState", "State", "Merge", "MergeState", "ForEach", "Distinct", "OrDefault", "OrNull", "Resample", "ArgMin", "ArgMax", "Null"}
	sort.Slice(c, func(i, j int) bool { return len(c[i]) > len(c[j]) })
	return c
}()

// Allowed reports whether the door lets a function of this name through:
// a name on the allowlist (compared without case: the engine resolves
// case-insensitive names and aliases, and the list test checks that no two
// functions differ only in case), or an allowed aggregate function with
// combinators (sumIf, quantilesExactOrNull, uniqArrayIf).
func Allowed(name string) bool {
	lower := strings.ToLower(name)
	if _, ok := allowed[lower]; ok {
		return true
	}
	for base := lower; ; {
		stripped := false
		for _, c := range combinators {
			lc := strings.ToLower(c)
			if len(base) > len(lc) && strings.HasSuffix(base, lc) {
				base = base[:len(base)-len(lc)]
				stripped = true
				break
			}
		}
		if !stripped {
			return false
		}
		if allowed[base] == aggregate {
			return true
		}
	}
}

// AllowedNames lists the allowlist's names as written in it (tests, docs).
func AllowedNames() []string {
	var out []string
	for _, line := range strings.Split(functionsFile, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		out = append(out, name)
	}
	return out
}
