// Streamable HTTP: many agents on one server, each session with its own identity, namespace and resumable streams.
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import { DEFAULT_MAX_REQUEST_BODY_SIZE, requestBodyTooLargeMessage } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../config.js';
import { createServer, type BlackboardServer } from '../server.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { HttpAuth, type Principal } from './auth.js';
import { EventLog, type SessionEventStore } from './event-store.js';
import { checkOrigin, endpointOf, HttpError, isLoopbackAddress, LOOPBACK_HOSTNAMES, sessionIdentity } from './requests.js';

const MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE; // 4 MiB
const RETRY_AFTER_SECONDS = 30;

/** A running HTTP server. */
export interface HttpServer {
  /** the MCP endpoint of the configured namespace, e.g. `http://127.0.0.1:7411/mcp` */
  url: string;
  /** Re-reads the auth file (throws, keeping the old one, when it is malformed) and closes sessions of removed clients. */
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
  transport: StreamableHTTPServerTransport;
  bb: BlackboardServer;
  events: SessionEventStore;
  /** the path it was opened on: it serves that namespace only */
  path: string;
  /** who opened it: only the same client may use it */
  principal: string;
  lastSeen: number;
  inFlight: number;
}

/**
 * Streamable HTTP on `/mcp` (the configured namespace) and `/mcp/NS` (namespace NS). Each `initialize` opens an MCP
 * session with its own agent session: identity from the auth file's client or the `X-Blackboard-*` headers, a fresh
 * thread unless one is named. Sessions live in this process; their SSE events carry ids and can be resumed with
 * `Last-Event-ID` for 5 minutes.
 */
export async function serveHttp(config: Config, store: VersionedStore, options: HttpOptions = {}): Promise<HttpServer> {
  const http = config.http!;
  const auth = new HttpAuth({ token: http.token, authFile: http.auth?.file, clients: http.auth?.clients });
  const events = options.events ?? new EventLog();
  const sessions = new Map<string, LiveSession>();
  let opening = 0;

  // On a loopback bind, a Host that is not loopback means a web page reached us by DNS rebinding.
  const loopback = isLoopbackAddress(http.host);
  const bindName = http.host.includes(':') ? `[${http.host}]` : http.host;
  const hosts = [...(loopback ? [...LOOPBACK_HOSTNAMES, bindName] : []), ...http.allowedHosts];
  const hostCheck = hosts.length > 0 ? hostHeaderValidation(hosts) : undefined;
  const bearer = auth.required ? requireBearerAuth({ verifier: auth.verifier() }) : undefined;

  const closeSession = (id: string, s: LiveSession): void => {
    sessions.delete(id);
    s.events.dispose();
    void s.transport.close().catch(() => {});
    void s.bb.close().catch(() => {});
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (hostCheck && !(await runMiddleware(hostCheck, req, res))) return;
    checkOrigin(req.headers, http.allowedOrigins);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const endpoint = endpointOf(path, config.namespace);
    if (!endpoint) {
      // The one place where requests for anything but an MCP endpoint go: the web board.
      if (options.page && (await options.page(req, res))) return;
      throw new HttpError(404, 'Not found: the MCP endpoints are /mcp and /mcp/NAMESPACE.');
    }
    if (bearer && !(await runMiddleware(bearer, req, res))) return; // 401 with WWW-Authenticate: Bearer
    const principal = ((req as { auth?: AuthInfo }).auth?.extra?.principal as Principal | undefined) ?? auth.anonymous();
    if (Number(req.headers['content-length']) > MAX_BODY_BYTES) throw tooLarge();

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
      return live.transport.handleRequest(req, res);
    }

    if (req.method !== 'POST') throw new HttpError(400, 'Bad request: open a session with an initialize POST first.');
    const identity = sessionIdentity(req.headers, principal, endpoint.namespace, config);
    if (sessions.size + opening >= http.maxSessions) {
      throw new HttpError(503, `Too many open sessions (${http.maxSessions}); retry later.`, { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    opening++;
    try {
      const body = await readJson(req);
      if (!isInitializeRequest(body)) throw new HttpError(400, 'Bad request: the first request of a session must be initialize.');
      const bb = await createServer({ ...config, namespace: endpoint.namespace }, store, { ...identity, recordOnWrite: true });
      const live: LiveSession = { transport: undefined!, bb, events: events.forSession(), path, principal: principal.id, lastSeen: Date.now(), inFlight: 0 };
      live.transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: live.events,
        maxRequestBodySize: MAX_BODY_BYTES,
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
      // a refused request's unread body is not worth reading: close the connection instead
      refusal.send(res, 'jsonrpc', req.complete ? {} : { connection: 'close' });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(http.port, http.host, () => resolve());
  });
  // A session nobody has used for a while is closed, so clients that vanish without DELETE do not pile up.
  const idleMs = http.sessionIdleSeconds * 1000;
  const reaper = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const [id, s] of sessions) {
      if (s.inFlight === 0 && s.lastSeen < cutoff) closeSession(id, s); // a long watch or an open stream is not idle
    }
  }, Math.min(60_000, Math.max(100, idleMs / 2)));
  reaper.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${bindName}:${port}/mcp`,
    reload: () => {
      auth.reload();
      for (const [id, s] of sessions) if (!auth.stillValid(s.principal)) closeSession(id, s);
    },
    close: async () => {
      clearInterval(reaper);
      for (const [id, s] of sessions) closeSession(id, s);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const tooLarge = (): HttpError => new HttpError(413, requestBodyTooLargeMessage(MAX_BODY_BYTES));

/** Reads an initialize body, refusing it as soon as more than 4 MiB has arrived. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'Parse error: the body is not JSON.');
  }
}

type Middleware = (req: never, res: never, next: never) => unknown;

/**
 * Runs one of the SDK's Express middlewares (Host validation, bearer auth) on a plain Node request, with the two
 * pieces of Express's response they use. Resolves true when the request may go on, false when it was answered.
 */
function runMiddleware(middleware: Middleware, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const expressRes = {
      set(name: string, value: string) {
        res.setHeader(name, value);
        return expressRes;
      },
      status(code: number) {
        return {
          json(body: unknown) {
            res.writeHead(code, { 'content-type': 'application/json', ...(req.complete ? {} : { connection: 'close' }) }).end(JSON.stringify(body));
            resolve(false);
          },
        };
      },
    };
    const next = (error?: unknown): void => (error ? reject(error) : resolve(true));
    Promise.resolve(middleware(req as never, expressRes as never, next as never)).catch(reject);
  });
}
