package main

import (
	"github.com/spf13/cobra"

	"rebound/core/toolserver"
)

const mcpStdioAbout = `Serves one trial's tools over MCP on stdin and stdout, for an agent that only
starts MCP servers as subprocesses: configure it in the agent as a stdio
server whose command is this one. It forwards every call to the trial's
streamable HTTP endpoint, --url (or $REBOUND_MCP_URL), so the tools,
faults, ledger and clock are the trial's own. Clients that start stdio
servers with a stripped environment (the TypeScript SDK, the Inspector)
pass no REBOUND_* variable on: give the URL as an argument. A command arm's
process receives the whole server config ready-made in
$REBOUND_MCP_CONFIG, and this binary's path in $REBOUND_BIN.
A bad frame (a line that is not JSON, or not a JSON-RPC message) is
answered with a JSON-RPC error (-32700 or -32600, id null) and the next
line is served as usual.

Example (an agent's MCP configuration, inside a command arm's process;
$REBOUND_MCP_CONFIG holds exactly this):
  {"mcpServers": {"rebound": {"type": "stdio", "command": "$REBOUND_BIN",
    "args": ["mcp-stdio", "--url", "$REBOUND_MCP_URL"]}}}`

func newMCPStdioCmd() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "mcp-stdio [flags]",
		Short: "serve a trial's tools over MCP on stdin/stdout, for agents that start stdio MCP servers",
		Long:  mcpStdioAbout,
		Args:  exactArgs(0, "mcp-stdio takes no arguments"),
		// stdout is the protocol stream: never filtered for a terminal.
		Annotations: map[string]string{rawAnnotation: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return usagef("mcp-stdio needs --url or REBOUND_MCP_URL (rebound sets it for a command arm's process)")
			}
			return toolserver.Bridge(cmd.Context(), url, &toolserver.LineTransport{Reader: cmd.InOrStdin(), Writer: cmd.OutOrStdout()})
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the trial's MCP endpoint")
	fromEnv(cmd.Flags(), "url", "REBOUND_MCP_URL")
	return cmd
}
