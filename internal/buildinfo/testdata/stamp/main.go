// Command stamp prints the build info as JSON: the test of the linker
// flags make build and the Dockerfile pass.
package main

import (
	"encoding/json"
	"os"

	"rebound/internal/buildinfo"
)

func main() { _ = json.NewEncoder(os.Stdout).Encode(buildinfo.Get()) }
