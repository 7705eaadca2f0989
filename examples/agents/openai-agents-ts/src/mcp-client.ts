// A scripted client of rebound's MCP server built on the official TypeScript
// SDK (@modelcontextprotocol/sdk): it lists the tools, makes the calls given
// in MCP_CALLS (a JSON list of {"name", "arguments"}) in order, and prints
// one JSON line per step. rebound's tests run it as a command arm to prove
// that a client nobody here wrote sees the faults, the error fields and the
// claim the way the Go SDK does; it is also a starting point for a
// hand-written TypeScript agent.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

interface Step {
  name: string;
  arguments?: Record<string, unknown>;
}

async function main(): Promise<number> {
  const url = process.env.REBOUND_MCP_URL;
  if (!url) {
    console.error('REBOUND_MCP_URL is not set');
    return 1;
  }
  const steps = JSON.parse(process.env.MCP_CALLS ?? '[]') as Step[];
  const client = new Client({ name: 'rebound-ts-sdk-check', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const { tools } = await client.listTools();
    console.log(JSON.stringify({
      instructions: client.getInstructions(),
      tools: tools.map((t) => ({ name: t.name, title: t.title, meta: t._meta, readOnly: t.annotations?.readOnlyHint })),
    }));
    for (const step of steps) {
      const res = await client.callTool({ name: step.name, arguments: step.arguments ?? {} });
      const content = res.content as Array<{ type: string; text?: string }>;
      const text = content.length === 1 && content[0].type === 'text' ? content[0].text ?? '' : '';
      console.log(JSON.stringify({ name: step.name, isError: res.isError === true, content: JSON.parse(text), structured: res.structuredContent }));
    }
    return 0;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
