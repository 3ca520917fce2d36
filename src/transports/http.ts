import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../config.js';
import { createServer, type BlackboardServer } from '../server.js';
import type { VersionedStore } from '../store/versioned-store.js';

const MAX_BODY_BYTES = 80 * 1024 * 1024;


/**
 * Streamable HTTP on `/mcp`: one MCP session (and one agent session with its own thread unless `--thread` is given)
 * per `initialize`, all over the same store. With a token, every request needs `Authorization: Bearer <token>`.
 */
export async function serveHttp(
  config: Config,
  store: VersionedStore,
): Promise<{ url: string; close: () => Promise<void> }> {
  const http = config.http!;
  const sessions = new Map<
    string,
    { transport: StreamableHTTPServerTransport; bb: BlackboardServer; lastSeen: number; inFlight: number }
  >();
  let loopbackHosts: string[] | undefined;

  const authorized = (req: IncomingMessage): boolean => {
    if (!http.token) return true;
    const given = Buffer.from(req.headers.authorization ?? '');
    const wanted = Buffer.from(`Bearer ${http.token}`);
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  };

  const reply = (res: ServerResponse, status: number, message: string): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(
      JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }),
    );
  };

  const server = createHttpServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/mcp') return reply(res, 404, 'Not found: the MCP endpoint is /mcp.');
      // On loopback, a Host that is not loopback means a web page reached us by DNS rebinding.
      if (loopbackHosts && !loopbackHosts.includes(req.headers.host ?? '')) return reply(res, 403, 'Forbidden: bad Host header.');
      if (!authorized(req)) return reply(res, 401, 'Unauthorized: send Authorization: Bearer <token>.');
      const sessionId = req.headers['mcp-session-id'];
      const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (existing) {
        existing.lastSeen = Date.now();
        existing.inFlight++;
        res.once('close', () => {
          existing.inFlight--;
          existing.lastSeen = Date.now();
        });
        return existing.transport.handleRequest(req, res);
      }
      if (sessionId !== undefined) return reply(res, 404, 'Unknown session: initialize a new one.');
      if (req.method !== 'POST') return reply(res, 400, 'Bad request: initialize with a POST first.');
      const body = await readJson(req);
      if (!isInitializeRequest(body)) return reply(res, 400, 'Bad request: the first request must be initialize.');
      const bb = await createServer(config, store);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, { transport, bb, lastSeen: Date.now(), inFlight: 0 }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await bb.server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      console.error('[mcp-blackboard] HTTP request failed:', error);
      if (!res.headersSent) reply(res, 400, error instanceof Error ? error.message : String(error));
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
      if (s.inFlight > 0 || s.lastSeen >= cutoff) continue; // a long watch or an open stream is not idle
      sessions.delete(id);
      void s.transport.close().catch(() => {});
      void s.bb.close().catch(() => {});
    }
  }, Math.min(60_000, Math.max(100, idleMs / 2)));
  reaper.unref();
  const { port } = server.address() as AddressInfo;
  const host = http.host.includes(':') ? `[${http.host}]` : http.host;
  if (['127.0.0.1', 'localhost', '::1'].includes(http.host)) {
    loopbackHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  }
  return {
    url: `http://${host}:${port}/mcp`,
    close: async () => {
      clearInterval(reaper);
      for (const { transport, bb } of sessions.values()) {
        await transport.close().catch(() => {});
        await bb.close().catch(() => {});
      }
      sessions.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('Request body too large.');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Error('Parse error: the body is not JSON.');
  }
}
