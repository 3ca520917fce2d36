// Postgres going away under running servers: clear failures, recovery by itself, and nothing acknowledged or watched lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, spawnAgent } from '../helpers.js';
import { freePort, startPostgres, withFreshSchema, type PostgresHandle } from '../services/postgres.js';

type Spawned = Awaited<ReturnType<typeof spawnAgent>>;

// These tests stop and kill their own server, so they never use the suite's shared one.
let pg: PostgresHandle | undefined;
let skipped: string | undefined;
beforeAll(async () => {
  const started = await startPostgres({ maxConnections: 100 });
  if ('skipped' in started) skipped = started.skipped;
  else pg = started;
}, 60_000);
afterAll(async () => pg?.destroy());

const running: Spawned[] = [];
afterAll(async () => {
  await Promise.allSettled(running.map((a) => a.close()));
});
async function server(url: string, agent: string): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, '--agent', agent]);
  running.push(a);
  return a;
}
const errorCode = (r: { isError?: boolean; content: unknown }): string | undefined =>
  r.isError ? (JSON.parse((r.content as Array<{ text: string }>)[0].text) as { error: { code: string } }).error.code : undefined;

describe('postgres store going away', () => {
  it('an unreachable store at start-up: one stderr line naming the URL, password masked, and the cause; exit 1', async () => {
    const port = await freePort();
    const started = Date.now();
    const { code, stdout, stderr } = await runCli(['--store', `postgres://agent:hunter2@127.0.0.1:${port}/board?schema=x`]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`postgres://agent:***@127.0.0.1:${port}/board?schema=x`);
    expect(lines[0]).toMatch(/ECONNREFUSED/);
    expect(stderr).not.toContain('hunter2');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('gives STORE_UNAVAILABLE within seconds while Postgres is down, and recovers by itself when it is back', async ({ skip }) => {
    if (skipped || !pg) return skip(skipped);
    const a = await server(withFreshSchema(pg.url), 'a');
    await a.ok('state_set', { key: 'before', value: 1 });
    await pg.stop();
    for (const [tool, args] of [
      ['state_set', { key: 'during', value: 2 }],
      ['state_get', { key: 'before' }],
      ['state_update', { key: 'n', op: 'increment', value: 1 }],
    ] as const) {
      const started = Date.now();
      const result = await a.raw(tool, args);
      expect(errorCode(result), tool).toBe('STORE_UNAVAILABLE');
      expect(Date.now() - started, tool).toBeLessThan(8000);
    }
    await pg.restart();
    const deadline = Date.now() + 15_000;
    let result = await a.raw('state_get', { key: 'before' });
    while (result.isError && Date.now() < deadline) {
      await sleep(200);
      result = await a.raw('state_get', { key: 'before' });
    }
    expect(result.structuredContent).toMatchObject({ found: true, value: 1 });
    expect(await a.ok('state_get', { key: 'during' })).toMatchObject({ found: false });
    await a.ok('state_set', { key: 'after', value: 3 });
  });

  it('a server that hangs (SIGSTOP) makes calls fail within the configured timeouts, never hang; it recovers after', async ({ skip }) => {
    if (skipped || !pg) return skip(skipped);
    const a = await server(`${withFreshSchema(pg.url)}&statement_timeout=2000&connect_timeout=2`, 'a');
    await a.ok('state_set', { key: 'k', value: 1 });
    pg.freeze();
    try {
      for (const [tool, args] of [
        ['state_set', { key: 'k', value: 2 }],
        ['state_get', { key: 'k' }],
      ] as const) {
        const started = Date.now();
        expect(errorCode(await a.raw(tool, args)), tool).toBe('STORE_UNAVAILABLE');
        expect(Date.now() - started, tool).toBeLessThan(8000);
      }
    } finally {
      pg.thaw();
    }
    const deadline = Date.now() + 15_000;
    let result = await a.raw('state_set', { key: 'k', value: 3 });
    while (result.isError && Date.now() < deadline) {
      await sleep(200);
      result = await a.raw('state_set', { key: 'k', value: 3 });
    }
    expect(result.isError).toBeFalsy();
    expect(await a.ok('state_get', { key: 'k' })).toMatchObject({ value: 3 });
  });

  for (const how of ['stop', 'kill9'] as const) {
    it(`Postgres restarted (${how}) under load: acknowledged writes are all there; watchers and a state_changes follower miss nothing`, async ({
      skip,
    }) => {
      if (skipped || !pg) return skip(skipped);
      const url = withFreshSchema(pg.url);
      const [follower, ...writers] = await Promise.all([server(url, 'f'), server(url, 'w1'), server(url, 'w2')]);
      // The change feed follower (below) starts from the revision before any write.
      let after = (await follower.ok('state_changes', {})).revision as number;
      const acknowledged = new Map<string, number>();
      let total = 0; // the highest acknowledged value of 'total'
      let stop = false;
      const load = writers.map(async (w, i) => {
        for (let n = 0; !stop; n++) {
          const key = `w${i}-${n}`;
          const set = await w.raw('state_set', { key, value: n });
          if (!set.isError) acknowledged.set(key, (set.structuredContent as { version: number }).version);
          const inc = await w.raw('state_update', { key: 'total', op: 'increment', value: 1 });
          if (!inc.isError) total = Math.max(total, (inc.structuredContent as { value: number }).value);
          if (set.isError || inc.isError) await sleep(50);
        }
      });
      // The follower keeps one watch open on 'total' at a time, each after the version it last saw.
      const seen: number[] = [];
      let following = true;
      const follow = (async () => {
        let after = 0;
        while (following) {
          const r = await follower.raw('watch', { key: 'total', afterVersion: after, waitMs: 30_000 });
          if (r.isError) {
            await sleep(100);
            continue;
          }
          const got = r.structuredContent as { version?: number; timedOut: boolean };
          if (!got.timedOut && got.version !== undefined) {
            seen.push(got.version);
            after = got.version;
          }
        }
      })();
      // A state_changes follower pages through the change log with long waits, retrying the same revision on errors.
      type Change = { key: string; version: number; revision: number };
      const changes: Change[] = [];
      let drainTo = Infinity;
      const feed = (async () => {
        while (after < drainTo) {
          const r = await follower.raw('state_changes', { afterRevision: after, waitMs: 2000, limit: 200 });
          if (r.isError) {
            await sleep(100);
            continue;
          }
          const page = r.structuredContent as { changes: Change[]; revision: number };
          changes.push(...page.changes);
          after = page.revision;
        }
      })();
      // A watch that waits across the whole outage, on a key written only after it.
      const late = follower.ok('watch', { key: 'late', waitMs: 60_000 });
      await sleep(800);
      if (how === 'stop') await pg.stop();
      else await pg.kill9();
      await sleep(500);
      await pg.restart();
      // Load continues until both writers have written again after the restart.
      const resumed = acknowledged.size;
      const deadline = Date.now() + 20_000;
      while (acknowledged.size < resumed + 20 && Date.now() < deadline) await sleep(100);
      stop = true;
      await Promise.all(load);
      expect(acknowledged.size).toBeGreaterThan(resumed + 10);

      // A watcher waiting across the restart is woken by a write made after it, without re-asking.
      const wrote = Date.now();
      await writers[1].ok('state_set', { key: 'late', value: 'now' });
      expect(await late).toMatchObject({ found: true, value: 'now', timedOut: false });
      expect(Date.now() - wrote).toBeLessThan(3000);
      // The follower's chain of watches saw the counter rise to its last value, in order.
      const final = await writers[0].ok('state_get', { key: 'total' });
      const caughtUp = Date.now() + 5000;
      while (seen.at(-1) !== final.version && Date.now() < caughtUp) await sleep(20);
      expect(seen.at(-1)).toBe(final.version);
      for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
      const lastWrite = await writers[1].ok('state_update', { key: 'total', op: 'increment', value: 1 });
      const wake = Date.now() + 3000;
      while (seen.at(-1) !== lastWrite.version && Date.now() < wake) await sleep(10);
      expect(seen.at(-1)).toBe(lastWrite.version);
      following = false;
      await writers[0].ok('state_update', { key: 'total', op: 'increment', value: 1 }); // ends the last watch
      await follow;

      // The change feed follower missed nothing: every acknowledged write is in it, each once.
      drainTo = (await writers[0].ok('state_changes', {})).revision;
      await feed;
      const fed = new Set(changes.map((c) => `${c.key}@${c.version}`));
      expect(fed.size).toBe(changes.length);
      for (const [key, version] of acknowledged) expect(fed.has(`${key}@${version}`), `${key}@${version}`).toBe(true);
      for (let v = 1; v <= total; v++) expect(fed.has(`total@${v}`), `total@${v}`).toBe(true);

      // Every acknowledged write survived the restart, read by a server started afterwards.
      const check = await server(url, 'check');
      for (const [key, version] of acknowledged) {
        const got = await check.ok('state_get', { key });
        expect(got.found, key).toBe(true);
        expect(got.version, key).toBe(version);
      }
      expect((await check.ok('state_get', { key: 'total' })).value).toBeGreaterThanOrEqual(total);
    }, 120_000);
  }
});
