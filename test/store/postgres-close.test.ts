// Closing a Postgres store with calls in flight: each call settles (done, or failed because the store closed), and
// nothing is written after close() returned; a call waiting for a connection is not left waiting for ever.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBlackboard } from '../../src/library/blackboard.js';
import { sleep } from '../helpers.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';

let pgUrl: string | undefined;
let release: (() => Promise<void>) | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) skipped = found.skipped;
  else ({ url: pgUrl, release } = found);
}, 60_000);
afterAll(async () => {
  await release?.();
});

describe('closing a Postgres store with calls in flight', () => {
  it('every call settles, the ones that succeeded are what the store holds, and nothing lands after close()', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(pgUrl!);
    const bb = await openBlackboard({ store: url, agent: 'a' });
    await bb.kv.set({ key: 'n', value: 0 });
    // more calls than the pool has connections, so that some are waiting for one when the store closes
    const calls = Promise.allSettled(Array.from({ length: 40 }, () => bb.kv.update({ key: 'n', op: 'increment', value: 1 })));
    await sleep(3);
    await bb.close();
    const settled = await Promise.race([
      calls,
      sleep(5000).then(() => {
        throw new Error('calls still unsettled 5 s after close()');
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
