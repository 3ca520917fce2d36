// Closing a shared store (Postgres, Redis) with calls in flight: each call settles soon (done, or failed because the
// store closed), and nothing is written after close() returned; a call waiting for a connection, or for a reconnect,
// is not left waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBlackboard } from '../../src/library/blackboard.js';
import { sleep } from '../helpers.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';
import { testRedis } from '../services/redis.js';

const found: Record<string, { url: string; release(): Promise<void> } | { skipped: string }> = {};
beforeAll(async () => {
  [found.postgres, found.redis] = await Promise.all([testPostgres(), testRedis()]);
}, 60_000);
afterAll(async () => {
  for (const f of Object.values(found)) if ('release' in f) await f.release();
});

const fresh = {
  postgres: (url: string) => withFreshSchema(url),
  redis: (url: string) =>
    `${url}${url.includes('?') ? '&' : '?'}prefix=close${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`,
};

describe.each(['postgres', 'redis'] as const)('closing a %s store with calls in flight', (backend) => {
  it('every call settles within a second, the ones that succeeded are what the store holds, and nothing lands after close()', async ({
    skip,
  }) => {
    const db = found[backend];
    if ('skipped' in db) return skip(db.skipped);
    const url = fresh[backend](db.url);
    const bb = await openBlackboard({ store: url, agent: 'a' });
    await bb.kv.set({ key: 'n', value: 0 });
    // more calls than the pool has connections, so that some are waiting for one when the store closes
    const calls = Promise.allSettled(Array.from({ length: 40 }, () => bb.kv.update({ key: 'n', op: 'increment', value: 1 })));
    await sleep(3);
    await bb.close();
    const settled = await Promise.race([
      calls,
      sleep(1000).then(() => {
        throw new Error('calls still unsettled 1 s after close()');
      }),
    ]);
    const done = settled.filter((r) => r.status === 'fulfilled').length;
    const reader = await openBlackboard({ store: url, agent: 'r' });
    try {
      expect((await reader.kv.get({ key: 'n' })).value).toBe(done);
      await sleep(1000);
      expect((await reader.kv.get({ key: 'n' })).value).toBe(done);
    } finally {
      await reader.close();
    }
  });
});
