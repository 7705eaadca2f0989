package world

import (
	"io"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// Catalog is the worlds' tool catalog for the scenario loader, which takes
// it as a parameter (the scenario package cannot import world): pass it to
// scenario.LoadPlan, LoadScenario and ParseScenario so that generated
// variants expand and tool names are checked against the world, built-in
// or declared (ToolsOf).
var Catalog = scenario.CatalogOf(ToolsOf)

// Tools returns the tool metadata of a built-in world kind; ToolsOf takes
// any world reference.
func Tools(kind string) ([]harness.Tool, error) {
	w, err := New(kind, nil)
	if err != nil {
		return nil, err
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	return w.Tools(), nil
}
