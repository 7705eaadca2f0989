// An agent built on the OpenAI Agents SDK, unchanged except for where its
// tools come from: rebound's per-trial MCP server. rebound runs it once per
// trial as a command arm (see ../../plans/agents-sdk.yaml) and grades what
// it did through the harness's ledger and the claim it submits.
//
// Environment:
//   REBOUND_MCP_URL    the trial's MCP endpoint (streamable HTTP), from rebound
//   REBOUND_GOAL       the task, from rebound
//   REBOUND_TRIAL_ID   the trial's id, stable across retries, from rebound
//   OPENAI_BASE_URL    any OpenAI-compatible endpoint (default: OpenAI)
//   OPENAI_API_KEY     its key (pass it with the arm's env_from, never env)
//   OPENAI_MODEL       the model (default gpt-4.1-mini)
//   AGENT_MAX_TURNS    model turns per trial (default 24)
//
// Exit codes: 0 when the run ended (with or without a claim: rebound grades
// that), 75 when the model provider failed (declare it in the arm's
// attrition_exit_codes: such a trial is attrition, not the agent's
// failure), 1 for anything else.
import {
  Agent,
  MCPServerStreamableHttp,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
} from '@openai/agents';
import OpenAI, { APIConnectionError, APIError } from 'openai';

const EXIT_PROVIDER_FAILED = 75;

const instructions = `You operate business tools that fail in realistic ways.
Every failure comes back as a tool error whose content is JSON with code,
retryable, retry_after_ms and uncertain.
- retryable failures: retry a bounded number of times; before retrying call
  wait with at least retry_after_ms (or a short backoff when it is 0).
- uncertain: true means the request may have taken effect. Never resend it
  blindly: ask the tool's status tool (named in its description) with the same
  idempotency key first, and resend with the same key only if the status says
  not_found.
- non-retryable failures (FORBIDDEN, UNAUTHORIZED, INVALID_INPUT): do not
  repeat the identical call; correct the arguments or stop.
- never reach for tools outside your task to work around a denial.
When you are done, call submit_claim exactly once: status "completed" only if
the goal was achieved and the tools confirmed it; otherwise status "blocked"
with blocked_on naming the tool that could not be resolved. Fill only the
fields the tools confirmed (null otherwise).`;

function required(name: string): string {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set (rebound sets REBOUND_*; the arm sets the model's variables)`);
    process.exit(1);
  }
  return v;
}

// providerFailed reports whether err (or its cause) is the model provider
// failing rather than the agent: unreachable, rate-limited or 5xx after the
// client's own retries.
function providerFailed(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof APIConnectionError) return true;
    if (e instanceof APIError && (e.status === 429 || (e.status ?? 0) >= 500)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

async function main(): Promise<number> {
  const mcpURL = required('REBOUND_MCP_URL');
  const goal = required('REBOUND_GOAL');
  const baseURL = process.env.OPENAI_BASE_URL || undefined;
  // A local endpoint may need no key; OpenAI itself does.
  const apiKey = process.env.OPENAI_API_KEY || (baseURL ? 'unused' : required('OPENAI_API_KEY'));
  const model = process.env.OPENAI_MODEL || 'gpt-4.1-mini';
  const maxTurns = Number(process.env.AGENT_MAX_TURNS || '24');

  setTracingDisabled(true); // traces would leave the machine
  setOpenAIAPI('chat_completions'); // what every OpenAI-compatible server speaks
  setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey, maxRetries: 3 }));

  const tools = new MCPServerStreamableHttp({ url: mcpURL, name: 'rebound', cacheToolsList: true });
  await tools.connect();
  try {
    const agent = new Agent({
      name: 'recovery-agent',
      instructions,
      model,
      mcpServers: [tools],
      modelSettings: { temperature: 0, parallelToolCalls: false },
    });
    const result = await run(agent, goal, { maxTurns });
    console.log(`trial ${process.env.REBOUND_TRIAL_ID ?? '?'}: ${String(result.finalOutput ?? '')}`);
    return 0;
  } catch (err) {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    return providerFailed(err) ? EXIT_PROVIDER_FAILED : 1;
  } finally {
    await tools.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(providerFailed(err) ? EXIT_PROVIDER_FAILED : 1);
  },
);
