package toolserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge serves a trial's tools over another MCP transport, for agents that
// only start MCP servers as subprocesses speaking stdio: it connects to the
// trial's streamable HTTP endpoint (url) as a client, offers the same tools
// (names, schemas, annotations, metadata) and instructions on t, and
// forwards every call unchanged. It returns when t's peer disconnects or
// ctx ends. `rebound mcp-stdio` runs it on stdin and stdout.
func Bridge(ctx context.Context, url string, t mcp.Transport) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "rebound-mcp-stdio", Version: "1"}, nil)
	up, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return fmt.Errorf("mcp-stdio: connecting to %s: %w", url, err)
	}
	defer up.Close()
	init := up.InitializeResult()
	srv := mcp.NewServer(&mcp.Implementation{Name: "rebound", Title: "rebound scenario tools", Version: "1"},
		&mcp.ServerOptions{Instructions: init.Instructions})
	for tool, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp-stdio: tools/list: %w", err)
		}
		name := tool.Name
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args any
			if req.Params != nil && len(req.Params.Arguments) > 0 {
				args = req.Params.Arguments
			}
			return up.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		})
	}
	sess, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp-stdio: %w", err)
	}
	return sess.Wait()
}
