import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { VERSION, type Config } from './config.js';
import { createServices, type Services } from './services/index.js';
import { Session, type SessionOptions } from './services/session.js';
import type { VersionedStore } from './store/versioned-store.js';
import { registerTools } from './tools/index.js';
import { registerResources } from './resources.js';

const INSTRUCTIONS = `mcp-blackboard keeps shared state for agents. Keys live in scopes (global by default; thread, run, parent, agent_type, profile, group:NAME). Read with state_get/state_list/state_snapshot; write with state_set (pass ifVersion from your last read to avoid overwriting someone else), state_update for counters/lists/merges, state_batch for several writes at once. Use watch to wait for another agent instead of polling. Errors carry a code: on VERSION_CONFLICT read again and retry; on INVALID_ARGUMENT fix the argument named in the message.`;

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
  const server = new McpServer(
    { name: 'mcp-blackboard', version: VERSION },
    { capabilities: { tools: { listChanged: false }, logging: {} }, instructions: INSTRUCTIONS },
  );
  const services = createServices(store, session, config);
  const host = {
    server,
    namespace: config.namespace,
    progressIntervalMs: config.progressIntervalMs,
    registered: [],
    readOnly,
    beforeWrite: () => session.record(),
  };
  const tools = registerTools(host, config, services);
  const stopSubscriptions = registerResources(server, store, session, services);
  const previousOnClose = server.server.onclose;
  server.server.onclose = () => {
    stopSubscriptions();
    previousOnClose?.();
  };
  return {
    server,
    session,
    services,
    tools,
    close: async () => {
      stopSubscriptions();
      await server.close();
    },
  };
}
