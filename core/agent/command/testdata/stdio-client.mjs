// A command arm's agent that only starts MCP servers as subprocesses: it
// reads the ready-made server config rebound gives it (REBOUND_MCP_CONFIG)
// and starts that server with the official TypeScript SDK's
// StdioClientTransport, which gives the child a stripped environment (no
// REBOUND_* variables reach it). It prints the listing, then one JSON line
// per call of MCP_CALLS.
//
// Node's ESM loader resolves bare imports beside this file only (it
// ignores NODE_PATH), so the SDK is imported by its path (MCP_SDK_DIR).
const sdk = process.env.MCP_SDK_DIR;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

const server = JSON.parse(process.env.REBOUND_MCP_CONFIG).mcpServers.rebound;
// No env: the SDK's default, a stripped environment, as every client has it.
const transport = new StdioClientTransport({ command: server.command, args: server.args });
const client = new Client({ name: 'rebound-stdio-test', version: '1.0.0' });
await client.connect(transport);
const listed = await client.listTools();
console.log(JSON.stringify({ type: server.type, instructions: client.getInstructions(), tools: listed.tools.map((t) => t.name) }));
for (const c of JSON.parse(process.env.MCP_CALLS || '[]')) {
  const r = await client.callTool({ name: c.name, arguments: c.arguments });
  console.log(JSON.stringify({ name: c.name, isError: Boolean(r.isError), content: JSON.parse(r.content[0].text) }));
}
await client.close();
