// Server processes on one Postgres behind a real PgBouncer in transaction mode (1.18 on Debian 12: a pooler that does
// not carry prepared statements between its server connections): reads, writes, claims and waits stay right.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openStore } from '../../src/store/open.js';
import type { VersionedStore } from '../../src/store/versioned-store.js';
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

  it("boards in other schemas behind one pooler never run each other's prepared statements", async ({ skip }) => {
    if (skipped) return skip(skipped);
    // A pooler of two server connections, steered by clients that hold one of them in a transaction: board A
    // prepares its reads on one server connection, board B on the other; then each read is sent where the other board
    // prepared its statements. A name given to a statement must mean that statement (its schema's table) everywhere.
    const pool = await startPgBouncer(direct!.href, 2);
    if ('skipped' in pool) return skip(pool.skipped);
    const holders = [new pg.Client({ connectionString: pool.url }), new pg.Client({ connectionString: pool.url })];
    const stores: VersionedStore[] = [];
    try {
      await Promise.all(holders.map((h) => h.connect()));
      const hold = (h: pg.Client) => h.query('BEGIN').then(() => h.query('SELECT 1'));
      const free = (h: pg.Client) => h.query('COMMIT');
      const [h1, h2] = holders;
      const open = async (name: string): Promise<VersionedStore> => {
        const store = await openStore(withFreshSchema(pool.url, name));
        stores.push(store);
        await store.transact(async (tx) => tx.set('k', `board ${name}`, { by: name }));
        expect((await store.get('k'))?.value).toBe(`board ${name}`);
        return store;
      };
      await hold(h1); // server connection 1 held: A opens and prepares on 2
      const a = await open('a');
      await hold(h2); // 2 held
      await free(h1); // B opens and prepares on 1
      const b = await open('b');
      await hold(h1); // 1 held: A reads on 2, where its statements are
      await free(h2);
      expect((await a.get('k'))?.value).toBe('board a');
      await hold(h2); // 2 held: each reads on 1, where B's statements are
      await free(h1);
      expect((await b.get('k'))?.value).toBe('board b');
      expect((await a.get('k'))?.value).toBe('board a');
      await hold(h1); // and on 2, where A's are
      await free(h2);
      expect((await b.get('k'))?.value).toBe('board b');
      expect((await a.get('k'))?.value).toBe('board a');
      await free(h1);
    } finally {
      await Promise.allSettled(stores.map((store) => store.close()));
      await Promise.allSettled(holders.map((h) => h.end()));
      await pool.stop();
    }
  }, 60_000);

  it('with listen_host naming Postgres itself, the listener hears doorbells past the pooler: a watch wakes at once', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = `${withFreshSchema(bouncer!.url)}&listen_host=${direct!.host}`;
    const [a, b] = await Promise.all([server(url, 'a'), server(url, 'b')]);
    const latencies: number[] = [];
    for (let i = 1; i <= 9; i++) {
      const { version } = await a.ok('state_set', { key: 'w', value: 0 });
      const started = Date.now();
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 15_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value: i }), 100);
      expect(await woke).toMatchObject({ found: true, value: i });
      latencies.push(Date.now() - started - 100);
    }
    // the first one too: no safety poll needed (2 s); and not the 200 ms poll either, whose wake-ups would spread
    // evenly over 0-200 ms (the median, not each, so that a loaded machine's odd slow one does not fail it)
    latencies.sort((x, y) => x - y);
    expect(latencies.at(-1), String(latencies)).toBeLessThan(1_500);
    expect(latencies[4], String(latencies)).toBeLessThan(60);
  }, 60_000);
});
