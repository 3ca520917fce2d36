// One MCP server over a shared store: the instructions a model sees at initialize, its services and tools.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { VERSION, type Config } from './config.js';
import { SCOPE_FORMS } from './context.js';
import { createServices, type Services } from './services/index.js';
import { Session, type SessionOptions } from './services/session.js';
import type { VersionedStore } from './store/versioned-store.js';
import { registerTools } from './tools/index.js';
import { ToolHost } from './tools/define.js';
import { registerResources } from './resources.js';

/**
 * What the server tells a model at `initialize`, one paragraph per tool family, tools named as `{tool:NAME}` (a
 * sentence about a tool this server lacks is left out when rendered).
 */
const INSTRUCTIONS: Array<[Config['tools'][number] | 'all', string]> = [
  ['all', 'mcp-blackboard keeps state that agents share, durably and safely under concurrency.'],
  [
    'kv',
    `Keys live in a scope: ${SCOPE_FORMS} (default global). Read with {tool:state_get}, {tool:state_list} or {tool:state_snapshot}. Write with {tool:state_set}: pass the version you read as ifVersion (0: the key must not exist yet) so you never overwrite someone else's change. Use {tool:state_update} for counters, lists and merges, and {tool:state_batch} for several writes at once. Use {tool:watch} to wait for a change instead of polling, and {tool:state_changes} to follow every change.`,
  ],
  ['plan', 'Share work through plans: make one with {tool:plan_create}; each worker takes the next free step with {tool:plan_claim} and reports it with {tool:plan_step}.'],
  ['budget', 'Call {tool:budget_step} before each costly step; on LIMIT_REACHED stop and give your final answer.'],
  ['finalizer', 'Give your result once with {tool:final_answer_set}.'],
  [
    'all',
    'Every write takes an optional idempotencyKey: send the same call with the same key again on a retry and it applies once; use a new key for each different write. A failed call changes nothing and returns {"error": {code, message, details}}: on VERSION_CONFLICT read again and retry; on INVALID_ARGUMENT fix the argument named in details.path.',
  ],
];

export interface BlackboardServer {
  server: McpServer;
  session: Session;
  services: Services;
  /** the tool names this server registered */
  tools: string[];
  /** Closes the MCP server; the store is the caller's to close. */
  close(): Promise<void>;
}

/**
 * One MCP server for one connection, over a store that may be shared with other connections and processes.
 * `identity` overrides the config's identity flags (the HTTP transport gives each session its own thread);
 * `readOnly` makes every tool not annotated `readOnlyHint` fail with FORBIDDEN.
 */
export async function createServer(
  config: Config,
  store: VersionedStore,
  { readOnly, ...identity }: SessionOptions & { readOnly?: boolean } = {},
): Promise<BlackboardServer> {
  const session = await Session.open(store, {
    namespace: config.namespace,
    agent: config.agent,
    agentType: config.agentType,
    thread: config.thread,
    parentThread: config.parentThread,
    ...identity,
  });
  const services = createServices(store, session, config);
  // The first server to serve a thread fixes its budget maxes: at connect, or at the first write for a session that
  // leaves nothing in the store until it writes (HTTP).
  let budgetsFixed = false;
  const fixBudgets = async (): Promise<void> => {
    if (budgetsFixed) return;
    await services.budget.adopt();
    budgetsFixed = true;
  };
  if (!identity.recordOnWrite) await fixBudgets();
  const beforeWrite = async (): Promise<void> => {
    await session.record();
    await fixBudgets();
  };
  // A call that succeeded is a sign of life (a failed one changes nothing, not even that).
  const afterCall = (): Promise<void> => services.presence.touch();
  const host = new ToolHost(config.namespace, config.progressIntervalMs, { readOnly, beforeWrite, afterCall });
  registerTools(host, config, services);
  const instructions = INSTRUCTIONS.filter(([family]) => family === 'all' || config.tools.includes(family))
    .map(([, text]) => host.render(text))
    .filter(Boolean)
    .join(' ');
  const server = new McpServer({ name: 'mcp-blackboard', version: VERSION }, { capabilities: { logging: {} }, instructions });
  host.install(server);
  services.presence.client = () => server.server.getClientVersion()?.name;
  const stopSubscriptions = registerResources(server, session, services, host);
  const previousOnClose = server.server.onclose;
  server.server.onclose = () => {
    stopSubscriptions();
    previousOnClose?.();
  };
  return {
    server,
    session,
    services,
    tools: host.names,
    close: async () => {
      stopSubscriptions();
      await server.close();
    },
  };
}
