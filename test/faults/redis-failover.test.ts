// Redis with a replica: pointed at the replica, a server stops at start-up with one line; pointed at a primary that
// a failover turns into a replica (its replica promoted), each write is STORE_UNAVAILABLE with nothing changed while
// reads go on, and the same server writes again, by itself, once its Redis is a primary again.
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, spawnAgent } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let primary: RedisHandle | undefined;
let replica: RedisHandle | undefined;
let skipped: string | undefined;

/** Sends one command to `server` as an administrator would. */
async function command(server: RedisHandle, ...args: string[]): Promise<unknown> {
  const admin = createClient({ url: server.url });
  await admin.connect();
  try {
    return await admin.sendCommand(args);
  } finally {
    await admin.close();
  }
}

/** Makes `follower` a replica of `leader` and waits until it has copied it. */
async function follow(follower: RedisHandle, leader: RedisHandle): Promise<void> {
  await command(follower, 'REPLICAOF', '127.0.0.1', String(leader.port));
  const deadline = Date.now() + 20_000;
  while (!/master_link_status:up/.test(String(await command(follower, 'INFO', 'replication')))) {
    if (Date.now() > deadline) throw new Error('the replica did not catch up');
    await sleep(100);
  }
}

beforeAll(async () => {
  const [a, b] = await Promise.all([startRedis(), startRedis()]);
  if ('skipped' in a || 'skipped' in b) {
    skipped = 'skipped' in a ? a.skipped : (b as { skipped: string }).skipped;
    return;
  }
  primary = a;
  replica = b;
  await follow(replica, primary);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([primary?.stop(), replica?.stop()]);
});

describe('Redis replicas and failover', () => {
  it('a replica stops start-up with one line', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const result = await runCli(['--store', `${replica!.url}?prefix=fo1`]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^mcp-blackboard: cannot open the store redis:\/\/127\.0\.0\.1:\d+\?prefix=fo1: READONLY/);
  });

  it('a primary turned replica refuses writes with nothing changed, reads go on, and it writes again once primary', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const a = await spawnAgent(['--store', `${primary!.url}?prefix=fo2`, '--agent', 'a']);
    try {
      await a.ok('state_set', { key: 'before', value: 1 });
      const { planId } = await a.ok('plan_create', { title: 'failover', steps: ['one', 'two'] });
      // the failover: the replica is promoted, the old primary follows it
      await command(replica!, 'REPLICAOF', 'NO', 'ONE');
      await follow(primary!, replica!);
      for (const [tool, args] of [
        ['state_set', { key: 'during', value: 2 }],
        ['state_update', { key: 'before', op: 'increment', value: 1 }],
        ['plan_claim', { planId }],
      ] as const) {
        const refused = await a.err(tool, args);
        expect(refused.code, tool).toBe('STORE_UNAVAILABLE');
        expect(refused.message, tool).toMatch(/READONLY.*Nothing was changed/);
        expect(refused.message, tool).not.toMatch(/may or may not/);
      }
      // reads go on, from what the promoted replica holds
      expect(await a.ok('state_get', { key: 'before' })).toMatchObject({ found: true, value: 1, version: 1 });
      expect(await a.ok('state_get', { key: 'during' })).toMatchObject({ found: false });
      expect((await a.ok('plan_get', { planId })).plan.steps[0]).toMatchObject({ status: 'pending' });
      // failing back: the old primary is promoted again, and the same server writes without a restart
      await command(primary!, 'REPLICAOF', 'NO', 'ONE');
      await follow(replica!, primary!);
      expect(await a.ok('state_update', { key: 'before', op: 'increment', value: 1 })).toMatchObject({ value: 2, version: 2 });
      expect(await a.ok('plan_claim', { planId })).toMatchObject({ claimed: true });
      const changes = (await a.ok('state_changes', { afterRevision: 0, waitMs: 0 })).changes.map((c: { key: string }) => c.key);
      expect(changes).not.toContain('during');
    } finally {
      await a.close();
    }
    expect(a.stderr()).not.toMatch(/Error:| {4}at /);
  }, 60_000);
});
