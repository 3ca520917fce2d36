// Streamable HTTP: many agents on one server, each session with its own identity, namespace and resumable streams.
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostHeaderValidation, NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isInitializeRequest, type AuthInfo } from '@modelcontextprotocol/server';
import type { Config } from '../config.js';
import { DEFAULT_NAMESPACE_URI, listenRefusal } from '../resources.js';
import { StoreEventBus } from '../resource-bus.js';
import { defaultThread, metaIdentity, type MetaIdentity } from '../request-identity.js';
import { createServer, type BlackboardServer } from '../server.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { HttpAuth, type Principal } from './auth.js';
import { drain, maxBodyBytes, readJson, tooLarge } from './http-body.js';
import { EventLog, type SessionEventStore } from './event-store.js';
import { checkOrigin, endpointOf, HttpError, isLoopbackAddress, LOOPBACK_HOSTNAMES, sessionIdentity, type NewSession } from './requests.js';

const RETRY_AFTER_SECONDS = 30;
/** how many `subscriptions/listen` streams one `--auth` client may hold open: none takes the others' share */
export const LISTENS_PER_CLIENT = 32;
/** how soon a client whose SSE stream broke should reconnect (the `retry:` field of each stream's first event) */
const SSE_RETRY_MS = 1000;

/** A running HTTP server. */
export interface HttpServer {
  /** the MCP endpoint of the configured namespace, e.g. `http://127.0.0.1:7411/mcp` */
  url: string;
  /**
   * Re-reads the auth file (throws, keeping the old one, when it is malformed); closes the sessions of removed or changed
   * clients and ends their open requests (listen streams, waits).
   */
  reload(): void;
  /** Closes every session and the listener; the store is the caller's to close. */
  close(): Promise<void>;
}

/** What an embedder can add to the HTTP server. */
export interface HttpOptions {
  /**
   * Answers requests for paths that are not MCP endpoints (the web board), after the Host and Origin checks. It checks
   * tokens itself (a browser proves its token once, then carries a cookie). Resolves false for a path it does not serve.
   */
  page?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  /** the store of resumable SSE events (default: a new one, bounded, events kept 5 minutes) */
  events?: EventLog;
}

interface LiveSession {
  transport: NodeStreamableHTTPServerTransport;
  bb: BlackboardServer;
  events: SessionEventStore;
  /** the path it was opened on: it serves that namespace only */
  path: string;
  /** who opened it: only the same client may use it */
  principal: string;
  lastSeen: number;
  inFlight: number;
}

/** What the stateless handler's factory is given about a request. */
interface StatelessRequest {
  identity: NewSession;
  namespace?: string;
  /** the tool a tools/call request calls: the only one its server registers */
  onlyTool?: string;
}

/**
 * The identity of a request without a session: its headers', completed by its `_meta` keys; with no thread named,
 * the agent's own thread, stable across requests (never a fresh thread per request).
 */
function statelessIdentity(identity: NewSession, body: unknown, principal: Principal): NewSession {
  const { method, params } = (body ?? {}) as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
  // A tool call is served as the connection's identity when its `_meta` names a bad or forbidden one: the tool layer
  // refuses the call with the error envelope a model reads (INVALID_ARGUMENT, FORBIDDEN), as over stdio or a session.
  const toolCall = method === 'tools/call';
  let asked: MetaIdentity = {};
  try {
    asked = metaIdentity(params?._meta);
  } catch (error) {
    if (!toolCall) throw new HttpError(400, `Bad request: ${(error as Error).message}`);
  }
  const fixed = principal.client?.agentType;
  if (asked.agentType !== undefined && fixed !== undefined && asked.agentType !== fixed) {
    if (!toolCall) throw new HttpError(403, `Forbidden: this token's agent type is "${fixed}"; it cannot act as "${asked.agentType}".`);
    asked = {};
  }
  const out = { ...identity, ...asked };
  out.thread ??= defaultThread(out.agent);
  return out;
}

/**
 * Streamable HTTP on `/mcp` (the configured namespace) and `/mcp/NS` (namespace NS). Each `initialize` opens an MCP
 * session with its own agent session: identity from the auth file's client or the `X-Blackboard-*` headers, a fresh
 * thread unless one is named. Sessions live in this process; their SSE events carry ids and can be resumed with
 * `Last-Event-ID` for 5 minutes.
 */
export async function serveHttp(config: Config, store: VersionedStore, options: HttpOptions = {}): Promise<HttpServer> {
  const http = config.http!;
  const maxBody = maxBodyBytes(config);
  const auth = new HttpAuth({ token: http.token, authFile: http.auth?.file, clients: http.auth?.clients });
  const events = options.events ?? new EventLog();
  const sessions = new Map<string, LiveSession>();
  /** the open requests without a session (listen streams, waits) and whose they are: a reload ends a removed client's */
  const unbound = new Map<ServerResponse, string>();
  /** the open listen streams of each `--auth` client */
  const listening = new Map<string, number>();
  let opening = 0;

  // On a loopback bind, a Host that is not loopback means a web page reached us by DNS rebinding.
  const loopback = isLoopbackAddress(http.host);
  const bindName = http.host.includes(':') ? `[${http.host}]` : http.host;
  const hosts = [...(loopback ? [...LOOPBACK_HOSTNAMES, bindName] : []), ...http.allowedHosts];
  const hostCheck = hosts.length > 0 ? hostHeaderValidation(hosts) : undefined;

  /**
   * Requests without a session: 2026-07-28 requests, and 2025 requests of clients that keep no session. Each is
   * served by a server made for it alone (its principal, namespace and identity come in `authInfo.extra`), with only
   * the tool it calls registered, so its cost does not grow with the number of tools.
   */
  // resource updates for `subscriptions/listen`, from the store's change log: a write through any process reaches them
  const bus = new StoreEventBus(store);
  const stateless = createMcpHandler(
    async ({ authInfo }) => {
      const { identity, namespace, onlyTool } = authInfo!.extra as unknown as StatelessRequest;
      const { readOnly, ...who } = identity;
      const bb = await createServer({ ...config, namespace }, store, { ...who, readOnly, recordOnWrite: true, onlyTool, stateless: true });
      return bb.server;
    },
    { maxRequestBodySize: maxBody, onerror: () => {}, bus },
  );
  const statelessNode = toNodeHandler(stateless, { maxRequestBodySize: maxBody });

  /** The principal of a request's bearer token; a 401 without one (RFC 6750: no error code) or with a bad one. */
  const authenticate = (req: IncomingMessage): Principal => {
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) {
      throw new HttpError(401, 'Unauthorized: send Authorization: Bearer <token> with a token this server was given.', {
        'www-authenticate': 'Bearer realm="mcp-blackboard"',
      });
    }
    const principal = auth.verify(m[1]);
    if (!principal) {
      throw new HttpError(401, 'Unknown token: send Authorization: Bearer <token> with a token this server was given.', {
        'www-authenticate': 'Bearer realm="mcp-blackboard", error="invalid_token", error_description="unknown token"',
      });
    }
    return principal;
  };

  /**
   * Before a listen stream opens: its resources must be of its endpoint's namespace, whose changes are followed while
   * the stream is open.
   */
  const listenTo = async (body: unknown, namespace: string | undefined, res: ServerResponse): Promise<void> => {
    const uris = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } }).params?.notifications
      ?.resourceSubscriptions;
    const prefix = `blackboard://${namespace ?? DEFAULT_NAMESPACE_URI}/`;
    if (Array.isArray(uris) && uris.some((uri) => typeof uri !== 'string' || !uri.startsWith(prefix))) {
      throw new HttpError(403, `Forbidden: this endpoint serves resources under ${prefix} only; listen to others on their own endpoint.`);
    }
    const refused = listenRefusal((body as { params?: unknown }).params, namespace ?? DEFAULT_NAMESPACE_URI);
    if (refused) throw new HttpError(400, refused.message, {}, { code: refused.code, id: (body as { id?: string | number }).id ?? null });
    const release = await bus.hold(namespace);
    if (res.closed) release();
    else res.once('close', release);
  };

  /** Counts a listen stream of client `id` while `res` is open; refuses one beyond {@link LISTENS_PER_CLIENT}. */
  const holdListen = (id: string, res: ServerResponse, rpcId: string | number | null): void => {
    const open = listening.get(id) ?? 0;
    if (open >= LISTENS_PER_CLIENT) {
      throw new HttpError(
        429,
        `Too many listen streams: this client holds ${LISTENS_PER_CLIENT} listen streams open already, the most it may. Follow more resources in one stream (resourceSubscriptions takes many URIs), or close one first.`,
        { 'retry-after': String(RETRY_AFTER_SECONDS) },
        { code: -32603, id: rpcId },
      );
    }
    listening.set(id, open + 1);
    res.once('close', () => {
      const left = (listening.get(id) ?? 1) - 1;
      if (left > 0) listening.set(id, left);
      else listening.delete(id);
    });
  };

  const closeSession = (id: string, s: LiveSession): void => {
    sessions.delete(id);
    s.events.dispose();
    void s.transport.close().catch(() => {});
    void s.bb.close().catch(() => {});
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (hostCheck && !hostCheck(req, res)) return;
    checkOrigin(req.headers, http.allowedOrigins);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const endpoint = endpointOf(path, config.namespace);
    if (!endpoint) {
      // The one place where requests for anything but an MCP endpoint go: the web board.
      if (options.page && (await options.page(req, res))) return;
      throw new HttpError(404, 'Not found: the MCP endpoints are /mcp and /mcp/NAMESPACE.');
    }
    const principal = auth.required ? authenticate(req) : auth.anonymous();
    if (Number(req.headers['content-length']) > maxBody) throw tooLarge(maxBody);

    const sessionId = req.headers['mcp-session-id'];
    if (sessionId !== undefined) {
      const live = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (!live) throw new HttpError(404, 'Unknown session: it was closed or never existed; initialize a new one.');
      if (live.principal !== principal.id) throw new HttpError(403, 'Forbidden: this session was opened with another token.');
      if (live.path !== path) throw new HttpError(400, `Bad request: this session was opened on ${live.path}; send its requests there.`);
      live.lastSeen = Date.now();
      live.inFlight++;
      res.once('close', () => {
        live.inFlight--;
        live.lastSeen = Date.now();
      });
      // a POST's body is read here, under the same bound as every other request's
      return live.transport.handleRequest(req, res, req.method === 'POST' ? await readJson(req, maxBody) : undefined);
    }

    const identity = sessionIdentity(req.headers, principal, endpoint.namespace, config);
    if (req.method !== 'POST') {
      // GET and DELETE belong to sessions; the stateless handler answers them (405)
      return statelessNode(req, res);
    }
    const body = await readJson(req, maxBody);
    // with --max-sessions 0 no session is kept: behind a load balancer without sticky sessions, every request of a
    // 2025 client (initialize included) is served on its own, like a 2026-07-28 request
    if (!isInitializeRequest(body) || http.maxSessions === 0) {
      const name = (body as { params?: { name?: unknown } } | undefined)?.params?.name;
      const onlyTool = (body as { method?: unknown } | null)?.method === 'tools/call' && typeof name === 'string' ? name : undefined;
      const method = (body as { method?: unknown } | null)?.method;
      if (method === 'subscriptions/listen') {
        await listenTo(body, endpoint.namespace, res);
        if (principal.client) holdListen(principal.id, res, (body as { id?: string | number }).id ?? null);
      }
      const batched = Array.isArray(body) ? body.map((m) => (m as { method?: unknown } | null)?.method) : [];
      if (method === 'resources/subscribe' || batched.includes('resources/subscribe')) {
        // updates of a 2025 subscription travel on its session's stream: without one, a subscription would never be told
        throw new HttpError(
          400,
          `resources/subscribe needs a session, and this request has none${http.maxSessions === 0 ? ' (this server keeps none: --max-sessions 0)' : ''}: no update could reach it. Read the resource again to see a change, or subscribe in a session (initialize first).`,
          {},
          { code: -32601, id: (body as { id?: string | number }).id ?? null },
        );
      }
      const extra: StatelessRequest = { identity: statelessIdentity(identity, body, principal), namespace: endpoint.namespace, onlyTool };
      (req as { auth?: AuthInfo }).auth = { token: '', clientId: principal.id, scopes: [], extra: extra as never };
      unbound.set(res, principal.id);
      res.once('close', () => unbound.delete(res));
      return statelessNode(req, res, body);
    }
    if (sessions.size + opening >= http.maxSessions) {
      throw new HttpError(503, `Too many open sessions (${http.maxSessions}); retry later.`, {
        'retry-after': String(RETRY_AFTER_SECONDS),
      });
    }
    opening++;
    try {
      const bb = await createServer({ ...config, namespace: endpoint.namespace }, store, { ...identity, recordOnWrite: true });
      const live: LiveSession = {
        transport: undefined!,
        bb,
        events: events.forSession(),
        path,
        principal: principal.id,
        lastSeen: Date.now(),
        inFlight: 0,
      };
      live.transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: live.events,
        retryInterval: SSE_RETRY_MS,
        onsessioninitialized: (id) => void sessions.set(id, live),
      });
      live.transport.onclose = () => {
        if (live.transport.sessionId) sessions.delete(live.transport.sessionId);
        live.events.dispose();
      };
      await bb.server.connect(live.transport);
      await live.transport.handleRequest(req, res, body);
      if (live.transport.sessionId === undefined) {
        // the transport refused the initialize (e.g. a bad Accept header): nothing to keep
        live.events.dispose();
        await bb.close().catch(() => {});
      }
    } finally {
      opening--;
    }
  };

  const server = createHttpServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!(error instanceof HttpError) && !req.destroyed) console.error('[mcp-blackboard] HTTP request failed:', error);
      if (res.headersSent) return void res.end();
      const refusal = error instanceof HttpError ? error : new HttpError(500, `Internal error: ${(error as Error).message}`);
      if (refusal.status === 413 && !req.complete) {
        // answered now, and the rest of the body read and dropped (up to a bound: then the connection is closed), so a
        // client still sending reads the 413 rather than a broken pipe
        refusal.send(res, 'jsonrpc');
        void drain(req).then((ended) => ended || req.socket.destroy());
        return;
      }
      // any other refused request's unread body is not worth reading: close the connection instead
      refusal.send(res, 'jsonrpc', req.complete ? {} : { connection: 'close' });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(http.port, http.host, () => resolve());
  });
  // A session nobody has used for a while is closed, so clients that vanish without DELETE do not pile up.
  const idleMs = http.sessionIdleSeconds * 1000;
  const reaper = setInterval(
    () => {
      const cutoff = Date.now() - idleMs;
      for (const [id, s] of sessions) {
        if (s.inFlight === 0 && s.lastSeen < cutoff) closeSession(id, s); // a long watch or an open stream is not idle
      }
    },
    Math.min(60_000, Math.max(100, idleMs / 2)),
  );
  reaper.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${bindName}:${port}/mcp`,
    reload: () => {
      auth.reload();
      for (const [id, s] of sessions) if (!auth.stillValid(s.principal)) closeSession(id, s);
      for (const [res, id] of unbound) if (!auth.stillValid(id)) res.destroy();
    },
    close: async () => {
      clearInterval(reaper);
      bus.stop();
      await stateless.close().catch(() => {});
      for (const [id, s] of sessions) closeSession(id, s);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
