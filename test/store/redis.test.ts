// The Redis backend at the seam, against a real redis-server: layout, ordering, exactness, conflicts, change log.
import { randomUUID } from 'node:crypto';
import { createClient } from '@redis/client';
import { describe, expect, it, vi } from 'vitest';
import { compareKeys } from '../../src/store/keys.js';
import { RedisBackend, parseRedisUrl } from '../../src/store/redis/backend.js';
import { RedisConnection } from '../../src/store/redis/client.js';
import { maskPassword as maskUrl } from '../../src/store/url.js';
import { FOLLOW_LINGER_MS } from '../../src/store/commit-listeners.js';
import type { CommitEvent, RecordWrite, Writes } from '../../src/store/types.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { redisBackendsForFile } from './redis-backends.js';

const redis = redisBackendsForFile();
const open = (prefix?: string): Promise<RedisBackend> => redis.open(prefix);

const rec = (v: RecordWrite['v'], ver = 1, extra: Partial<RecordWrite> = {}): RecordWrite => ({
  v,
  ver,
  at: Date.now(),
  by: 'test',
  ...extra,
});
const put = (entries: Array<[string, RecordWrite | null, boolean?]>): Writes =>
  new Map(entries.map(([key, record, log]) => [key, { record, log: log ?? true }]));
async function write(backend: RedisBackend, entries: Array<[string, RecordWrite | null, boolean?]>): Promise<number> {
  const { revision } = await backend.transaction(async () => ({ result: null, writes: put(entries) }));
  return revision;
}

/**
 * `a` reads x, then y, in one transaction; on its first run `b` changes both between the two reads (they are always
 * equal, changed in one commit), so that run sees a torn read and throws. Resolves with how many runs `a` took.
 */
async function tornRead(a: RedisBackend, b: RedisBackend): Promise<{ runs: number; result: unknown }> {
  await write(b, [
    ['x', rec(1)],
    ['y', rec(1)],
  ]);
  let runs = 0;
  const { result } = await a.transaction(
    async (tx) => {
      runs++;
      const x = await tx.get('x');
      if (runs === 1)
        await write(b, [
          ['x', rec(2, 2)],
          ['y', rec(2, 2)],
        ]);
      const y = await tx.get('y');
      if (x!.v !== y!.v) throw new Error(`x=${x!.v} but y=${y!.v}: a torn read`);
      return { result: x!.v, writes: new Map() };
    },
    ['x'],
  );
  return { runs, result };
}

describe('Redis URLs', () => {
  it('parses prefix and timeout, masks the password and refuses unknown options', () => {
    const target = parseRedisUrl('redis://:s3cret@127.0.0.1:6390/2?prefix=team-a&timeout=1500');
    expect(target.options).toEqual({ prefix: 'team-a', callTimeoutMs: 1500 });
    expect(target.clientUrl).toBe('redis://:s3cret@127.0.0.1:6390/2');
    expect(target.description).toBe('redis://:***@127.0.0.1:6390/2?prefix=team-a&timeout=1500');
    expect(parseRedisUrl('rediss://h:1').options.prefix).toBe('bb');
    expect(() => parseRedisUrl('redis://h:1?prefix={x}')).toThrow(/prefix/);
    expect(() => parseRedisUrl('redis://h:1?pool=3')).toThrow(/unknown Redis URL option "pool"/);
    expect(() => parseRedisUrl('redis://h:1/abc')).toThrow(/database must be a number/);
    expect(maskUrl('redis://user:pw@h:1/0')).toBe('redis://user:***@h:1/0');
    expect(maskUrl('sqlite:///tmp/x.db')).toBe('sqlite:///tmp/x.db');
  });

  it('fails fast with one line when nothing listens', async () => {
    const started = Date.now();
    const error = await RedisBackend.open('redis://:pw@127.0.0.1:1').catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    expect((error as Error).message).not.toContain('\n');
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('RedisBackend', () => {
  it('keeps a record exactly as written, stamps the revision, and bumps it only when writing', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const backend = await open();
    expect(backend.shared).toBe(true);
    expect(await backend.revision()).toBe(0);
    const value = JSON.parse('{"b":1,"a":[1.5,"x",null],"__proto__":{"p":true},"é😀":"\\u0000"}');
    const revision = await write(backend, [['k\x1fone', rec(value, 1, { exp: Date.now() + 60_000 })]]);
    expect(revision).toBe(1);
    const got = await backend.get('k\x1fone');
    expect(got?.rev).toBe(1);
    expect(JSON.stringify(got?.v)).toBe(JSON.stringify(value));
    expect(Object.keys(got!.v as object)).toEqual(['b', 'a', '__proto__', 'é😀']);
    const none = await backend.transaction(async (tx) => ({ result: await tx.get('k\x1fone'), writes: new Map() }));
    expect(none.revision).toBe(1);
    expect(await backend.revision()).toBe(1);
    expect(await backend.get('missing')).toBeUndefined();
  });

  it('lists in code point order, skipping tombstones and expired records, with after and limit', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const backend = await open();
    const keys = ['a', 'a%', 'a_', 'a*', 'a[', 'a:', 'a\x1fb', 'A', 'é', 'z', '\uffff', '😀', '\u{10000}x', 'ab'];
    const now = Date.now();
    await write(backend, [
      ...keys.map((k): [string, RecordWrite] => [`p\x1f${k}`, rec(k)]),
      ['p\x1fdead', rec(null, 2, { del: 1 })],
      ['p\x1fexpired', rec(1, 1, { exp: now - 1 })],
      ['q\x1fother', rec('outside')],
    ]);
    const sorted = keys.map((k) => `p\x1f${k}`).sort(compareKeys);
    const all = await backend.list({ lo: 'p\x1f', hi: 'p\x20', limit: 100, now });
    expect(all.rows.map(([k]) => k)).toEqual(sorted);
    expect(all.revision).toBe(1);
    const page = await backend.list({ lo: 'p\x1f', hi: 'p\x20', after: sorted[3], limit: 4, now });
    expect(page.rows.map(([k]) => k)).toEqual(sorted.slice(4, 8));
    expect((await backend.get('p\x1fdead'))?.del).toBe(1);
    expect((await backend.get('p\x1fexpired'))?.exp).toBe(now - 1);
    const later = await backend.list({ lo: 'p\x1fexpired', hi: 'p\x1fexpiree', limit: 10, now: now - 10 });
    expect(later.rows.map(([k]) => k)).toEqual(['p\x1fexpired']);
  });

  it('finds due records: expired ones and old tombstones', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const backend = await open();
    const now = Date.now();
    await write(backend, [
      ['e1', rec(1, 1, { exp: now - 5 })],
      ['e2', rec(1, 1, { exp: now + 60_000 })],
      ['t1', rec(null, 3, { del: 1, at: now - 1000 })],
      ['t2', rec(null, 3, { del: 1, at: now })],
    ]);
    expect((await backend.due({ now, tombstonesBefore: now - 500, limit: 10 })).sort()).toEqual(['e1', 't1']);
    await write(backend, [
      ['e1', null],
      ['t1', null],
    ]);
    expect(await backend.due({ now, tombstonesBefore: now - 500, limit: 10 })).toEqual([]);
    expect(await backend.get('t1')).toBeUndefined();
  });

  it('keeps a change log by revision then key, filtered by range, and prunes it', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const backend = await open();
    const r1 = await write(backend, [
      ['c\x1fb', rec(1)],
      ['c\x1fa', rec(1)],
      ['d\x1fx', rec(1)],
      ['c\x1fquiet', rec(1), false],
    ]);
    const r2 = await write(backend, [
      ['c\x1fa', rec(null, 2, { del: 1 })],
      ['c\x1fgone', null, true],
    ]);
    const all = await backend.changes({ after: 0, lo: 'c\x1f', hi: 'c\x20', limit: 100 });
    expect(all.changes).toEqual([
      { revision: r1, key: 'c\x1fa', version: 1, deleted: false },
      { revision: r1, key: 'c\x1fb', version: 1, deleted: false },
      { revision: r2, key: 'c\x1fa', version: 2, deleted: true },
    ]);
    expect(all.revision).toBe(r2);
    expect(all.compacted).toBe(0);
    expect((await backend.changes({ after: r1, lo: '', hi: '\u{10ffff}', limit: 100 })).changes).toHaveLength(1);
    expect((await backend.changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 2 })).changes.map((c) => c.key)).toEqual([
      'c\x1fa',
      'c\x1fb',
    ]);
    expect(await backend.pruneChanges(Date.now() + 1000, 1)).toBe(3);
    const pruned = await backend.changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 100 });
    expect(pruned.compacted).toBe(r1);
    expect(pruned.changes).toEqual([{ revision: r2, key: 'c\x1fa', version: 2, deleted: true }]);
  });

  it('logs and lists a commit larger than one stream entry', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const backend = await open();
    const entries: Array<[string, RecordWrite]> = [];
    for (let i = 2500; i > 0; i--) entries.push([`big\x1f${String(i).padStart(5, '0')}`, rec(i)]);
    const revision = await write(backend, entries);
    const log = await backend.changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 10_000 });
    expect(log.changes).toHaveLength(2500);
    expect(log.changes.every((c) => c.revision === revision)).toBe(true);
    expect(log.changes.map((c) => c.key)).toEqual(entries.map(([k]) => k).sort(compareKeys));
    const listed = await backend.list({ lo: 'big\x1f', hi: 'big\x20', limit: 3000, now: Date.now() });
    expect(listed.rows).toHaveLength(2500);
  });

  it('keeps boards with different prefixes apart', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const a = await open();
    const b = await open();
    await write(a, [['k', rec('a')]]);
    expect(await b.get('k')).toBeUndefined();
    expect(await b.revision()).toBe(0);
  });

  it('re-runs a transaction whose read changed before it committed (two stores racing)', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `race${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    await write(a, [['n', rec(0)]]);
    let runs = 0;
    const { result } = await a.transaction(
      async (tx) => {
        runs++;
        const current = await tx.get('n');
        if (runs === 1) await write(b, [['n', rec(100, current!.ver + 1)]]);
        const next = (current!.v as number) + 1;
        return { result: next, writes: put([['n', rec(next, current!.ver + 1)]]) };
      },
      ['n'],
    );
    expect(runs).toBe(2);
    expect(result).toBe(101);
    expect((await b.get('n'))?.v).toBe(101);
  });

  it('re-runs a transaction that listed a range only when that range changed meanwhile', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `race${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    await write(b, [
      ['r\x1fold', rec(1)],
      ['r\x1fttl', rec(1, 1, { exp: Date.now() + 60_000 })],
    ]);
    const countRange = async (meanwhile: Array<[string, RecordWrite | null]>): Promise<{ runs: number; result: number }> => {
      let runs = 0;
      const { result } = await a.transaction(async (tx) => {
        runs++;
        const rows = await tx.list({ lo: 'r\x1f', hi: 'r\x20', limit: 100, now: Date.now() });
        if (runs === 1) await write(b, meanwhile);
        return { result: rows.length, writes: put([['count', rec(rows.length, runs + 10)]]) };
      });
      return { runs, result };
    };
    // writes elsewhere, even next to the range's ends, do not disturb it
    expect(
      await countRange([
        ['q\x1fz', rec(1)],
        ['r\x20', rec(1)],
        ['r', rec(1)],
      ]),
    ).toEqual({ runs: 1, result: 2 });
    // a key added, a record rewritten, a record removed: each makes it run again
    expect(await countRange([['r\x1fnew', rec(1)]])).toEqual({ runs: 2, result: 3 });
    expect(await countRange([['r\x1fold', rec(2, 2)]])).toEqual({ runs: 2, result: 3 });
    expect(await countRange([['r\x1fnew', rec(null, 2, { del: 1 })]])).toEqual({ runs: 2, result: 2 });
  });

  it('decides again when a transaction failed on reads that no longer agree with each other', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `race${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    expect(await tornRead(a, b)).toEqual({ runs: 2, result: 2 });
    // an error from reads that agree stands, at once
    let runs = 0;
    await expect(
      a.transaction(async (tx) => {
        runs++;
        await tx.get('x');
        await tx.get('y');
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(runs).toBe(1);
  });

  it('a check of a torn read that fails (the connection reset) leaves the error undecided: the transaction runs again', async ({
    skip,
  }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `torn${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    let checks = 0;
    a.failPoint = (point) => {
      if (point === 'check' && checks++ === 0) throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    };
    // before: the torn read's error, as if it were decided
    expect(await tornRead(a, b)).toEqual({ runs: 2, result: 2 });
    expect(checks).toBeGreaterThan(1); // the reset check, then the second run's
  });

  it('counts exactly under concurrent increments from two stores', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `inc${randomUUID().slice(0, 8)}`;
    const stores = [await open(prefix), await open(prefix)];
    const increment = (backend: RedisBackend) =>
      backend.transaction(
        async (tx) => {
          const current = await tx.get('counter');
          const next = ((current?.v as number | undefined) ?? 0) + 1;
          return { result: next, writes: put([['counter', rec(next, (current?.ver ?? 0) + 1)]]) };
        },
        ['counter'],
      );
    await Promise.all(Array.from({ length: 60 }, (_, i) => increment(stores[i % 2])));
    expect((await stores[0].get('counter'))?.v).toBe(60);
    expect((await stores[0].changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 1000 })).changes).toHaveLength(60);
  });

  it("tells a listener about another store's commits, with their keys, soon", async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `watch${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    const events: CommitEvent[] = [];
    let wake: (() => void) | undefined;
    const stop = a.onForeignCommit((event) => {
      events.push(event);
      wake?.();
    });
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const seen = new Promise<void>((resolve) => (wake = resolve));
      const started = performance.now();
      const revision = await write(b, [[`w${i}`, rec(i)]]);
      await seen;
      delays.push(performance.now() - started);
      expect(events.at(-1)).toEqual({ revision, keys: [`w${i}`] });
    }
    stop();
    expect(delays.sort((x, y) => x - y)[2]).toBeLessThan(500);
    // With no listener left, nothing is followed: a later commit reaches nobody.
    const count = events.length;
    await write(b, [['after', rec(1)]]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(events.length).toBe(count);
  });

  it('delivers commits made between subscribing and the follower starting', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `watch${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    const events: CommitEvent[] = [];
    const stop = a.onForeignCommit((event) => events.push(event));
    const revision = await write(b, [['early', rec(1)]]);
    await expect.poll(() => events.some((e) => 'revision' in e && e.revision === revision), { timeout: 2000 }).toBe(true);
    stop();
  });

  it('keeps following for a short linger after the last listener: one connection for a listener that keeps coming back', async ({
    skip,
  }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `watch${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    const b = await open(prefix);
    const connections = vi.spyOn(RedisConnection.prototype, 'duplicate');
    try {
      // an agent that watches in a loop: subscribe, wait for a commit, unsubscribe, again
      let closed: ReturnType<typeof vi.spyOn> | undefined;
      for (let i = 0; i < 10; i++) {
        const events: CommitEvent[] = [];
        const stop = a.onForeignCommit((event) => events.push(event));
        const revision = await write(b, [[`loop${i}`, rec(i)]]);
        await expect.poll(() => events.some((e) => 'revision' in e && e.revision === revision), { timeout: 2000 }).toBe(true);
        // the follower's own connection, opened for the first listener
        if (i === 0) closed = vi.spyOn((await connections.mock.results[0].value) as RedisConnection, 'destroy');
        stop();
      }
      expect(connections).toHaveBeenCalledTimes(1);
      expect(closed).not.toHaveBeenCalled();
      // nobody came back: the follower's connection is closed once the linger is over
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_LINGER_MS + 500));
      expect(closed).toHaveBeenCalled();
    } finally {
      connections.mockRestore();
    }
  });

  it('reports a corrupt record, skips it in listings, and lets it be overwritten', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `bad${randomUUID().slice(0, 8)}`;
    const store = new VersionedStore(await open(prefix), { sweepIntervalMs: 0 });
    await store.transact(async (tx) => tx.set('c\x1fgood', 1, { by: 't' }));
    const raw = createClient({ url: redis.url });
    await raw.connect();
    try {
      await raw.hSet(`{${prefix}}:rec`, 'c\x1fbad', '{"rev":1,"v":');
      await raw.zAdd(`{${prefix}}:idx`, { score: 0, value: 'c\x1fbad' });
    } finally {
      await raw.close();
    }
    await expect(store.get('c\x1fbad')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', details: { cause: 'CORRUPT_RECORD' } });
    expect((await store.list({ lo: 'c\x1f', hi: 'c\x20', limit: 10 })).entries.map(([k]) => k)).toEqual(['c\x1fgood']);
    await store.transact(async (tx) => tx.set('c\x1fbad', 'fixed', { by: 't' }));
    expect((await store.get('c\x1fbad'))?.value).toBe('fixed');
  });

  it('keeps databases apart (redis://host:port/N)', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `db${randomUUID().slice(0, 8)}`;
    const one = await RedisBackend.open(`${redis.url}/1?prefix=${prefix}`);
    const zero = await RedisBackend.open(`${redis.url}/0?prefix=${prefix}`);
    redis.track(one, zero);
    await write(one, [['k', rec('in db 1')]]);
    expect((await one.get('k'))?.v).toBe('in db 1');
    expect(await zero.get('k')).toBeUndefined();
  });
});

describe('Redis: large records held', () => {
  const big = (n: number): string => `${n}:${'x'.repeat(20_000)}`;
  /** Counts the texts of large records the backend's scripts brought back. */
  function countTexts(backend: RedisBackend): { count: number } {
    const redis = (backend as unknown as { redis: { script: (...a: unknown[]) => Promise<unknown> } }).redis;
    const script = redis.script.bind(redis);
    const texts = { count: 0 };
    redis.script = async (...args: unknown[]) => {
      const reply = await script(...args);
      if (Array.isArray(reply)) texts.count += reply.filter((v) => typeof v === 'string' && v.length > 16_000).length;
      return reply;
    };
    return texts;
  }
  const readAll = async (b: RedisBackend, key: string) => {
    const listed = (await b.list({ lo: '', hi: '\uffff', limit: 10, now: Date.now() })).rows.find(([k]) => k === key)?.[1].v;
    const { result } = await b.transaction(async (tx) => ({ result: (await tx.get(key))?.v, writes: new Map() }), [key]);
    const { result: later } = await b.transaction(async (tx) => {
      await tx.get('other');
      return { result: (await tx.get(key))?.v, writes: new Map() };
    });
    return { got: (await b.get(key))?.v, listed, inTx: result, laterInTx: later };
  };

  it('a record this process holds comes back as its revision, in reads, transactions and listings, until it changes', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `held${randomUUID().slice(0, 8)}`;
    const [a, b] = [await open(prefix), await open(prefix)];
    const texts = countTexts(a);
    await write(a, [['doc', rec(big(1))]]);
    const held = await a.get('doc');
    expect(held?.v).toBe(big(1));
    expect(Object.isFrozen(held)).toBe(true);
    expect(await readAll(a, 'doc')).toEqual({ got: big(1), listed: big(1), inTx: big(1), laterInTx: big(1) });
    expect(texts.count).toBe(0);
    // rewritten by another store at the same size: brought back once, then held again
    await write(b, [['doc', rec(big(2), 2)]]);
    expect(await readAll(a, 'doc')).toEqual({ got: big(2), listed: big(2), inTx: big(2), laterInTx: big(2) });
    expect(texts.count).toBe(1);
    // a transaction that read the held record still conflicts with a write that changed it
    let runs = 0;
    await a.transaction(
      async (tx) => {
        runs++;
        const doc = await tx.get('doc');
        if (runs === 1) await write(b, [['doc', rec(big(3), 3)]]);
        return { result: null, writes: put([['copy', rec(doc!.v)]]) };
      },
      ['doc'],
    );
    expect(runs).toBe(2);
    expect((await a.get('copy'))?.v).toBe(big(3));
    await write(b, [['doc', rec('small', 4)]]);
    expect((await a.get('doc'))?.v).toBe('small');
    await write(b, [['doc', null]]);
    expect(await a.get('doc')).toBeUndefined();
    // a corrupt large text is reported on a read and left out of listings
    const raw = createClient({ url: redis.url });
    await raw.connect();
    try {
      await raw.hSet(`{${prefix}}:rec`, 'doc', `{"rev":9,"v":"${'x'.repeat(20_000)}`);
      await raw.zAdd(`{${prefix}}:idx`, { score: 0, value: 'doc' });
    } finally {
      await raw.close();
    }
    await expect(a.get('doc')).rejects.toMatchObject({ details: { cause: 'CORRUPT_RECORD' } });
    expect((await a.list({ lo: '', hi: '\uffff', limit: 10, now: Date.now() })).rows.map(([k]) => k)).toEqual(['copy']);
  });

  it('a board deleted and made again (revisions starting over) is never read from memory', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = `anew${randomUUID().slice(0, 8)}`;
    const a = await open(prefix);
    expect(await write(a, [['doc', rec(big(1))]])).toBe(1);
    expect(await readAll(a, 'doc')).toMatchObject({ got: big(1) });
    const raw = createClient({ url: redis.url });
    await raw.connect();
    const wipe = async () => {
      for (const key of await raw.keys(`{${prefix}}:*`)) await raw.del(key);
    };
    try {
      // made again by a store of this version (a new epoch), the same key written at the same revision and size
      await wipe();
      const c = await open(prefix);
      expect(await write(c, [['doc', rec(big(2))]])).toBe(1);
      expect(await readAll(a, 'doc')).toEqual({ got: big(2), listed: big(2), inTx: big(2), laterInTx: big(2) });
      // made again by one that sets no epoch
      await wipe();
      expect(await write(c, [['doc', rec(big(3))]])).toBe(1);
      expect(await readAll(a, 'doc')).toEqual({ got: big(3), listed: big(3), inTx: big(3), laterInTx: big(3) });
    } finally {
      await raw.close();
    }
  });
});
