// Both protocol revisions against one server: the v1 SDK client (2025-11-25), the v2 client (2026-07-28), raw HTTP.
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { tempDir } from '../contract/backends.js';
import { Agent, CLI, connect, sleep, spawnAgent } from '../helpers.js';
import { bearer, httpAgent, MCP_HEADERS, raw, rawInitialize, startHttp, type HttpAgent, type Served } from './http-helpers.js';

const TOKEN = 'protocol-test-token-0123';
let s: Served;
const open: { close(): Promise<void> }[] = [];
beforeAll(async () => {
  s = await startHttp({ token: TOKEN }, { agent: 'srv' });
});
afterAll(async () => {
  await Promise.all(open.map((a) => a.close().catch(() => {})));
  await s.close();
});

async function v1Http(headers: Record<string, string> = {}): Promise<Agent & { client: V1Client }> {
  const client = new V1Client({ name: 'v1', version: '1' });
  await client.connect(new V1HttpTransport(new URL(`${s.base}/mcp`), { requestInit: { headers: { ...bearer(TOKEN), ...headers } } }));
  open.push(client);
  return new Agent(client as never) as Agent & { client: V1Client };
}

const modern = async (headers: Record<string, string> = {}): Promise<HttpAgent> => {
  const a = await httpAgent(`${s.base}/mcp`, { ...bearer(TOKEN), ...headers }, '', 'modern');
  open.push(a);
  return a;
};

describe('2025-11-25 through the v1 SDK client', () => {
  it('over HTTP: a session with its own thread, kv round trip, resumable SSE and logging/setLevel', async () => {
    const a = await v1Http();
    const b = await v1Http();
    expect(a.client.getServerVersion()?.name).toBe('mcp-blackboard');
    await a.ok('state_set', { key: 'v1', value: { from: 'v1' } });
    expect((await b.ok('state_get', { key: 'v1' })).value).toEqual({ from: 'v1' });
    const [wa, wb] = [await a.ok('whoami'), await b.ok('whoami')];
    expect(wa.thread).not.toBe(wb.thread); // a thread per session, as before
    expect((await a.ok('whoami')).thread).toBe(wa.thread);
    // logging/setLevel is honoured for this session: below the level, nothing is sent
    const logs: unknown[] = [];
    const { LoggingMessageNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
    a.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await a.client.setLoggingLevel('error');
    await a.ok('signal', { kind: 'uncertain' });
    await a.client.setLoggingLevel('info');
    await a.ok('signal', { kind: 'uncertain' });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'warning', logger: 'mcp-blackboard.signal' });
  });

  it('over stdio: the spawned server speaks 2025-11-25 to the v1 client', async () => {
    const transport = new V1StdioTransport({
      command: process.execPath,
      args: [CLI, '--store', 'memory://', '--tools', 'all'],
      stderr: 'pipe',
    });
    const client = new V1Client({ name: 'v1', version: '1' });
    await client.connect(transport);
    open.push(client);
    const a = new Agent(client as never);
    await a.ok('state_set', { key: 'k', value: 1 });
    expect((await a.ok('state_get', { key: 'k' })).value).toBe(1);
  });
});

describe('2026-07-28: identity per request, never per transport session', () => {
  it('a request naming no thread gets the agent default thread, the same on every request', async () => {
    const a = await modern({ 'x-blackboard-agent': 'bob' });
    expect(a.client.getProtocolEra()).toBe('modern');
    const first = await a.ok('whoami');
    expect(first).toMatchObject({ agent: 'bob', thread: 'agent:bob' });
    expect((await a.ok('whoami')).thread).toBe('agent:bob');
    const again = await modern({ 'x-blackboard-agent': 'bob' });
    expect((await again.ok('whoami')).thread).toBe('agent:bob');
    // the thread's scope is reachable by its id from another agent's requests
    await a.ok('state_set', { key: 'note', value: 'from bob', scope: 'thread' });
    const other = await modern({ 'x-blackboard-agent': 'eve' });
    expect((await other.ok('state_get', { key: 'note', scope: 'thread:agent:bob' })).value).toBe('from bob');
    expect((await other.ok('state_get', { key: 'note', scope: 'thread' })).found).toBe(false);
  });

  it('X-Blackboard-Thread and the _meta keys name the thread, parent thread and agent type of one request', async () => {
    const a = await modern({ 'x-blackboard-agent': 'carol', 'x-blackboard-thread': 'from-header' });
    expect((await a.ok('whoami')).thread).toBe('from-header');
    const viaMeta = await a.client.callTool({
      name: 'whoami',
      arguments: {},
      _meta: { 'blackboard/thread': 'child-1', 'blackboard/parentThread': 'from-header', 'blackboard/agentType': 'reviewer' },
    });
    expect(viaMeta.structuredContent).toMatchObject({ thread: 'child-1', agentType: 'reviewer', parentThread: 'from-header' });
    await a.client.callTool({
      name: 'state_set',
      arguments: { key: 'mine', value: 1, scope: 'thread' },
      _meta: { 'blackboard/thread': 'child-1' },
    });
    const read = await a.client.callTool({
      name: 'state_get',
      arguments: { key: 'mine', scope: 'thread' },
      _meta: { 'blackboard/thread': 'child-1' },
    });
    expect(read.structuredContent).toMatchObject({ found: true, value: 1 });
    expect((await a.ok('state_get', { key: 'mine', scope: 'thread' })).found).toBe(false); // from-header's thread scope
    const bad = await raw(s.port, {
      headers: { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'whoami', arguments: {}, _meta: { 'blackboard/thread': 'no spaces' } },
      }),
    });
    // refused as over stdio and in a session: the tool's error envelope, for the request's id
    expect(bad.status).toBe(200);
    expect(bad.body).toMatch(/"id":9/);
    expect(bad.body).toMatch(/\\"code\\":\\"INVALID_ARGUMENT\\"/);
  });

  it('the same _meta keys work over stdio and inside a 2025 session', async () => {
    for (const era of ['modern', 'legacy'] as const) {
      const a = await connect({ era, config: { agent: 'dora', thread: 'flag-thread' } });
      open.push(a);
      expect((await a.ok('whoami')).thread).toBe('flag-thread');
      const other = await a.client.callTool({ name: 'whoami', arguments: {}, _meta: { 'blackboard/thread': 'meta-thread' } });
      expect(other.structuredContent, era).toMatchObject({ agent: 'dora', thread: 'meta-thread' });
      const bad = await a.client.callTool({ name: 'whoami', arguments: {}, _meta: { 'blackboard/thread': 'bad thread' } });
      expect(bad.isError).toBe(true);
      expect(JSON.parse((bad.content as { text: string }[])[0].text).error.code).toBe('INVALID_ARGUMENT');
      expect((await a.ok('whoami')).thread).toBe('flag-thread');
    }
  });
});

describe('HTTP details real clients trip over', () => {
  it('a 401 without a token carries no error code; with a wrong one, error="invalid_token"', async () => {
    const none = await rawInitialize(s.port);
    expect(none.status).toBe(401);
    expect(String(none.headers['www-authenticate'])).toMatch(/^Bearer /);
    expect(String(none.headers['www-authenticate'])).not.toMatch(/error=/);
    const wrong = await rawInitialize(s.port, bearer('wrong-token-of-some-length'));
    expect(wrong.status).toBe(401);
    expect(String(wrong.headers['www-authenticate'])).toMatch(/error="invalid_token"/);
  });

  it('resources/subscribe without a session is refused plainly (no update could ever reach it), not accepted and never served', async () => {
    const headers = { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-protocol-version': '2025-11-25' };
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'sub-1',
      method: 'resources/subscribe',
      params: { uri: 'blackboard://default/global/k' },
    });
    const res = await raw(s.port, { headers, body });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      id: 'sub-1',
      error: { code: -32601, message: expect.stringMatching(/^resources\/subscribe needs a session/) },
    });
    // nor inside a batch, beside another request
    const read = { jsonrpc: '2.0', id: 'r', method: 'resources/list', params: {} };
    const batch = await raw(s.port, { headers, body: `[${JSON.stringify(read)},${body}]` });
    expect(batch.status).toBe(400);
    expect(JSON.parse(batch.body)).toMatchObject({
      error: { code: -32601, message: expect.stringMatching(/^resources\/subscribe needs a session/) },
    });
    // it names no tool: on /mcp/NS a tool's name has the namespace's prefix, and --tools may leave any one out
    const spaced = await raw(s.port, { path: '/mcp/team', headers, body });
    expect(JSON.parse(spaced.body).error.message).toMatch(
      /no update could reach it\. Read the resource again to see a change, or subscribe in a session \(initialize first\)\.$/,
    );
  });

  it('SSE streams of a 2025 session tell the client when to reconnect (retry:)', async () => {
    const { sessionId } = await rawInitialize(s.port, bearer(TOKEN));
    const headers = { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' };
    await raw(s.port, { headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const res = await raw(s.port, {
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
    });
    expect(res.headers['content-type'], res.body).toMatch(/text\/event-stream/);
    expect(res.body).toMatch(/^retry: \d+$/m);
  });

  it('a stateless request builds a server with only the tool it calls', async () => {
    const a = await modern();
    const { tools } = await a.client.listTools();
    expect(tools.length).toBeGreaterThan(5);
    expect((await a.ok('state_list', {})).keys).toBeDefined();
  });
});

describe('subscriptions/listen (2026-07-28), fed by the change log', () => {
  const until = async (check: () => boolean, ms = 10_000): Promise<void> => {
    for (const end = Date.now() + ms; !check() && Date.now() < end; ) await sleep(50);
  };

  it('over HTTP: a write by a 2025 client reaches a 2026 listener, with its revision; other namespaces and malformed URIs are refused', async () => {
    const listener = await modern();
    const updates: { uri: string; revision?: number }[] = [];
    listener.client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params as never));
    const uri = 'blackboard://_default/global/listened';
    const sub = await listener.client.listen({ resourceSubscriptions: [uri] });
    const writer = await v1Http();
    const { revision } = await writer.ok('state_set', { key: 'listened', value: 1 });
    await writer.ok('state_set', { key: 'not-listened', value: 1 });
    await until(() => updates.length > 0);
    expect(updates).toEqual([expect.objectContaining({ uri, _meta: expect.objectContaining({ 'blackboard/revision': revision }) })]);
    await sub.close();
    await expect(listener.client.listen({ resourceSubscriptions: ['blackboard://secret/global/x'] })).rejects.toThrow();
    // a malformed URI is an invalid-params error
    for (const bad of ['blackboard://_default/global/%ZZ', 'blackboard://_default/nosuch/k']) {
      await expect(listener.client.listen({ resourceSubscriptions: [uri, bad] }), bad).rejects.toThrow(/Nothing is followed/);
    }
  });

  it('over stdio: a write through another process reaches the listener; malformed URIs are refused', async () => {
    const db = `sqlite://${join(tempDir(), 'listen.db')}`;
    const listener = await spawnAgent(['--store', db], {}, undefined, 'modern');
    const writer = await spawnAgent(['--store', db], {}, undefined, 'legacy');
    open.push(listener, writer);
    const updates: { uri: string; revision?: number }[] = [];
    listener.client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params as never));
    const uri = 'blackboard://_default/global/from-afar';
    // a malformed URI, or one of another namespace, is refused (invalid params); nothing of that listen is followed
    for (const bad of [
      'blackboard://bad',
      'blackboard://_default/global/%ZZ',
      'blackboard://_default/nosuch/k',
      'blackboard://other/global/k',
    ]) {
      await expect(listener.client.listen({ resourceSubscriptions: [uri, bad] }), bad).rejects.toThrow(/Nothing is followed/);
    }
    await listener.client.listen({ resourceSubscriptions: [uri] });
    const { revision } = await writer.ok('state_set', { key: 'from-afar', value: 'x' });
    await until(() => updates.length > 0);
    expect(updates).toEqual([expect.objectContaining({ uri, _meta: expect.objectContaining({ 'blackboard/revision': revision }) })]);
  });
});
