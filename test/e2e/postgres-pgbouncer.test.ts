// Server processes on one Postgres behind a real PgBouncer in transaction mode (1.18 on Debian 12: a pooler that does
// not carry prepared statements between its server connections): reads, writes, claims and waits stay right.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgent, type Spawned } from '../helpers.js';
import { startPgBouncer, type PgBouncerHandle } from '../services/pgbouncer.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';

let bouncer: PgBouncerHandle | undefined;
let direct: URL | undefined;
let skipped: string | undefined;
let release = async (): Promise<void> => {};
beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) {
    skipped = found.skipped;
    return;
  }
  release = found.release;
  direct = new URL(found.url);
  // three server connections for two processes' pools and listeners: a client's statements move between them
  const started = await startPgBouncer(found.url, 3);
  if ('skipped' in started) skipped = started.skipped;
  else bouncer = started;
}, 60_000);
afterAll(async () => {
  await bouncer?.stop();
  await release();
});

let running: Spawned[] = [];
afterEach(async () => {
  await Promise.allSettled(running.map((a) => a.close()));
  running = [];
});

async function server(url: string, agent: string): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, '--agent', agent, '--thread', `${agent}-thread`]);
  running.push(a);
  return a;
}

describe('behind PgBouncer in transaction mode', () => {
  it('every acknowledged write is read back by the other process, listings and claims stay exact, a watch wakes', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(bouncer!.url);
    const [a, b] = await Promise.all([server(url, 'a'), server(url, 'b')]);
    // read-after-write across processes, the reads a mix of prepared statements and their unprepared fallback
    for (let i = 1; i <= 40; i++) {
      const written = await a.ok('state_set', { key: `k/${i % 5}`, value: { i } });
      const read = await b.ok('state_get', { key: `k/${i % 5}` });
      expect(read, `write ${i}`).toMatchObject({ found: true, value: { i }, version: written.version });
    }
    const listed = await b.ok('state_list', { prefix: 'k/' });
    expect(listed.keys.map((k: { key: string }) => k.key)).toEqual(['k/0', 'k/1', 'k/2', 'k/3', 'k/4']);
    // concurrent increments from both processes all land
    await Promise.all(
      [a, b].flatMap((s) => Array.from({ length: 15 }, () => s.ok('state_update', { key: 'n', op: 'increment', value: 1 }))),
    );
    expect(await a.ok('state_get', { key: 'n' })).toMatchObject({ value: 30, version: 30 });
    // claims: each step goes to exactly one of the two
    const { planId } = await a.ok('plan_create', { title: 'through the pooler', steps: ['one', 'two', 'three', 'four'] });
    const claims = await Promise.all([a, b, a, b].map((s) => s.ok('plan_claim', { planId })));
    const steps = claims.map((c) => c.step?.id).filter(Boolean);
    expect(new Set(steps).size).toBe(steps.length);
    expect((await b.ok('plan_get', { planId, detail: 'full' })).plan.steps.filter((s: { owner?: string }) => s.owner).length).toBe(
      steps.length,
    );
    // A watch in one process wakes on a write in the other. The pooler does not deliver doorbells (notifications): the
    // listener's safety poll (every 2 s) finds the first commit, and from then on it polls every 200 ms.
    const wake = async (value: number): Promise<number> => {
      const { version } = await a.ok('state_set', { key: 'w', value: value - 1 });
      const started = Date.now();
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 15_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value }), 100);
      const seen = await woke;
      expect(seen).toMatchObject({ found: true, value });
      expect(seen.timedOut).toBeFalsy();
      return Date.now() - started - 100;
    };
    expect(await wake(1)).toBeLessThan(3000);
    const later = [await wake(3), await wake(5), await wake(7)];
    for (const ms of later) expect(ms).toBeLessThan(600);
  }, 60_000);

  it('with listen_host naming Postgres itself, the listener hears doorbells past the pooler: a watch wakes at once', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = `${withFreshSchema(bouncer!.url)}&listen_host=${direct!.host}`;
    const [a, b] = await Promise.all([server(url, 'a'), server(url, 'b')]);
    for (let i = 1; i <= 3; i++) {
      const { version } = await a.ok('state_set', { key: 'w', value: 0 });
      const started = Date.now();
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 15_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value: i }), 100);
      expect(await woke).toMatchObject({ found: true, value: i });
      // the first one too: no safety poll needed (2 s), and not the 200 ms poll either
      expect(Date.now() - started - 100).toBeLessThan(150);
    }
  }, 60_000);
});
