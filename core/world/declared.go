package world

import (
	"fmt"

	"rebound/core/scenario"
)

// declaredDefinition compiles a declared world's file.
func declaredDefinition(ref scenario.WorldRef) (*definition, error) {
	return nil, fmt.Errorf("world %s: declared worlds are not supported yet", ref.Name)
}
