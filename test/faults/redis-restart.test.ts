// Redis going away under the board: kill -9 and restart on the same AOF, a hung server, followers across restarts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisBackend } from '../../src/store/redis.js';
import type { CommitEvent, RecordWrite } from '../../src/store/types.js';
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

async function open(prefix: string, query = ''): Promise<RedisBackend> {
  const backend = await RedisBackend.open(`${server!.url}?prefix=${prefix}${query}`);
  opened.push(backend);
  return backend;
}
const rec = (v: RecordWrite['v'], ver = 1): RecordWrite => ({ v, ver, at: Date.now(), by: 'test' });
const writeKey = (backend: RedisBackend, key: string, value: number) =>
  backend.transaction(async (tx) => {
    const current = await tx.get(key);
    return { result: null, writes: new Map([[key, { record: rec(value, (current?.ver ?? 0) + 1), log: true }]]) };
  }, [key]);
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
  it('keeps every acknowledged write across kill -9 of redis-server (AOF, fsync always)', async () => {
    if (skipped) return;
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
    await new Promise((resolve) => setTimeout(resolve, 400));
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

  it('a follower misses nothing across a kill -9 and restart of redis-server', async () => {
    if (skipped) return;
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

  it('fails calls within seconds while Redis is down, and recovers by itself when it is back', async () => {
    if (skipped) return;
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

  it('fails calls within the call timeout when Redis hangs, and recovers when it resumes', async () => {
    if (skipped) return;
    const backend = await open(`hang${prefixes++}`, '&timeout=800');
    await writeKey(backend, 'y', 1);
    server!.pause();
    try {
      const started = Date.now();
      await expect(backend.get('y')).rejects.toThrow();
      await expect(writeKey(backend, 'y', 2)).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      server!.resume();
    }
    await untilUp(() => writeKey(backend, 'y', 3));
    expect((await backend.get('y'))?.v).toBe(3);
  });

  it('refuses to open against a stopped Redis with one line, quickly', async () => {
    if (skipped) return;
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
