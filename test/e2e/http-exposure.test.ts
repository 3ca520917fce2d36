import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bearer,
  httpAgent,
  initializeBody,
  MCP_HEADERS,
  raw,
  rawInitialize,
  startHttp,
  type HttpAgent,
  type Served,
} from './http-helpers.js';

let s: Served | undefined;
const open: HttpAgent[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close().catch(() => {})));
  await s?.close();
  s = undefined;
});

const TOKEN = 'shared-token-0123456789';

/** Sends `bytes` of body without ending the request; resolves with the status as soon as the server answers. */
function streamBody(port: number, headers: Record<string, string | number>, bytes: number): Promise<{ status: number; sent: number }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { ...MCP_HEADERS, ...headers } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, sent });
      req.destroy();
    });
    req.on('error', (error) => (sent > 0 ? undefined : reject(error)));
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = (): void => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      // never end(): a server that waits for the whole body never answers
    };
    pump();
  });
}

describe('HTTP exposure', () => {
  it('with the shared token, X-Blackboard-Agent names the agent of the session', async () => {
    s = await startHttp({ token: TOKEN }, { agent: 'configured' });
    const named = await httpAgent(`${s.base}/mcp`, {
      ...bearer(TOKEN),
      'X-Blackboard-Agent': 'alice',
      'X-Blackboard-Agent-Type': 'writer',
    });
    const plain = await httpAgent(`${s.base}/mcp`, bearer(TOKEN));
    open.push(named, plain);
    expect(await named.ok('whoami')).toMatchObject({ agent: 'alice', agentType: 'writer' });
    expect(await plain.ok('whoami')).toMatchObject({ agent: 'configured' });
    await named.ok('state_set', { key: 'k', value: 1 });
    expect((await plain.ok('state_get', { key: 'k' })).updatedBy).toBe('alice');
    expect((await rawInitialize(s.port, { ...bearer(TOKEN), 'X-Blackboard-Agent': '../etc' })).status).toBe(400);
  });

  it('a malformed path or a null body is a clear 4xx, not an internal error', async () => {
    s = await startHttp({ token: TOKEN });
    const headers = { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-protocol-version': '2025-11-25' };
    const badPath = await raw(s.port, { path: '/mcp/%E0', headers, body: initializeBody() });
    expect(badPath.status).toBe(404);
    expect(badPath.body).toMatch(/not valid percent-encoding/);
    const nullBody = await raw(s.port, { path: '/mcp', headers, body: 'null' });
    expect(nullBody.status).toBe(400);
    expect(nullBody.body).not.toMatch(/Internal error/);
  });

  it('refuses bodies over 4 MiB with 413 before reading them whole: by Content-Length, and while they stream', async () => {
    s = await startHttp({ token: TOKEN });
    const declared = await streamBody(s.port, { ...bearer(TOKEN), 'content-length': 80 * 1024 * 1024 }, 64 * 1024);
    expect(declared.status).toBe(413);
    const streamed = await streamBody(s.port, { ...bearer(TOKEN), 'transfer-encoding': 'chunked' }, 6 * 1024 * 1024);
    expect(streamed.status).toBe(413);
    // inside an open session too (the SDK transport reads those bodies)
    const { sessionId } = await rawInitialize(s.port, bearer(TOKEN));
    const inSession = await streamBody(
      s.port,
      { ...bearer(TOKEN), 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25', 'transfer-encoding': 'chunked' },
      6 * 1024 * 1024,
    );
    expect(inSession.status).toBe(413);
    // a value just under the limit still goes through
    const a = await httpAgent(`${s.base}/mcp`, bearer(TOKEN));
    open.push(a);
    expect((await a.ok('state_set', { key: 'big', value: 'x'.repeat(900_000) })).version).toBe(1);
  });

  it('a client still sending a body over the limit reads the 413, not a broken pipe; --max-value-bytes raises the limit', async () => {
    s = await startHttp({ token: TOKEN });
    const huge = 'x'.repeat(5 * 1024 * 1024);
    for (const era of ['modern', 'legacy', 'modern', 'legacy'] as const) {
      const a = await httpAgent(`${s.base}/mcp`, bearer(TOKEN), '', era);
      open.push(a);
      const error = await a.raw('state_set', { key: 'big', value: huge }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message, era).toMatch(/Payload too large: the request body is over 4194304 bytes/);
      expect((await a.ok('state_get', { key: 'big' })).found, era).toBe(false); // the connection's client still serves
    }
    await s.close();
    s = await startHttp({ token: TOKEN }, { maxValueBytes: 8 * 1024 * 1024 });
    for (const era of ['modern', 'legacy'] as const) {
      const a = await httpAgent(`${s.base}/mcp`, bearer(TOKEN), '', era);
      open.push(a);
      expect((await a.ok('state_set', { key: `big-${era}`, value: huge })).version, era).toBe(1);
    }
  });

  it('--max-sessions: one more is 503 with Retry-After; closing one makes room', async () => {
    s = await startHttp({ maxSessions: 2 });
    const one = await httpAgent(`${s.base}/mcp`, {}, '', 'legacy');
    const two = await httpAgent(`${s.base}/mcp`, {}, '', 'legacy');
    open.push(two);
    const refused = await rawInitialize(s.port);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    await one.transport.terminateSession();
    await one.close();
    expect((await rawInitialize(s.port)).status).toBe(200);
  });

  it('a loopback bind refuses a non-loopback Host; --allowed-hosts adds names', async () => {
    s = await startHttp({ allowedHosts: ['board.internal'] });
    const init = (host: string) => raw(s!.port, { headers: { ...MCP_HEADERS, host }, body: initializeBody() });
    expect((await init('evil.example')).status).toBe(403);
    expect((await init(`evil.example:${s.port}`)).status).toBe(403);
    expect((await init(`localhost:${s.port}`)).status).toBe(200);
    expect((await init(`[::1]:${s.port}`)).status).toBe(200);
    expect((await init('board.internal')).status).toBe(200);
  });

  it('a web page of another origin is refused with 403; loopback origins and --allowed-origins pass', async () => {
    s = await startHttp({ token: TOKEN, allowedOrigins: ['https://board.example.com'] });
    const init = (origin: string) => rawInitialize(s!.port, { ...bearer(TOKEN), origin });
    const evil = await init('https://evil.example');
    expect(evil.status).toBe(403);
    expect(evil.body).toContain('--allowed-origins');
    expect((await init('null')).status).toBe(403);
    expect((await init('http://localhost:5173')).status).toBe(200);
    expect((await init('http://127.0.0.1')).status).toBe(200);
    expect((await init('https://board.example.com')).status).toBe(200);
    // the Origin check comes before auth: a foreign page learns nothing, not even whether a token is needed
    expect((await rawInitialize(s.port, { origin: 'https://evil.example' })).status).toBe(403);
  });

  it('without a page handler other paths are 404; an unknown session is 404', async () => {
    s = await startHttp({ token: TOKEN });
    expect((await raw(s.port, { path: '/', method: 'GET', headers: bearer(TOKEN) })).status).toBe(404);
    expect((await raw(s.port, { path: '/nothing', method: 'GET' })).status).toBe(404);
    expect((await raw(s.port, { path: '/', method: 'GET', headers: { host: 'evil.example' } })).status).toBe(403);
    const res = await raw(s.port, { headers: { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-session-id': 'nope' }, body: '{}' });
    expect(res.status).toBe(404);
  });
});
