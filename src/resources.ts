// MCP resources: blackboard:// URIs for keys and plans, read as JSON, and subscriptions on the change feed.
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { checkKey, dataKey, resolveScope } from './context.js';
import { BlackboardError } from './errors.js';
import type { Services } from './services/index.js';
import { checkPlanId } from './services/plan.js';
import type { Session } from './services/session.js';
import type { Entry, VersionedStore } from './store/versioned-store.js';
import type { ToolHost } from './tools/define.js';

/** How the unnamespaced store is named in URIs (a namespace cannot start with "_"). */
export const DEFAULT_NAMESPACE_URI = '_default';
const LIST_LIMIT = 200;

/**
 * Resources: `blackboard://{namespace}/{scope}/{key}` for each key and `blackboard://{namespace}/plans/{planId}`,
 * read as JSON. `resources/subscribe` watches a URI on the store's change feed (changes by any process) and sends
 * `notifications/resources/updated`. Returns a function that stops every subscription.
 */
export function registerResources(
  server: McpServer,
  store: VersionedStore,
  session: Session,
  services: Services,
  /** renders the tool names in error messages */
  tools: Pick<ToolHost, 'render'>,
): () => void {
  const ns = (): string => session.identity.namespace ?? DEFAULT_NAMESPACE_URI;
  const uriOf = (scope: string, key: string): string => `blackboard://${ns()}/${encodeURIComponent(scope)}/${encodeURIComponent(key)}`;
  const notFound = (uri: string, why: string): McpError => new McpError(-32002, `Resource not found: ${uri} (${why})`);

  /** The storage key behind a URI of this server's namespace; a malformed URI is an invalid-params error. */
  const storageKeyOf = (uri: string): string => {
    const m = /^blackboard:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(uri);
    if (!m) throw new McpError(ErrorCode.InvalidParams, `Not a blackboard resource URI: ${uri}`);
    let parts: string[];
    try {
      parts = m.slice(1).map((part) => decodeURIComponent(part));
    } catch {
      throw new McpError(ErrorCode.InvalidParams, `Malformed percent-encoding in resource URI: ${uri}`);
    }
    const [namespace, scope, key] = parts;
    if (namespace !== ns()) throw notFound(uri, `this server serves namespace ${ns()}`);
    try {
      if (scope === 'plans') return services.plans.key(checkPlanId(key));
      return dataKey(session.identity, resolveScope(scope, session.identity), checkKey(key));
    } catch (error) {
      throw new McpError(ErrorCode.InvalidParams, error instanceof BlackboardError ? tools.render(error.message) : String(error));
    }
  };

  const read = async (uri: URL | string) => {
    const href = String(uri);
    const entry = await store.get(storageKeyOf(href));
    if (!entry) throw notFound(href, 'no such key or plan');
    return { contents: [{ uri: href, mimeType: 'application/json', text: JSON.stringify(entry.value) }] };
  };

  server.registerResource(
    'plan',
    new ResourceTemplate('blackboard://{namespace}/plans/{planId}', {
      list: async () => ({
        resources: (await services.plans.list({})).plans.map((p) => ({
          uri: `blackboard://${ns()}/plans/${p.planId}`,
          name: `plan ${p.title}`,
          mimeType: 'application/json',
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
            resources.push({ uri: uriOf(label, k.key), name: `${label}/${k.key}`, mimeType: 'application/json' });
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
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const uri = request.params.uri;
    const key = storageKeyOf(uri);
    if (!subscriptions.has(uri)) {
      const controller = new AbortController();
      subscriptions.set(uri, controller);
      void follow(uri, key, controller.signal);
    }
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.get(request.params.uri)?.abort();
    subscriptions.delete(request.params.uri);
    return {};
  });

  const same = (a: Entry | undefined, b: Entry | undefined): boolean => a?.revision === b?.revision && a?.version === b?.version;
  async function follow(uri: string, key: string, signal: AbortSignal): Promise<void> {
    let seen = await store.get(key).catch(() => undefined);
    while (!signal.aborted) {
      const baseline = seen;
      const result = await store.waitUntil(key, (entry) => !same(entry, baseline), { timeoutMs: 600_000, signal }).catch(() => undefined);
      if (!result || signal.aborted) return;
      if (result.timedOut) continue;
      seen = result.entry;
      await server.server.sendResourceUpdated({ uri }).catch(() => {});
    }
  }

  return () => {
    for (const controller of subscriptions.values()) controller.abort();
    subscriptions.clear();
  };
}
