// One MCP server over a shared store: the instructions a model sees at initialize, its services and tools.
import { McpServer } from '@modelcontextprotocol/server';
import { VERSION, type Config } from './config.js';
import { BlackboardError } from './errors.js';
import { SCOPE_FORMS } from './context.js';
import { openConnection, unreachableConnection } from './connection.js';
import type { Services } from './services/index.js';
import type { Session, SessionOptions } from './services/session.js';
import type { VersionedStore } from './store/versioned-store.js';
import { registerTools, toolSelection } from './tools/index.js';
import { familySelected, type Family } from './tool-profiles.js';
import { ToolHost, type Extra } from './tools/define.js';
import { metaIdentity } from './request-identity.js';
import { registerResources } from './resources.js';
import { ProcessCache } from './process-cache.js';
import { registerBoardApp } from './tools/board.js';

/** how many identities named by requests' `_meta` one server keeps tools for */
const MAX_OTHER_IDENTITIES = 16;

/**
 * What the server tells a model at `initialize`, one paragraph per tool family, tools named as `{tool:NAME}` (a
 * sentence about a tool this server lacks is left out when rendered).
 */
const INSTRUCTIONS: Array<[Family | 'all', string]> = [
  ['all', 'mcp-blackboard keeps state that agents share, durably and safely under concurrency.'],
  [
    'kv',
    `Keys live in a scope: ${SCOPE_FORMS} (default global). Read with {tool:state_get} or {tool:state_list} (values of many keys: {tool:state_snapshot}). Write with {tool:state_set}: pass the version you read as ifVersion (0: the key must not exist yet) so you never overwrite someone else's change. Use {tool:state_update} for counters, lists and merges, and {tool:state_batch} for several writes at once. Use {tool:watch} to wait for a change instead of polling, and {tool:state_changes} to follow every change.`,
  ],
  [
    'plan',
    'Share work through plans: make one with {tool:plan_create}; each worker takes the next free step with {tool:plan_claim} and reports it with {tool:plan_step}.',
  ],
  ['budget', 'Call {tool:budget_step} before each costly step; on LIMIT_REACHED stop and give your final answer.'],
  ['finalizer', 'Give your result once with {tool:final_answer_set}.'],
  [
    'team',
    'See who is working here with {tool:team_list}. Talk to other agents with {tool:message_send}; read yours with {tool:inbox} and pass ack: cursor once you have acted on them (a reply whose _meta has unread means mail is waiting).',
  ],
  [
    'all',
    'Every write takes an optional idempotencyKey: send the same call with the same key again on a retry and it applies once; use a new key for each different write. A failed call changes nothing and returns {"error": {code, message, details}}: on VERSION_CONFLICT read again and retry; on INVALID_ARGUMENT fix the argument named in details.path.',
  ],
];

/** The instructions for a tool set, rendered once per namespace and tool set (a server is made per stateless request). */
function instructionsFor(config: Config, host: ToolHost): string {
  return RENDERED.get(`${config.namespace ?? ''}|${host.names.join(',')}`, () =>
    INSTRUCTIONS.filter(([family]) => family === 'all' || familySelected(config.tools, family))
      .map(([, paragraph]) => host.render(paragraph))
      .filter(Boolean)
      .join(' '),
  );
}
const RENDERED = new ProcessCache<string>();

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
 * `readOnly` makes every tool not annotated `readOnlyHint` fail with FORBIDDEN; `onlyTool` registers that one tool
 * only (a stateless HTTP request that calls it: the cost of a request stays flat in the number of tools).
 */
export async function createServer(
  config: Config,
  store: VersionedStore,
  {
    readOnly,
    onlyTool,
    agentTypeFixed,
    stateless,
    ...identity
  }: SessionOptions & { readOnly?: boolean; onlyTool?: string; stateless?: boolean } = {},
): Promise<BlackboardServer> {
  const observer = readOnly === true || config.readOnly;
  const { session, services, beforeWrite, afterCall, afterFailure, down } = await openConnection(
    config,
    store,
    { ...identity, agentTypeFixed },
    {
      observer,
    },
  ).catch((error: unknown) => {
    // a server made for one request (stateless HTTP) answers its tool call with the store's error, as a tool does
    if (!(stateless && error instanceof BlackboardError && error.code === 'STORE_UNAVAILABLE')) throw error;
    return unreachableConnection(config, store, identity, error);
  });
  // A request whose `_meta` names another thread, parent thread or agent type is served as that identity, by tools
  // over its own connection (a few are kept; the connection's own identity stays the default).
  const others = new Map<string, Promise<ToolHost>>();
  const route = async (extra: Extra): Promise<ToolHost | undefined> => {
    if (down !== undefined) throw down;
    const asked = metaIdentity(extra._meta as Record<string, unknown> | undefined);
    const base = session.identity;
    if (agentTypeFixed && asked.agentType !== undefined && asked.agentType !== base.agentType) {
      throw new BlackboardError(
        'FORBIDDEN',
        `This client's agent type is "${base.agentType}" (set by the auth file); it cannot act as "${asked.agentType}". Nothing was done.`,
        { path: '_meta.blackboard/agentType' },
      );
    }
    const want = {
      thread: asked.thread ?? base.thread,
      parentThread: asked.parentThread ?? (asked.thread === undefined ? (identity.parentThread ?? config.parentThread) : undefined),
      agentType: asked.agentType ?? base.agentType,
    };
    if (want.thread === base.thread && asked.parentThread === undefined && want.agentType === base.agentType) return undefined;
    const key = JSON.stringify(want);
    let other = others.get(key);
    if (!other) {
      if (others.size >= MAX_OTHER_IDENTITIES) others.delete(others.keys().next().value!);
      other = (async () => {
        const theirs = await openConnection(
          config,
          store,
          { namespace: base.namespace, agent: base.agent, ...want, recordOnWrite: true, agentTypeFixed },
          { observer },
        );
        const h = new ToolHost(
          config.namespace,
          config.progressIntervalMs,
          {
            readOnly,
            beforeWrite: theirs.beforeWrite,
            afterCall: theirs.afterCall,
            afterFailure: theirs.afterFailure,
          },
          toolSelection(config),
        );
        registerTools(h, theirs.services);
        return h;
      })();
      other.catch(() => others.delete(key));
      others.set(key, other);
    }
    return other;
  };
  const host = new ToolHost(
    config.namespace,
    config.progressIntervalMs,
    { readOnly, beforeWrite, afterCall, afterFailure, route },
    toolSelection(config),
  );
  registerTools(host, services);
  const instructions = instructionsFor(config, host);
  const server = new McpServer({ name: 'mcp-blackboard', version: VERSION }, { capabilities: { logging: {} }, instructions });
  host.install(server, onlyTool === undefined ? undefined : (name) => name === onlyTool);
  services.presence.client = () => server.server.getClientVersion()?.name;
  // a stateless request that calls a tool reads no resource: its server needs no resource handlers
  const stopSubscriptions = onlyTool === undefined ? registerResources(server, session, services, host) : () => {};
  if (onlyTool === undefined && host.has('board_show')) registerBoardApp(server);
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
