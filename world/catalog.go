package world

import (
	"io"

	"rebound/harness"
	"rebound/scenario"
)

// The scenario loader takes the worlds' tool catalogs as a parameter (the
// scenario package cannot import world). Every program that can run a trial
// links this package, so it provides them: generated variants expand and
// tool names are checked against the world wherever scenarios load.
func init() {
	scenario.DefaultCatalog = scenario.CatalogOf(Tools)
}

// Tools returns the tool metadata of a world kind.
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
