package world

import (
	"reflect"
	"testing"

	"rebound/core/scenario"
)

// The seam builds a built-in world exactly as New does, with its catalog
// and catalog version.
func TestOpenBuiltin(t *testing.T) {
	ref := scenario.WorldRef{Name: "payments"}
	w, tools, err := Open(ref, map[string]any{"orders": map[string]any{"A-1": map[string]any{"amount_cents": 100}}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tools, w.Tools()) {
		t.Error("Open's catalog differs from the world's Tools()")
	}
	want, err := CatalogVersion("payments")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := VersionOf(ref); err != nil || v != want {
		t.Errorf("VersionOf = %q, %v; want %q", v, err, want)
	}
	if _, _, err := Open(scenario.WorldRef{Name: "nope"}, nil); err == nil {
		t.Error("an unknown kind opened")
	}
}
