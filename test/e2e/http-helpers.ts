// Shared pieces of the HTTP tests: an in-process server over a memory store, SDK clients with headers, raw requests.
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { defaultConfig, type Config } from '../../src/config.js';
import { loadAuthFile } from '../../src/auth-file.js';
import { serveHttp, type HttpServer } from '../../src/transports/http.js';
import type { VersionedStore } from '../../src/store/versioned-store.js';
import { tempDir } from '../contract/backends.js';
import { Agent, memoryStore, newClient, type Era } from '../helpers.js';

export const sha256hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Writes an auth file in a fresh temp dir and returns its path. */
export function writeAuthFile(clients: object[]): string {
  const file = join(tempDir(), 'auth.json');
  writeFileSync(file, JSON.stringify({ clients }));
  return file;
}

export interface Served {
  served: HttpServer;
  store: VersionedStore;
  /** `http://127.0.0.1:PORT` */
  base: string;
  port: number;
  close(): Promise<void>;
}

/** `serveHttp` in this process over a memory store. */
export async function startHttp(
  http: Partial<NonNullable<Config['http']>> & { authFile?: string } = {},
  config: Partial<Config> = {},
): Promise<Served> {
  const store = memoryStore(config.maxValueBytes);
  const { authFile, ...rest } = http;
  const cfg = defaultConfig({
    progressIntervalMs: 100,
    // every tool, unless the test chooses: most tests exercise more than the default profile
    tools: ['all'],
    ...config,
    http: {
      port: 0,
      host: '127.0.0.1',
      sessionIdleSeconds: 1800,
      allowedHosts: [],
      allowedOrigins: [],
      maxSessions: 1000,
      ...(authFile ? { auth: { file: authFile, clients: loadAuthFile(authFile) } } : {}),
      ...rest,
    },
  });
  const served = await serveHttp(cfg, store);
  const base = served.url.replace(/\/mcp$/, '');
  return {
    served,
    store,
    base,
    port: Number(new URL(base).port),
    close: async () => {
      await served.close();
      await store.close();
    },
  };
}

export interface HttpAgent extends Agent {
  client: Client;
  transport: StreamableHTTPClientTransport;
  close(): Promise<void>;
}

/** A real SDK client over Streamable HTTP with the given headers; `prefix` for namespaced tool names. */
export async function httpAgent(url: string, headers: Record<string, string> = {}, prefix = '', era?: Era): Promise<HttpAgent> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = newClient(era, 'http-test');
  await client.connect(transport);
  const agent = new Agent(client, prefix) as HttpAgent;
  agent.client = client;
  agent.transport = transport;
  agent.close = () => client.close();
  return agent;
}

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export const initializeBody = (protocolVersion = '2025-11-25'): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with node:http, so that any header (Host included) can be sent as given. */
export function raw(
  port: number,
  options: { path?: string; method?: string; headers?: Record<string, string | number>; body?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: options.path ?? '/mcp', method: options.method ?? 'POST', headers: options.headers },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Sends an initialize with these headers; returns the response (and its session id, when one was opened). */
export async function rawInitialize(
  port: number,
  headers: Record<string, string> = {},
  path = '/mcp',
): Promise<RawResponse & { sessionId?: string }> {
  const res = await raw(port, { path, headers: { ...MCP_HEADERS, ...headers }, body: initializeBody() });
  const sessionId = res.headers['mcp-session-id'];
  return { ...res, sessionId: typeof sessionId === 'string' ? sessionId : undefined };
}
