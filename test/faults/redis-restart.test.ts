// Redis going away under the board: kill -9 and restart on the same AOF, a hung server, followers across restarts,
// at the backend and through server processes.
import { createClient } from '@redis/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisBackend } from '../../src/store/redis/backend.js';
import type { CommitEvent, RecordWrite } from '../../src/store/types.js';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let server: RedisHandle | undefined;
let skipped: string | undefined;
const opened: RedisBackend[] = [];
let prefixes = 0;

beforeAll(async () => {
  const started = await startRedis();
  if ('skipped' in started) skipped = started.skipped;
  else server = started;
});
afterAll(async () => {
  await Promise.allSettled(opened.map((b) => b.close()));
  await server?.stop();
});
// A test that failed between a kill and its restart must not leave the next tests without a server.
afterEach(async () => {
  if (server && server.pid() === undefined) await server.restart();
});

async function open(prefix: string, query = ''): Promise<RedisBackend> {
  const backend = await RedisBackend.open(`${server!.url}?prefix=${prefix}${query}`);
  opened.push(backend);
  return backend;
}
const rec = (v: RecordWrite['v'], ver = 1): RecordWrite => ({ v, ver, at: Date.now(), by: 'test' });
const writeKey = (backend: RedisBackend, key: string, value: number) =>
  backend.transaction(
    async (tx) => {
      const current = await tx.get(key);
      return { result: null, writes: new Map([[key, { record: rec(value, (current?.ver ?? 0) + 1), log: true }]]) };
    },
    [key],
  );
/** Retries `fn` until it succeeds (the store is coming back) and returns how long that took. */
async function untilUp(fn: () => Promise<unknown>, limitMs = 10_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      await fn();
      return Date.now() - started;
    } catch (error) {
      if (Date.now() - started > limitMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('Redis faults', () => {
  it('keeps every acknowledged write across kill -9 of redis-server (AOF, fsync always)', async ({ skip }) => {
    if (skipped) skip(skipped);
    const backend = await open(`kill${prefixes++}`);
    const acked: number[] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        try {
          await writeKey(backend, `k${i}`, i);
          acked.push(i);
        } catch {
          return;
        }
      }
    })();
    // a number of writes, not a time: with fsync on every write, a busy disk acknowledges only a few in 400 ms
    await expect.poll(() => acked.length, { timeout: 10_000, interval: 20 }).toBeGreaterThan(10);
    await server!.kill9();
    stop = true;
    await writer;
    expect(acked.length).toBeGreaterThan(10);
    await server!.restart();
    await untilUp(() => backend.revision());
    const missing: number[] = [];
    for (const i of acked) if ((await backend.get(`k${i}`))?.v !== i) missing.push(i);
    expect(missing).toEqual([]);
    expect(await backend.revision()).toBeGreaterThanOrEqual(acked.length);
    const log = await backend.changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 100_000 });
    expect(log.changes.length).toBeGreaterThanOrEqual(acked.length);
  });

  it('a follower misses nothing across a kill -9 and restart of redis-server', async ({ skip }) => {
    if (skipped) skip(skipped);
    const prefix = `follow${prefixes++}`;
    const follower = await open(prefix);
    const writer = await open(prefix);
    const events: CommitEvent[] = [];
    const unsubscribe = follower.onForeignCommit((event) => events.push(event));
    const committed = new Map<number, string>();
    for (let i = 0; i < 5; i++) committed.set((await writeKey(writer, `before${i}`, i)).revision, `before${i}`);
    await expect.poll(() => events.length, { timeout: 2000 }).toBeGreaterThanOrEqual(5);
    await server!.restart();
    // The writes right after the restart race the follower's reconnection: it must resume where it was.
    for (let i = 0; i < 5; i++) {
      await untilUp(async () => committed.set((await writeKey(writer, `after${i}`, i)).revision, `after${i}`));
    }
    const seen = (): Map<number, string[]> =>
      new Map(events.flatMap((e) => ('revision' in e ? [[e.revision, e.keys] as [number, string[]]] : [])));
    await expect.poll(() => [...committed.keys()].every((r) => seen().has(r)), { timeout: 10_000 }).toBe(true);
    for (const [revision, key] of committed) expect(seen().get(revision)).toEqual([key]);
    expect(events.filter((e) => 'gap' in e)).toEqual([]);
    unsubscribe();
  });

  it('fails calls within seconds while Redis is down, and recovers by itself when it is back', async ({ skip }) => {
    if (skipped) skip(skipped);
    const backend = await open(`down${prefixes++}`);
    await writeKey(backend, 'x', 1);
    await server!.kill9();
    for (const call of [() => backend.get('x'), () => writeKey(backend, 'x', 2), () => backend.revision()]) {
      const started = Date.now();
      await expect(call()).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(3000);
    }
    await server!.restart();
    const waited = await untilUp(() => writeKey(backend, 'x', 3));
    expect(waited).toBeLessThan(5000);
    expect((await backend.get('x'))?.v).toBe(3);
  });

  it('fails calls within the call timeout when Redis hangs, and recovers when it resumes', async ({ skip }) => {
    if (skipped) skip(skipped);
    const backend = await open(`hang${prefixes++}`, '&timeout=800');
    await writeKey(backend, 'y', 1);
    server!.pause();
    try {
      let started = Date.now();
      await expect(backend.get('y')).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(2000);
      // Concurrent writes of one key take turns in this process, but none waits behind the others' timeouts.
      started = Date.now();
      const writes = await Promise.allSettled(Array.from({ length: 6 }, () => writeKey(backend, 'y', 2)));
      expect(writes.map((w) => w.status)).toEqual(Array(6).fill('rejected'));
      expect(Date.now() - started).toBeLessThan(3500);
    } finally {
      server!.resume();
    }
    await untilUp(() => writeKey(backend, 'y', 3));
    expect((await backend.get('y'))?.v).toBe(3);
  });

  it('authenticates with the URL password, and refuses a wrong one with one line', async ({ skip }) => {
    if (skipped) skip(skipped);
    const raw = createClient({ url: server!.url });
    await raw.connect();
    await raw.configSet('requirepass', 'pa:ss@word');
    try {
      const wrong = (await RedisBackend.open(`redis://:nope@127.0.0.1:${server!.port}`).catch((e: Error) => e)) as Error;
      expect(wrong.message).toMatch(/WRONGPASS|invalid password/i);
      expect(wrong.message).not.toContain('\n');
      const right = await RedisBackend.open(`redis://:${encodeURIComponent('pa:ss@word')}@127.0.0.1:${server!.port}?prefix=auth`);
      opened.push(right);
      expect(right.description).toBe(`redis://:***@127.0.0.1:${server!.port}?prefix=auth`);
      await writeKey(right, 'k', 1);
      expect((await right.get('k'))?.v).toBe(1);
    } finally {
      await raw.configSet('requirepass', '');
      await raw.close();
    }
  });

  it('warns (a server process on stderr) when Redis cannot make acknowledged writes durable', async ({ skip }) => {
    if (skipped) skip(skipped);
    expect((await open(`warn${prefixes++}`)).warning).toBeUndefined();
    const raw = createClient({ url: server!.url });
    await raw.connect();
    await raw.configSet('appendfsync', 'everysec');
    try {
      expect((await open(`warn${prefixes++}`)).warning).toMatch(/appendfsync everysec/);
      await raw.configSet({ maxmemory: '1gb', 'maxmemory-policy': 'allkeys-lru' });
      expect((await open(`warn${prefixes++}`)).warning).toMatch(/allkeys-lru can evict/);
      const agent = await spawnAgent(['--store', `${server!.url}?prefix=warn`]);
      await agent.ok('state_set', { key: 'k', value: 1 });
      await agent.close();
      expect(agent.stderr()).toMatch(/warning: .*appendfsync everysec.*appendonly yes and appendfsync always/);
    } finally {
      await raw.configSet({ appendfsync: 'always', maxmemory: '0', 'maxmemory-policy': 'noeviction' });
      await raw.close();
    }
  });

  it('refuses to open against a stopped Redis with one line, quickly', async ({ skip }) => {
    if (skipped) skip(skipped);
    await server!.kill9();
    try {
      const started = Date.now();
      const error = (await RedisBackend.open(`${server!.url}?prefix=closed`).catch((e: Error) => e)) as Error;
      expect(error.message).toMatch(/ECONNREFUSED/);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await server!.restart();
    }
  });
});

describe('server processes while Redis restarts', () => {
  let agents: Spawned[] = [];
  afterEach(async () => {
    await Promise.all(agents.map((a) => a.close().catch(() => {})));
    agents = [];
  });
  async function spawn(prefix: string, n: number): Promise<Spawned[]> {
    const list = await Promise.all(
      Array.from({ length: n }, (_, i) => spawnAgent(['--store', `${server!.url}?prefix=${prefix}`, '--agent', `p${i}`])),
    );
    agents.push(...list);
    return list;
  }
  const code = (result: { content: unknown[] }): string => JSON.parse((result.content[0] as { text: string }).text).error.code;

  it('calls fail with STORE_UNAVAILABLE within seconds while Redis is down, and work again once it is back', async ({ skip }) => {
    if (skipped) skip(skipped);
    const [a] = await spawn(`mcpdown${prefixes++}`, 1);
    await a.ok('state_set', { key: 'k', value: 1 });
    await server!.kill9();
    try {
      for (const [name, args] of [
        ['state_get', { key: 'k' }],
        ['state_set', { key: 'k', value: 2 }],
        ['state_update', { key: 'n', op: 'increment', value: 1 }],
        ['state_list', {}],
      ] as const) {
        const started = Date.now();
        const result = await a.raw(name, args);
        expect(result.isError, name).toBe(true);
        expect(code(result), name).toBe('STORE_UNAVAILABLE');
        expect(Date.now() - started, name).toBeLessThan(5000);
      }
    } finally {
      await server!.restart();
    }
    await untilUp(async () => {
      const result = await a.raw('state_set', { key: 'k', value: 3 });
      if (result.isError) throw new Error(code(result));
    });
    expect(await a.ok('state_get', { key: 'k' })).toMatchObject({ value: 3, version: 2 });
  });

  it('a waiting watch and a state_changes follower miss nothing across kill -9 and restart of Redis', async ({ skip }) => {
    if (skipped) skip(skipped);
    const [writer, follower, watcher] = await spawn(`mcpfollow${prefixes++}`, 3);
    const { revision: from } = await follower.ok('state_changes', {});
    const seen: Array<{ key: string; version: number; revision: number }> = [];
    let stop = false;
    const following = (async () => {
      let after = from;
      for (;;) {
        const page = await follower.raw('state_changes', { afterRevision: after, waitMs: 200, limit: 50 });
        if (page.isError) {
          expect(code(page)).toBe('STORE_UNAVAILABLE');
          await sleep(50);
          continue;
        }
        const body = page.structuredContent as { changes: typeof seen; revision: number };
        seen.push(...body.changes);
        after = body.revision;
        if (stop && body.changes.length === 0) return;
      }
    })();
    // A watch that starts before the restart and is answered by a write made after it.
    const watching = watcher.ok('watch', { key: 'signal', waitMs: 30_000 });
    const acked = new Map<string, number>();
    const writing = (async () => {
      for (let n = 0; n < 60; n++) {
        for (;;) {
          const result = await writer.raw('state_set', { key: `k${n}`, value: n });
          if (!result.isError) {
            acked.set(`k${n}`, (result.structuredContent as { version: number }).version);
            break;
          }
          expect(code(result)).toBe('STORE_UNAVAILABLE');
          await sleep(50);
        }
      }
    })();
    await sleep(300);
    await server!.restart();
    await writing;
    const signalled = Date.now();
    await writer.ok('state_set', { key: 'signal', value: 'go' });
    expect(await watching).toMatchObject({ found: true, value: 'go', timedOut: false });
    expect(Date.now() - signalled).toBeLessThan(3000);
    stop = true;
    await following;
    expect(acked.size).toBe(60);
    const ids = seen.map((c) => `${c.revision}/${c.key}`);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [key, version] of acked)
      expect(
        seen.some((c) => c.key === key && c.version === version),
        key,
      ).toBe(true);
  });
});
