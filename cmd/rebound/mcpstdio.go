package main

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/toolserver"
)

const mcpStdioAbout = `Serves one trial's tools over MCP on stdin and stdout, for an agent that only
starts MCP servers as subprocesses: configure it in the agent as a stdio
server whose command is this one. It forwards every call to the trial's
streamable HTTP endpoint, $REBOUND_MCP_URL (which a command arm's process
receives), so the tools, faults, ledger and clock are the trial's own.

Example (an agent's MCP configuration, inside a command arm's process):
  {"command": "/path/to/rebound", "args": ["mcp-stdio"]}`

func mcpStdioCmd(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("mcp-stdio", "rebound mcp-stdio [flags]", mcpStdioAbout, stderr)
	url := fs.String("url", os.Getenv("REBOUND_MCP_URL"), "the trial's MCP endpoint (default $REBOUND_MCP_URL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("mcp-stdio takes no arguments")
	}
	if *url == "" {
		return usagef("mcp-stdio needs --url or REBOUND_MCP_URL (rebound sets it for a command arm's process)")
	}
	return toolserver.Bridge(ctx, *url, &mcp.StdioTransport{})
}
