package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rebound/internal/buildinfo"
)

const versionAbout = `Prints the build of this binary: the module version, the VCS revision it
was built from (and whether the tree was modified), the commit time and the
Go toolchain. 'rebound --version' prints the same on one line. A worker
exports it too: the rebound_build_info metric and the service.version of
its OpenTelemetry resource.

Example:
  rebound version
  rebound version --output json`

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [flags]",
		Short: "the build of this binary: version, revision, Go toolchain",
		Long:  versionAbout,
		Args:  exactArgs(0, "version takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Get()
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), bi, false)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "rebound %s\n", bi)
			return err
		},
	}
	outputFlag(cmd.Flags(), &output)
	return cmd
}
