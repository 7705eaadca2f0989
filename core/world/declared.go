package world

import (
	"fmt"

	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world/declared"
	"rebound/internal/fileerr"
)

// declaredDefinition compiles a declared world's file (its content as the
// scenario carries it; File names it in errors, which are located at
// file:line:column).
func declaredDefinition(ref scenario.WorldRef) (*definition, error) {
	if ref.File == "" {
		return nil, fmt.Errorf("world %s: a declared world is built from the file's content, which this scenario does not carry (load the scenario from its file)", ref.Name)
	}
	d, err := declared.Parse(ref.File, []byte(ref.Source))
	if err != nil {
		return nil, err
	}
	version, err := versionOf(d.Tools(), ref.Source)
	if err != nil {
		return nil, err
	}
	return &definition{tools: d.Tools(), version: version, build: func(initial map[string]any) (harness.World, error) {
		return d.New(initial)
	}}, nil
}

// InitialError is a scenario's initial state that does not fit its
// declared world's state schema, with the path within it.
type InitialError = declared.InitialError

// CheckFile checks a declared world's file on its own (rebound scenario
// lint WORLD.yaml): every problem, located at file:line:column.
func CheckFile(path string) error {
	data, err := fileerr.ReadRegular(path, scenario.MaxWorldBytes, "world file")
	if err != nil {
		return err
	}
	_, err = declared.Parse(path, data)
	return err
}
