// The Redis backend's turn: a transaction that keeps losing to other processes' commits takes a turn and wins.
import { randomUUID } from 'node:crypto';
import { createClient } from '@redis/client';
import { describe, expect, it } from 'vitest';
import type { RedisBackend, RedisOptions } from '../../src/store/redis/backend.js';
import type { RedisConnection } from '../../src/store/redis/client.js';
import { TURN_AFTER_CONFLICTS, TURN_TTL_MS } from '../../src/store/redis/turn.js';
import type { RecordWrite, Writes } from '../../src/store/types.js';
import { redisBackendsForFile } from './redis-backends.js';

const redis = redisBackendsForFile();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const newPrefix = (): string => `turn${randomUUID().slice(0, 8)}`;
/** Each backend has its own connection and its own per-key locks: two of them on one prefix are two processes. */
const open = (prefix: string, overrides: RedisOptions = {}): Promise<RedisBackend> => redis.open(prefix, overrides);
const rec = (v: RecordWrite['v'], ver: number): RecordWrite => ({ v, ver, at: Date.now(), by: 'test' });
const put = (entries: Array<[string, RecordWrite]>): Writes => new Map(entries.map(([key, record]) => [key, { record, log: true }]));

/** One short writer's commit: reads a counter and writes it plus one. */
const increment = (backend: RedisBackend, key: string) =>
  backend.transaction(
    async (tx) => {
      const current = await tx.get(key);
      const next = ((current?.v as number | undefined) ?? 0) + 1;
      return { result: next, writes: put([[key, rec(next, (current?.ver ?? 0) + 1)]]) };
    },
    [key],
  );

/** A raw client on the test server, to look at (or set) the turn key as another process would. */
async function rawClient() {
  const client = createClient({ url: redis.url });
  client.on('error', () => {});
  await client.connect();
  return client;
}

describe('Redis turn: a starving transaction wins across processes', () => {
  it("a long transaction listing keys that another store's flood keeps changing commits, and every flood write stays", async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = newPrefix();
    const long = await open(prefix, { conflictTimeoutMs: 10_000 });
    const flooder = await open(prefix);
    const keys = Array.from({ length: 20 }, (_, i) => `c\x1f${String(i).padStart(2, '0')}`);
    for (const key of keys) await increment(flooder, key);
    const acknowledged = new Map(keys.map((key) => [key, 1]));
    let stop = false;
    // four concurrent loops of short commits, flat out, to keys the long transaction lists
    const loops = Array.from({ length: 4 }, async (_, loop) => {
      for (let n = loop; !stop; n += 4) {
        const key = keys[n % keys.length];
        await increment(flooder, key);
        acknowledged.set(key, acknowledged.get(key)! + 1);
      }
    });
    await sleep(200);
    let runs = 0;
    const started = Date.now();
    let failure: unknown;
    const done = await long
      .transaction(async (tx) => {
        runs++;
        const rows = await tx.list({ lo: 'c\x1f', hi: 'c\x20', limit: 100, now: Date.now() });
        await sleep(20); // a slow reader: the flood is sure to change what it listed before it commits
        for (const [key] of rows.slice(0, 5)) await tx.get(key);
        const sum = rows.reduce((total, [, record]) => total + (record.v as number), 0);
        return { result: sum, writes: put([['sum', rec(sum, runs)]]) };
      })
      .catch((error: unknown) => {
        failure = error;
        return undefined;
      });
    const took = Date.now() - started;
    stop = true;
    await Promise.all(loops);
    expect(failure).toBeUndefined();
    expect(took).toBeLessThan(5000);
    // once it holds the turn, nothing it read can change: its first run with the turn commits
    expect(runs).toBeLessThanOrEqual(TURN_AFTER_CONFLICTS + 1);
    expect((await long.get('sum'))?.v).toBe(done?.result);
    for (const key of keys) expect((await flooder.get(key))?.v, key).toBe(acknowledged.get(key));
    // the flood went on around the turn: it was held only briefly
    expect([...acknowledged.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(keys.length * 2);
  });

  /**
   * `holder` reads x, and while it does not hold the turn `other` changes x under it (a conflict); once the turn is
   * taken, `atTurn` runs in place of the rest of the transaction. Resolves when the holder holds the turn.
   */
  async function holdTurn(prefix: string, atTurn: () => Promise<never>) {
    const holder = await open(prefix, { conflictTimeoutMs: 30_000 });
    const other = await open(prefix);
    const raw = await rawClient();
    await increment(other, 'x');
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const done = holder.transaction(
      async (tx) => {
        await tx.get('x');
        if (await raw.get(`{${prefix}}:turn`)) {
          holding();
          return atTurn();
        }
        await increment(other, 'x');
        return { result: null, writes: put([['y', rec(1, 1)]]) };
      },
      ['x'],
    );
    done.catch(() => {});
    await held;
    return { holder, other, raw, done };
  }

  it("a holder that dies (its connection gone, never releasing) blocks the others for the turn's lifetime at most", async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = newPrefix();
    const { holder, other, raw } = await holdTurn(prefix, () => new Promise<never>(() => {}));
    // the holder's process is gone as far as Redis can tell: no renewal, no release
    (holder as unknown as { redis: RedisConnection }).redis.destroy();
    const left = Number(await raw.pTTL(`{${prefix}}:turn`));
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(TURN_TTL_MS);
    const started = Date.now();
    await increment(other, 'x');
    const waited = Date.now() - started;
    // refused while the turn stood, committed soon after it expired
    expect(waited).toBeGreaterThanOrEqual(left - 100);
    expect(waited).toBeLessThan(TURN_TTL_MS + 1000);
    expect(await raw.exists(`{${prefix}}:turn`)).toBe(0);
    expect((await other.get('x'))?.v).toBe(TURN_AFTER_CONFLICTS + 2);
    await raw.close();
  });

  it('a holder whose transaction fails gives the turn back at once', async ({ skip }) => {
    if (redis.skipped) skip(redis.skipped);
    const prefix = newPrefix();
    let fail!: (error: Error) => void;
    const { other, raw, done } = await holdTurn(
      prefix,
      () =>
        new Promise<never>((_, reject) => {
          fail = reject;
        }),
    );
    expect(await raw.exists(`{${prefix}}:turn`)).toBe(1);
    fail(new Error('refused by the application'));
    await expect(done).rejects.toThrow('refused by the application');
    expect(await raw.exists(`{${prefix}}:turn`)).toBe(0);
    const started = Date.now();
    await increment(other, 'x');
    expect(Date.now() - started).toBeLessThan(500);
    await raw.close();
  });
});
