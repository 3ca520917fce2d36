// MCP resources: blackboard:// URIs for keys and plans, read as JSON, and subscriptions on the change feed.
import { ProtocolError as McpError, ProtocolErrorCode as ErrorCode, ResourceTemplate, type McpServer } from '@modelcontextprotocol/server';
import { checkKey, checkName, resolveScope, type Identity } from './context.js';
import { BlackboardError } from './errors.js';
import type { Services } from './services/index.js';
import { checkPlanId } from './services/plan.js';
import type { Session } from './services/session.js';
import { WATCH_MAX_MS } from './services/arguments.js';
import type { ToolHost } from './tools/define.js';

/** What a resource URI names: a key in a scope, a plan, or an agent's inbox. */
type Target = { scope: string; key: string } | { plan: string } | { inbox: string };

/** How the unnamespaced store is named in URIs (a namespace cannot start with "_"). */
export const DEFAULT_NAMESPACE_URI = '_default';
const LIST_LIMIT = 200;
/** how many resources one connection may follow with `resources/subscribe` (each is a watch the server keeps) */
export const MAX_SUBSCRIPTIONS = 1000;

/** The `_meta` key (and plain param) carrying the namespace revision of a change notification. */
export const META_REVISION = 'blackboard/revision';

/** What a change notification carries besides its URI: the revision, plain and in `_meta` (where clients keep it). */
export const revisionParams = (revision: number): { revision: number; _meta: Record<string, number> } => ({
  revision,
  _meta: { [META_REVISION]: revision },
});

const notFound = (uri: string, why: string): McpError => new McpError(-32002, `Resource not found: ${uri} (${why})`);

/**
 * What a URI of namespace `namespace` names. A malformed URI throws an invalid-params McpError, or the BlackboardError
 * of its bad scope, key, plan id or agent name; a URI of another namespace, a resource-not-found McpError.
 */
function resourceTarget(uri: string, namespace: string, identity: Identity): Target {
  const m = /^blackboard:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(uri);
  if (!m) throw new McpError(ErrorCode.InvalidParams, `Not a blackboard resource URI: ${uri}`);
  let parts: string[];
  try {
    parts = m.slice(1).map((part) => decodeURIComponent(part));
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `Malformed percent-encoding in resource URI: ${uri}`);
  }
  const [ns, scope, key] = parts;
  if (ns !== namespace) throw notFound(uri, `this server serves namespace ${namespace}`);
  if (scope === 'plans') return { plan: checkPlanId(key) };
  if (scope === 'inbox') return { inbox: checkName('agent', key) };
  resolveScope(scope, identity);
  return { scope, key: checkKey(key) };
}

/**
 * Why a `subscriptions/listen` request cannot be served as asked (a resource URI that is malformed or of another
 * namespace), as the JSON-RPC error to answer it with; `undefined` when every URI names a resource of `namespace`.
 */
export function listenRefusal(params: unknown, namespace: string): { code: number; message: string } | undefined {
  const uris = (params as { notifications?: { resourceSubscriptions?: unknown } } | undefined)?.notifications?.resourceSubscriptions;
  if (!Array.isArray(uris)) return undefined;
  // any identity will do: only the URI's form is checked, not whose thread or run it names
  const anyone: Identity = { namespace, agent: 'a', agentType: 'a', thread: 't', run: 'r', rootThread: 't', delegateLevel: 0 };
  for (const uri of uris) {
    try {
      if (typeof uri !== 'string') throw new McpError(ErrorCode.InvalidParams, 'A resource subscription must be a URI string.');
      resourceTarget(uri, namespace, anyone);
    } catch (error) {
      const code = error instanceof McpError ? error.code : ErrorCode.InvalidParams;
      const why = (error instanceof Error ? error.message : String(error)).replace(/([^.])$/, '$1.');
      return {
        code,
        message: `${why} Nothing is followed; listen again with valid URIs.`,
      };
    }
  }
  return undefined;
}

/**
 * Resources: `blackboard://{namespace}/{scope}/{key}` for each key and `blackboard://{namespace}/plans/{planId}`,
 * read as JSON through the kv and plan services. `resources/subscribe` watches a URI (changes by any process) and sends
 * `notifications/resources/updated`. Returns a function that stops every subscription.
 */
export function registerResources(
  server: McpServer,
  session: Session,
  services: Services,
  /** renders the tool names in error messages */
  tools: Pick<ToolHost, 'render'>,
): () => void {
  const ns = (): string => session.identity.namespace ?? DEFAULT_NAMESPACE_URI;
  const uriOf = (scope: string, key: string): string => `blackboard://${ns()}/${encodeURIComponent(scope)}/${encodeURIComponent(key)}`;

  /** What a URI of this server's namespace names; a malformed URI is an invalid-params error. */
  const target = (uri: string): Target => {
    try {
      return resourceTarget(uri, ns(), session.identity);
    } catch (error) {
      throw error instanceof BlackboardError ? invalidParams(error) : error;
    }
  };
  const invalidParams = (error: unknown): McpError =>
    new McpError(ErrorCode.InvalidParams, error instanceof BlackboardError ? tools.render(error.message) : String(error));

  /** The current value behind a target, through the services (`undefined`: no such key or plan). */
  const readValue = async (t: Target): Promise<{ value: unknown; version: number } | undefined> => {
    if ('inbox' in t) {
      const recent = await services.messages.recentFor(t.inbox);
      return { value: { agent: recent.agent, messages: recent.messages }, version: recent.last };
    }
    if ('plan' in t) {
      try {
        const { plan } = await services.plans.get({ planId: t.plan, detail: 'full' });
        return { value: plan, version: plan.version };
      } catch (error) {
        if (error instanceof BlackboardError && error.code === 'NOT_FOUND') return undefined;
        throw error;
      }
    }
    const got = await services.kv.get({ key: t.key, scope: t.scope });
    return got.found ? { value: got.value, version: got.version! } : undefined;
  };

  const read = async (uri: URL | string) => {
    const href = String(uri);
    const found = await readValue(target(href));
    if (!found) throw notFound(href, 'no such key or plan');
    return { contents: [{ uri: href, mimeType: 'application/json', text: JSON.stringify(found.value) }] };
  };

  server.registerResource(
    'inbox',
    new ResourceTemplate('blackboard://{namespace}/inbox/{agent}', { list: undefined }),
    {
      title: 'Inbox',
      description: "An agent's newest messages (any of its threads), as JSON; subscribers hear of every new one.",
      mimeType: 'application/json',
    },
    (uri) => read(uri),
  );
  server.registerResource(
    'plan',
    new ResourceTemplate('blackboard://{namespace}/plans/{planId}', {
      list: async () => ({
        resources: (await services.plans.list({})).plans.map((p) => ({
          uri: `blackboard://${ns()}/plans/${p.planId}`,
          name: `plan ${p.title}`,
          mimeType: 'application/json',
          // the template's description is not repeated per entry (the SDK copies it unless an entry sets its own)
          description: undefined,
        })),
      }),
    }),
    { title: 'Plan', description: 'A plan of this namespace, as JSON.', mimeType: 'application/json' },
    (uri) => read(uri),
  );
  server.registerResource(
    'key',
    new ResourceTemplate('blackboard://{namespace}/{scope}/{key}', {
      list: async () => {
        const resources = [];
        for (const scope of ['global', 'thread']) {
          const label = resolveScope(scope, session.identity).label;
          for (const k of (await services.kv.list({ scope, limit: LIST_LIMIT })).keys) {
            resources.push({ uri: uriOf(label, k.key), name: `${label}/${k.key}`, mimeType: 'application/json', description: undefined });
          }
        }
        return { resources };
      },
    }),
    {
      title: 'Key',
      description: `A key's value as JSON. Listing shows the first ${LIST_LIMIT} keys of the global scope and of this thread; any key of any scope can be read by URI.`,
      mimeType: 'application/json',
    },
    (uri) => read(uri),
  );

  server.server.registerCapabilities({ resources: { subscribe: true, listChanged: false } });
  const subscriptions = new Map<string, AbortController>();
  server.server.setRequestHandler('resources/subscribe', async (request) => {
    const uri = request.params.uri;
    const t = target(uri);
    if (!subscriptions.has(uri) && subscriptions.size >= MAX_SUBSCRIPTIONS) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        tools.render(
          `This connection follows ${MAX_SUBSCRIPTIONS} resources already, the most it may: stop following one with resources/unsubscribe first. Follow many keys at once with {tool:state_changes}.`,
        ),
      );
    }
    if (!subscriptions.has(uri)) {
      const controller = new AbortController();
      subscriptions.set(uri, controller);
      void follow(uri, t, controller.signal);
    }
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    subscriptions.get(request.params.uri)?.abort();
    subscriptions.delete(request.params.uri);
    return {};
  });

  /** Sends `resources/updated` after every change of the target, by `watch`ing it (versions never repeat). */
  async function follow(uri: string, t: Target, signal: AbortSignal): Promise<void> {
    if ('inbox' in t) return followInbox(uri, t.inbox, signal);
    let seen = (await readValue(t).catch(() => undefined))?.version;
    while (!signal.aborted) {
      const watched = 'plan' in t ? { key: t.plan, scope: 'plan' } : { key: t.key, scope: t.scope };
      const result = await services.kv.watch({ ...watched, afterVersion: seen, waitMs: WATCH_MAX_MS }, signal).catch(() => undefined);
      if (!result || signal.aborted) return;
      if (result.timedOut) continue;
      seen = result.version;
      // the namespace revision the change is part of: a client that missed notifications follows state_changes from it
      const { revision } = await services.changes.changes({}).catch(() => ({ revision: undefined }));
      await server.server.sendResourceUpdated({ uri, ...(revision !== undefined ? revisionParams(revision) : {}) }).catch(() => {});
      // after a delete, the next change is the key's return
    }
  }

  /** Sends `resources/updated` for every new message to `agent` (message numbers only grow). */
  async function followInbox(uri: string, agent: string, signal: AbortSignal): Promise<void> {
    let seen = (await services.messages.recentFor(agent, 1).catch(() => undefined))?.last ?? 0;
    while (!signal.aborted) {
      const last = await services.messages.waitForMail(agent, seen, WATCH_MAX_MS, signal).catch(() => null);
      if (last === null || signal.aborted) return;
      if (last === undefined) continue;
      seen = last;
      const { revision } = await services.changes.changes({}).catch(() => ({ revision: undefined }));
      await server.server.sendResourceUpdated({ uri, ...(revision !== undefined ? revisionParams(revision) : {}) }).catch(() => {});
    }
  }

  return () => {
    for (const controller of subscriptions.values()) controller.abort();
    subscriptions.clear();
  };
}
