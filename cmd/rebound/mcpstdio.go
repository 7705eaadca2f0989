package main

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"rebound/core/toolserver"
)

const mcpStdioAbout = `Serves one trial's tools over MCP on stdin and stdout, for an agent that only
starts MCP servers as subprocesses: configure it in the agent as a stdio
server whose command is this one. It forwards every call to the trial's
streamable HTTP endpoint, $REBOUND_MCP_URL (which a command arm's process
receives), so the tools, faults, ledger and clock are the trial's own.

Example (an agent's MCP configuration, inside a command arm's process):
  {"command": "/path/to/rebound", "args": ["mcp-stdio"]}`

func newMCPStdioCmd() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "mcp-stdio [flags]",
		Short: "serve a trial's tools over MCP on stdin/stdout, for agents that start stdio MCP servers",
		Long:  mcpStdioAbout,
		Args:  exactArgs(0, "mcp-stdio takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return usagef("mcp-stdio needs --url or REBOUND_MCP_URL (rebound sets it for a command arm's process)")
			}
			return toolserver.Bridge(cmd.Context(), url, &mcp.StdioTransport{})
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the trial's MCP endpoint")
	fromEnv(cmd.Flags(), "url", "REBOUND_MCP_URL")
	return cmd
}
