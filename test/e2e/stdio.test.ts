import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ProtocolErrorCode as ErrorCode, ProtocolError as McpError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { defaultConfig } from '../../src/config.js';
import { createServer } from '../../src/server.js';
import { findRequestId } from '../../src/transports/stdio-lines.js';
import { LimitedStdioTransport } from '../../src/transports/stdio.js';
import { tempDir } from '../contract/backends.js';
import { CLI, memoryStore, runCli, sleep, spawnAgent } from '../helpers.js';

type Spawned = Awaited<ReturnType<typeof spawnAgent>>;
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
});
async function start(args: string[], env?: Record<string, string>, cwd?: string): Promise<Spawned> {
  const a = await spawnAgent(args, env, cwd);
  running.push(a);
  return a;
}

describe('the built bin over stdio', () => {
  it('serves the kv tools on a SQLite file and logs only to stderr', async () => {
    const db = join(tempDir(), 'e2e.db');
    const a = await start(['--store', `sqlite://${db}`, '--agent', 'e2e']);
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['state_get', 'state_set', 'watch']));
    await a.ok('state_set', { key: 'hello', value: { from: 'stdio' } });
    expect(await a.ok('state_get', { key: 'hello' })).toMatchObject({ found: true, value: { from: 'stdio' }, updatedBy: 'e2e' });
    await a.close();
    // the banner names the absolute store path and the tool count
    expect(a.stderr()).toContain(`store=sqlite://${db}`);
    expect(a.stderr()).toMatch(new RegExp(`${tools.length} tools`));
    // and the data is on disk for the next process
    const b = await start(['--store', `sqlite://${db}`]);
    expect((await b.ok('state_get', { key: 'hello' })).value).toEqual({ from: 'stdio' });
  });

  it('reads its configuration from the environment too', async () => {
    const db = join(tempDir(), 'env.db');
    const a = await start([], { BLACKBOARD_STORE: `sqlite://${db}`, BLACKBOARD_NAMESPACE: 'envns', BLACKBOARD_AGENT: 'from-env' });
    const { tools } = await a.client.listTools();
    expect(tools.every((t) => t.name.startsWith('envns_'))).toBe(true);
    await a.ok('state_set', { key: 'k', value: 1 });
    expect((await a.ok('state_get', { key: 'k' })).updatedBy).toBe('from-env');
  });

  it('resolves a relative sqlite:// path against the working directory', async () => {
    const dir = tempDir();
    const a = await start(['--store', 'sqlite://relative.db'], {}, dir);
    await a.client.listTools(); // a 2026-07-28 client is connected before the server has said anything
    await a.close();
    expect(a.stderr()).toContain(`store=sqlite://${join(dir, 'relative.db')}`);
    expect(existsSync(join(dir, 'relative.db'))).toBe(true);
  });

  it('--help lists every flag, --version prints the version, bad flags fail with a reason', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const flag of [
      '--http',
      '--token',
      '--store',
      '--namespace',
      '--agent',
      '--agent-type',
      '--thread',
      '--parent-thread',
      '--tools',
      '--max-iterations',
      '--budget',
      '--allow-budget-admin',
      '--max-value-bytes',
      '--plan-ttl',
      '--keep-checkpoints',
      '--sync',
      '--progress-interval-ms',
      '--host',
      '--http-session-idle',
      '--version',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    const version = await runCli(['--version']);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const bad = await runCli(['--namespace', 'Bad-NS']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/namespace/);
    expect(bad.stdout).toBe('');
    // a bad name is a bad flag too, from the command line or the environment, and no store is created for it
    const dir = tempDir();
    for (const [args, env] of [
      [['--agent', 'bad name'], {}],
      [['--agent-type', 'a/b'], {}],
      [['--parent-thread', ''], {}],
      [[], { BLACKBOARD_THREAD: 'bad thread' }],
    ] as Array<[string[], Record<string, string>]>) {
      const r = await runCli(['--store', `sqlite://${join(dir, 'never.db')}`, ...args], undefined, env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^mcp-blackboard: (--[a-z-]+|BLACKBOARD_THREAD) ".*" is not a valid (agent|agent type|thread): use /);
    }
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
    // An unreachable Redis: one line naming the URL with the password masked, exit 1.
    const redis = await runCli(['--store', 'redis://:s3cret@127.0.0.1:1/0']);
    expect(redis.code).toBe(1);
    expect(redis.stderr.trim().split('\n')).toHaveLength(1);
    expect(redis.stderr).toMatch(/cannot open the store redis:\/\/:\*\*\*@127\.0\.0\.1:1\/0: .*ECONNREFUSED/);
    expect(redis.stderr).not.toContain('s3cret');
  });
});

const MiB = 1024 * 1024;

describe('a message over the stdio size limit', () => {
  it('is answered with an error for its request, and the connection keeps working', async () => {
    const a = await start(['--store', 'memory://']);
    const huge = 'x'.repeat(11 * MiB); // the limit is 10 MiB with the default --max-value-bytes
    const error = await a.raw('state_set', { key: 'big', value: huge }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.InvalidRequest);
    expect((error as McpError).message).toMatch(
      /Message too large: \d+ bytes is over this server's limit of 10485760 bytes .*nothing was done/,
    );
    // nothing was written, and the same connection still serves
    expect(await a.ok('state_get', { key: 'big' })).toMatchObject({ found: false });
    await a.ok('state_set', { key: 'small', value: 'fits' });
    expect((await a.ok('state_get', { key: 'small' })).value).toBe('fits');
    const skipped = a
      .stderr()
      .split('\n')
      .filter((line) => line.includes('skipped'));
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatch(
      /^mcp-blackboard: skipped a message of \d+ bytes on stdin: over the 10485760-byte limit \(answered request \d+ with an error\)$/,
    );
    expect(a.stderr()).not.toContain('Ctrl+C'); // no first-run hint for a client on a pipe
  });

  it('raw frames: an id at either end is answered, one that cannot be found gets an error without id, bad JSON a parse error', async () => {
    const child = spawn(process.execPath, [CLI, '--store', 'memory://'], { stdio: 'pipe' });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const pad = 'y'.repeat(10 * MiB + 10);
    const frames = [
      `{"jsonrpc":"2.0","id":"head-1","method":"tools/call","params":{"name":"state_set","arguments":{"key":"k","value":"${pad}"}}}`,
      `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"state_set","arguments":{"key":"k","value":"${pad}"}},"id":42}`,
      // the id in the middle of a long message, and a nested "id" at the end: neither can be told for sure
      `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"state_set","arguments":{"key":"k","value":"${pad}"}},"id":7,"z":{"id":5}}`,
      'hello, is anybody there?',
      // JSON, but not a valid JSON-RPC request: its id is still there to answer
      '{"jsonrpc":"2.0","id":"m9","method":"ping","extra":1}',
      '{"jsonrpc":"2.0","id":"pn","method":"tools/list","params":null}',
      '{"jsonrpc":"2.0","id":3,"method":"ping"}',
    ];
    for (const frame of frames) {
      if (!child.stdin.write(`${frame}\n`)) await new Promise((r) => child.stdin.once('drain', r));
    }
    const deadline = Date.now() + 30_000;
    while (!out.includes('"id":3') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.stdin.end();
    expect(await exited).toBe(0);
    const replies = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id?: unknown; error?: { code: number; message: string }; result?: unknown });
    expect(replies).toHaveLength(7);
    expect(replies[0]).toMatchObject({
      id: 'head-1',
      error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/^Message too large/) },
    });
    expect(replies[1]).toMatchObject({ id: 42, error: { code: ErrorCode.InvalidRequest } });
    expect(replies[2]).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    expect(replies[2]).not.toHaveProperty('id');
    expect(replies[3]).toMatchObject({ error: { code: ErrorCode.ParseError } });
    expect(replies[4]).toMatchObject({ id: 'm9', error: { code: ErrorCode.InvalidRequest } });
    expect(replies[5]).toMatchObject({ id: 'pn', error: { code: ErrorCode.InvalidRequest } });
    expect(replies[6]).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    expect(err.split('\n').filter((line) => line.includes('skipped a message'))).toHaveLength(3);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('a client that closes its end of stdout mid-call ends the connection cleanly: exit 0, no stack trace, gone from the roster', async () => {
    const db = `sqlite://${join(tempDir(), 'epipe.db')}`;
    const child = spawn(process.execPath, [CLI, '--store', db, '--agent', 'reader', '--tools', 'all', '--progress-interval-ms', '100'], {
      stdio: 'pipe',
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'state_set', arguments: { key: 'seen', value: 1 } } });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'watch', arguments: { key: 'k', waitMs: 20_000 }, _meta: { progressToken: 'p' } },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    while (!out.includes('"progressToken":"p"')) await sleep(20); // the write is answered, the watch sends progress
    child.stdout.destroy(); // progress keeps coming while stdin stays open
    expect(await exited).toBe(0);
    expect(err).not.toMatch(/\n\s+at |EPIPE/);
    const other = await spawnAgent(['--store', db, '--agent', 'other', '--tools', 'team']);
    try {
      const { agents } = await other.ok('team_list', {});
      expect(
        agents.find((a: { agent: string }) => a.agent === 'reader'),
        JSON.stringify(agents),
      ).toMatchObject({ status: 'gone' });
    } finally {
      await other.close();
    }
  });

  it('stdin ending right after a burst of calls: every call but a wait is still answered, then the server exits', async () => {
    const result = await runCli(
      ['--store', `sqlite://${join(tempDir(), 'burst.db')}`],
      [
        {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        ...Array.from({ length: 30 }, (_, i) => ({
          jsonrpc: '2.0',
          id: i + 1,
          method: 'tools/call',
          params: { name: 'state_set', arguments: { key: `k${i}`, value: i } },
        })),
        { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'watch', arguments: { key: 'never', waitMs: 20_000 } } },
      ]
        .map((m) => `${JSON.stringify(m)}\n`)
        .join(''),
    );
    expect(result.code).toBe(0);
    const ids = result.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id?: number }).id);
    expect(ids.filter((id) => id !== undefined && id >= 1 && id <= 30).sort((a, b) => a! - b!)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    expect(ids).not.toContain(99);
  });

  it('finds a request id only where it surely belongs to the top-level object', () => {
    const id = (head: string, tail = head) => findRequestId(Buffer.from(head), Buffer.from(tail));
    expect(id('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{')).toBe(12);
    expect(id('{ "id" : "a\\"b", "method": "x"')).toBe('a"b');
    expect(id('{"jsonrpc":"2.0","method":"tools/call","params":{', '"z"}},"id":"tail-9"}\r')).toBe('tail-9');
    expect(id('{"method":"x","params":{"id":1', 'aaa"}}}')).toBeUndefined(); // "id" inside params
    expect(id('{"params":{"a":1}', '{"b":{"id":5}}')).toBeUndefined(); // nested id at the end
    expect(id('{"method":"a \\"id\\":3","params":{', 'x"}}')).toBeUndefined(); // "id" inside a string
    expect(id('{"id":1.5,', '')).toBeUndefined(); // not a request id
  });
});

describe('a request cancelled over stdio', () => {
  it('a cancelled wait is never answered and no longer held: stdin ending after 100 of them does not wait out the grace', async () => {
    const store = memoryStore();
    const bb = await createServer(defaultConfig({ progressIntervalMs: 100 }), store);
    const [stdin, stdout] = [new PassThrough(), new PassThrough()];
    const transport = new LimitedStdioTransport(1 << 20, stdin, stdout, () => {});
    const entry = serveStdio(() => bb.server, { transport });
    const replies: { id?: number; method?: string }[] = [];
    let buffered = '';
    stdout.on('data', (chunk: Buffer) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop()!;
      for (const line of lines) replies.push(JSON.parse(line));
    });
    const send = (m: unknown) => stdin.write(`${JSON.stringify(m)}\n`);
    try {
      send({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      for (let id = 1; id <= 100; id++) {
        const _meta = { progressToken: `p${id}` };
        send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'watch', arguments: { key: `k${id}`, waitMs: 60_000 }, _meta } });
      }
      await sleep(300);
      for (let id = 1; id <= 100; id++)
        send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'done' } });
      await sleep(300);
      // every request read is answered or cancelled: nothing is left to wait for (before: each cancelled id, forever)
      const settled = await Promise.race([transport.answered(60_000).then(() => 'settled'), sleep(10_000).then(() => 'still waiting')]);
      expect(settled).toBe('settled');
      send({ jsonrpc: '2.0', id: 101, method: 'tools/call', params: { name: 'state_set', arguments: { key: 'k1', value: 1 } } });
      for (let i = 0; i < 500 && !replies.some((r) => r.id === 101); i++) await sleep(20);
      expect(replies.find((r) => r.id === 101)).toMatchObject({ result: { structuredContent: { version: 1 } } });
      expect(replies.filter((r) => r.id !== undefined && r.id >= 1 && r.id <= 100)).toEqual([]);
    } finally {
      await entry.close();
      await bb.close();
    }
  });
});
