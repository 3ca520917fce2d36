import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI } from '../helpers.js';
import { bearer, httpAgent, raw, rawInitialize, writeAuthFile, type HttpAgent } from './http-helpers.js';

// The built bin: start-up refusals (exit 2, one line) and SIGHUP re-reading the auth file.
const children: ChildProcess[] = [];
const open: HttpAgent[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close().catch(() => {})));
  for (const c of children.splice(0)) c.kill();
});

function start(args: string[]): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [CLI, '--store', 'memory://', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

async function waitFor(what: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!what()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const client = (token: string, agent: string) => ({ token, agent, namespaces: ['*'], access: 'readwrite' });
const A = 'alpha-token-0123456789';
const B = 'beta-token-01234567890';
const C = 'gamma-token-0123456789';

describe('mcp-blackboard --http start-up and SIGHUP', () => {
  it.each([
    [['--http', '0', '--host', '0.0.0.0'], /--host 0\.0\.0\.0 reaches beyond this machine: give --token or --auth/],
    [['--http', '0', '--token', 'x'.repeat(20), '--auth', '/nonexistent.json'], /either --token .* or --auth/],
    [['--http', '0', '--auth', '/nonexistent/auth.json'], /--auth: cannot read the auth file \/nonexistent\/auth\.json/],
  ])('%j is refused: exit 2, one line', async (args, message) => {
    const { exited, stderr } = start(args as string[]);
    expect(await exited).toBe(2);
    expect(stderr().trim().split('\n')).toHaveLength(1);
    expect(stderr()).toMatch(message);
  });

  it('a port in use is one line and exit 1', async () => {
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (taken.address() as { port: number }).port;
      const { exited, stderr } = start(['--http', String(port)]);
      expect(await exited).toBe(1);
      expect(stderr().trim().split('\n')).toHaveLength(1);
      expect(stderr()).toMatch(/port \d+ on 127\.0\.0\.1 is already in use/);
    } finally {
      taken.close();
    }
  });

  it.each([
    ['not JSON', '{"clients": [', /is not valid JSON/],
    ['no agent', JSON.stringify({ clients: [{ token: A, namespaces: ['*'], access: 'read' }] }), /malformed at clients\[0\]\.agent/],
    [
      'bad access',
      JSON.stringify({ clients: [{ ...client(A, 'a'), access: 'write' }] }),
      /clients\[0\]\.access: access must be "read" or "readwrite"/,
    ],
    [
      'both tokens',
      JSON.stringify({ clients: [{ ...client(A, 'a'), tokenSha256: 'ab'.repeat(32) }] }),
      /exactly one of token and tokenSha256/,
    ],
    ['same token twice', JSON.stringify({ clients: [client(A, 'a'), client(A, 'b')] }), /clients\[1\]: the same token as clients\[0\]/],
    ['short token', JSON.stringify({ clients: [client('short', 'a')] }), /at least 16 characters/],
    ['bad namespace', JSON.stringify({ clients: [{ ...client(A, 'a'), namespaces: ['Team'] }] }), /clients\[0\]\.namespaces\[0\]/],
    ['unknown field', JSON.stringify({ clients: [{ ...client(A, 'a'), role: 'admin' }] }), /clients\[0\]/],
  ])('a malformed auth file (%s) stops start-up with one line naming the problem', async (_name, text, message) => {
    const file = writeAuthFile([]);
    writeFileSync(file, text);
    const { exited, stderr } = start(['--http', '0', '--auth', file]);
    expect(await exited).toBe(2);
    expect(stderr().trim().split('\n')).toHaveLength(1);
    expect(stderr()).toContain(file);
    expect(stderr()).toMatch(message);
  });

  it('the board is served at GET / behind the Host check and the same tokens (cookie after /?token=)', async () => {
    const file = writeAuthFile([{ token: A, agent: 'alpha', namespaces: ['team'], access: 'read' }]);
    const server = start(['--http', '0', '--auth', file]);
    await waitFor(() => /the board at (http:\/\/\S+\/)/.test(server.stderr()));
    const port = Number(/:(\d+)\/mcp/.exec(server.stderr())![1]);
    expect((await raw(port, { path: '/', method: 'GET' })).status).toBe(401);
    expect((await raw(port, { path: '/', method: 'GET', headers: { host: 'evil.example' } })).status).toBe(403);
    expect((await raw(port, { path: `/?token=${B}`, method: 'GET' })).status).toBe(401);
    const login = await raw(port, { path: `/?token=${A}`, method: 'GET' });
    expect(login.status).toBe(303);
    const cookie = String(login.headers['set-cookie']).split(';')[0];
    const page = await raw(port, { path: '/', method: 'GET', headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect((await raw(port, { path: '/board/api/board?ns=team', method: 'GET', headers: { cookie } })).status).toBe(200);
    expect((await raw(port, { path: '/board/api/board?ns=other', method: 'GET', headers: { cookie } })).status).toBe(403);
    // the board's cookie is not a bearer token for the MCP endpoint
    expect((await raw(port, { path: '/mcp/team', headers: { cookie, 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
  });

  it('SIGHUP re-reads the auth file: a removed token is refused, its sessions closed and its listen streams and waits ended; a malformed file is not taken', async () => {
    const file = writeAuthFile([client(A, 'alpha'), client(B, 'beta')]);
    const server = start(['--http', '0', '--host', '0.0.0.0', '--auth', file]);
    await waitFor(() => /at (http:\/\/\S+\/mcp)/.test(server.stderr()));
    const port = Number(/:(\d+)\/mcp/.exec(server.stderr())![1]);
    const url = `http://127.0.0.1:${port}/mcp`;
    const alpha = await httpAgent(url, bearer(A));
    const beta = await httpAgent(url, bearer(B));
    open.push(alpha, beta);
    expect((await alpha.ok('whoami')).agent).toBe('alpha');

    writeFileSync(file, JSON.stringify({ clients: [client(B, 'beta'), client(C, 'gamma')] }));
    server.child.kill('SIGHUP');
    await waitFor(() => server.stderr().includes('re-read the auth file'));

    await expect(alpha.raw('whoami')).rejects.toThrow(); // its session was closed
    expect((await rawInitialize(port, bearer(A))).status).toBe(401);
    expect((await beta.ok('whoami')).agent).toBe('beta'); // unchanged client, session kept
    const gamma = await httpAgent(url, bearer(C));
    open.push(gamma);
    expect((await gamma.ok('whoami')).agent).toBe('gamma');

    // a removed client's open requests without a session end too: its listen stream and its wait hear nothing more
    const listener = await httpAgent(url, bearer(C), '', 'modern');
    open.push(listener);
    const updates: unknown[] = [];
    listener.client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params));
    await listener.client.listen({ resourceSubscriptions: ['blackboard://_default/global/k'] });
    const waiting = gamma.raw('watch', { key: 'k', afterVersion: 0, waitMs: 20_000 }).then(
      (r) => `answered: ${JSON.stringify(r.structuredContent)}`,
      () => 'ended',
    );
    await new Promise((r) => setTimeout(r, 300)); // the watch is waiting
    writeFileSync(file, JSON.stringify({ clients: [client(B, 'beta')] }));
    server.child.kill('SIGHUP');
    await waitFor(() => server.stderr().split('re-read the auth file').length === 3);
    await beta.ok('state_set', { key: 'k', value: 'after gamma was removed' });
    expect(await waiting).toBe('ended');
    await new Promise((r) => setTimeout(r, 1000));
    expect(updates).toEqual([]);
    writeFileSync(file, JSON.stringify({ clients: [client(B, 'beta'), client(C, 'gamma')] }));
    server.child.kill('SIGHUP');
    await waitFor(() => server.stderr().split('re-read the auth file').length === 4);

    writeFileSync(file, '{"clients": []}');
    server.child.kill('SIGHUP');
    await waitFor(() => server.stderr().includes('kept the previous clients'));
    expect(server.stderr()).toMatch(
      /kept the previous clients: the auth file .* is malformed at clients: clients must list at least one client/,
    );
    expect((await gamma.ok('whoami')).agent).toBe('gamma');
    expect((await rawInitialize(port, bearer(C))).status).toBe(200);
  });
});
