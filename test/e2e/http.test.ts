import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { Agent, CLI } from '../helpers.js';

// The real HTTP server, started from the built bin on an ephemeral port.
let child: ChildProcess;
let url: string;
const TOKEN = 'test-token-123';

beforeAll(async () => {
  const db = join(tempDir(), 'http.db');
  child = spawn(
    process.execPath,
    [CLI, '--http', '0', '--store', `sqlite://${db}`, '--token', TOKEN, '--http-session-idle', '2', '--tools', 'all'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /at (http:\/\/\S+\/mcp)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  expect(stdout).toBe('');
});
afterAll(() => {
  child?.kill();
});

async function httpAgent(token?: string): Promise<{ agent: Agent; client: Client }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
  });
  const client = new Client({ name: 'http-test', version: '1.0.0' });
  await client.connect(transport);
  return { agent: new Agent(client), client };
}

describe('Streamable HTTP', () => {
  it('serves the tools to an authorized client, and sessions share one store', async () => {
    const one = await httpAgent(TOKEN);
    const two = await httpAgent(TOKEN);
    try {
      expect((await one.client.listTools()).tools.map((t) => t.name)).toContain('state_set');
      await one.agent.ok('state_set', { key: 'shared', value: 'over http' });
      expect((await two.agent.ok('state_get', { key: 'shared' })).value).toBe('over http');
      // each session has its own thread
      await one.agent.ok('state_set', { key: 'mine', value: 1, scope: 'thread' });
      expect((await two.agent.ok('state_get', { key: 'mine', scope: 'thread' })).found).toBe(false);
      // watch across sessions
      const waiting = two.agent.ok('watch', { key: 'ping', waitMs: 10_000 });
      await new Promise((r) => setTimeout(r, 100));
      await one.agent.ok('state_set', { key: 'ping', value: 'pong' });
      expect(await waiting).toMatchObject({ value: 'pong', timedOut: false });
    } finally {
      await one.client.close();
      await two.client.close();
    }
  });

  it('refuses a request without the bearer token', async () => {
    await expect(httpAgent()).rejects.toThrow();
    await expect(httpAgent('wrong-token-xyz')).rejects.toThrow();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
  });

  it('closes a session whose client went away without DELETE, but not one that is still connected', async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gone', version: '1' } },
      }),
    });
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    expect(sessionId).toBeTruthy();
    const live = await httpAgent(TOKEN); // keeps its notification stream open, like a real client
    await new Promise((r) => setTimeout(r, 3500));
    const late = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(late.status).toBe(404);
    expect((await live.agent.ok('whoami')).thread).toBeTruthy();
    await live.client.close();
  });

  it('refuses a request whose Host is not loopback (DNS rebinding)', async () => {
    const { request } = await import('node:http');
    const target = new URL(url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: '/mcp',
          method: 'POST',
          headers: {
            host: 'evil.example:80',
            authorization: `Bearer ${TOKEN}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      );
    });
    expect(status).toBe(403);
  });
});
