// Redis as managed services hand it out: an ACL user limited to its board's keys and without the @dangerous commands
// (INFO, CONFIG). The server starts, says once on stderr that it cannot check persistence, and every family of tools
// works across two processes; a board outside the user's keys is one line at start-up.
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnAgent } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let server: RedisHandle | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const started = await startRedis();
  if ('skipped' in started) {
    skipped = started.skipped;
    return;
  }
  server = started;
  const admin = createClient({ url: started.url });
  await admin.connect();
  // keys of the board `team-a` only ({team-a}:…), every command but the dangerous ones (INFO, CONFIG, KEYS, FLUSHALL…)
  await admin.sendCommand(['ACL', 'SETUSER', 'team-a', 'on', '>s3cr:t@', '~{team-a}:*', '&*', '+@all', '-@dangerous']);
  await admin.close();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const urlFor = (prefix: string): string => `redis://team-a:${encodeURIComponent('s3cr:t@')}@127.0.0.1:${server!.port}?prefix=${prefix}`;

describe('Redis with an ACL user limited to its board', () => {
  it('starts without INFO or CONFIG (one warning line), and every tool family works across two processes', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const args = (agent: string) => ['--store', urlFor('team-a'), '--agent', agent, '--thread', `${agent}-t`];
    const [a, b] = [await spawnAgent(args('a')), await spawnAgent(args('b'))];
    try {
      await a.ok('state_set', { key: 'k', value: { n: 1 } });
      expect(await b.ok('state_get', { key: 'k' })).toMatchObject({ found: true, value: { n: 1 } });
      const { planId } = await a.ok('plan_create', { title: 'acl', steps: ['one', 'two'] });
      const claims = await Promise.all([a.ok('plan_claim', { planId }), b.ok('plan_claim', { planId })]);
      expect(new Set(claims.map((c) => c.step.id)).size).toBe(2);
      const { version } = await a.ok('state_set', { key: 'w', value: 0 });
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 10_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value: 1 }), 100);
      expect(await woke).toMatchObject({ found: true, value: 1 });
      await a.ok('message_send', { to: 'b', content: 'hello' });
      expect((await b.ok('inbox', { waitMs: 5000 })).messages.map((m: { content: string }) => m.content)).toEqual(['hello']);
      await a.ok('history_append', { kind: 'note', content: 'noted' });
      const { checkpointId } = await a.ok('checkpoint_save', {});
      await a.ok('state_set', { key: 'k', value: { n: 2 } });
      await a.ok('checkpoint_restore', { checkpointId });
      expect(await b.ok('state_changes', { waitMs: 0 })).toMatchObject({ changes: expect.any(Array) });
      expect((await a.raw('board_show', {})).isError).toBeFalsy();
    } finally {
      await a.close();
      await b.close();
    }
    const lines = a.stderr().trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/warning: cannot read the persistence settings of redis:\/\/team-a:\*\*\*@.*\(CONFIG GET is not allowed\)/);
    expect(lines[1]).toMatch(/on stdio: \d+ tools, store=redis:\/\/team-a:\*\*\*@127\.0\.0\.1:\d+\?prefix=team-a$/);
    expect(a.stderr()).not.toContain('s3cr');
  });

  it("refuses a board outside the user's keys at start-up with one line", async ({ skip }) => {
    if (skipped) return skip(skipped);
    const result = await runCli(['--store', urlFor('team-b')]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/cannot open the store redis:\/\/team-a:\*\*\*@127\.0\.0\.1:\d+\?prefix=team-b: NOPERM/);
    expect(result.stderr).not.toContain('s3cr');
  });
});
