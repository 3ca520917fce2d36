// Redis at its maxmemory with noeviction (the policy the board asks for): the write that does not fit is
// STORE_UNAVAILABLE and changes nothing (no revision taken, no change logged), reads go on, the server writes again by
// itself once Redis has room, and every acknowledged write is there after a restart of the server.
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgent, writeUntilRefused } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let server: RedisHandle | undefined;
let skipped: string | undefined;
const config = async (name: string, value: string): Promise<void> => {
  const admin = createClient({ url: server!.url });
  await admin.connect();
  await admin.sendCommand(['CONFIG', 'SET', name, value]);
  await admin.close();
};

beforeAll(async () => {
  const started = await startRedis();
  if ('skipped' in started) skipped = started.skipped;
  else server = started;
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe('Redis out of memory', () => {
  it('refuses the write that does not fit, changing nothing, and recovers by itself when Redis has room', async ({ skip }) => {
    if (skipped) return skip(skipped);
    await config('maxmemory-policy', 'noeviction');
    await config('maxmemory', '3mb');
    const args = ['--store', `${server!.url}?prefix=oom`, '--agent', 'a'];
    const a = await spawnAgent(args);
    const acked: number[] = [];
    try {
      const filled = await writeUntilRefused(a, 100_000, 100);
      acked.push(...filled.acked);
      const refused = filled.refused;
      expect(refused, 'Redis never ran out of memory').toBeDefined();
      expect(refused!.code).toBe('STORE_UNAVAILABLE');
      expect(refused!.message).toMatch(
        /^The store could not write: OOM command not allowed when used memory > 'maxmemory'\. Nothing was changed/,
      );
      expect(refused!.message).not.toMatch(/script:|@user_script/);
      const failed = acked.length;
      expect((await a.ok('state_get', { key: `k${failed}` })).found).toBe(false);
      expect(await a.ok('state_get', { key: 'k0', maxBytes: 100 })).toMatchObject({ found: true, truncated: true });
      const logged = async (): Promise<string[]> =>
        (await a.ok('state_changes', { afterRevision: 0, limit: 1000, waitMs: 0 })).changes.map((c: { key: string }) => c.key);
      expect(await logged()).not.toContain(`k${failed}`);
      await config('maxmemory', '0');
      await a.ok('state_set', { key: `k${failed}`, value: 'x'.repeat(100_000) });
      acked.push(failed);
      expect((await logged()).filter((key) => key === `k${failed}`)).toHaveLength(1);
    } finally {
      await a.close();
    }
    const again = await spawnAgent(args);
    try {
      for (const i of acked) expect((await again.ok('state_get', { key: `k${i}`, maxBytes: 100 })).found, `k${i}`).toBe(true);
    } finally {
      await again.close();
    }
  }, 60_000);
});
