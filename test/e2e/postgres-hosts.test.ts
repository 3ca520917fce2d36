// Server processes that share nothing but one Postgres, as on separate hosts: they behave like one server.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep, spawnAgent } from '../helpers.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';

type Spawned = Awaited<ReturnType<typeof spawnAgent>>;

let baseUrl: string | undefined;
let skipped: string | undefined;
let release = async (): Promise<void> => {};
beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) skipped = found.skipped;
  else ({ url: baseUrl, release } = found);
}, 60_000);
afterAll(() => release());

let running: Spawned[] = [];
afterEach(async () => {
  await Promise.allSettled(running.map((a) => a.close()));
  running = [];
});

/** One server process per "host": its own working directory, home and temp dir; only the store URL is shared. */
async function host(url: string, agent: string, env: Record<string, string> = {}): Promise<Spawned> {
  const home = mkdtempSync(join(tmpdir(), `bb-host-${agent}-`));
  const a = await spawnAgent(['--store', url, '--agent', agent], { HOME: home, TMPDIR: home, XDG_DATA_HOME: home, ...env }, home);
  running.push(a);
  return a;
}
const hosts = (url: string, n: number): Promise<Spawned[]> => Promise.all(Array.from({ length: n }, (_, i) => host(url, `h${i}`)));

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

describe('server processes on one Postgres, as separate hosts', () => {
  it('8 servers starting at once on a new schema create it once, then their concurrent increments all land', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const servers = await hosts(withFreshSchema(baseUrl!), 8);
    const M = 25;
    await Promise.all(
      servers.flatMap((a) => Array.from({ length: M }, () => a.ok('state_update', { key: 'counter', op: 'increment', value: 1 }))),
    );
    for (const a of servers) expect(await a.ok('state_get', { key: 'counter' })).toMatchObject({ value: 8 * M, version: 8 * M });
  });

  it('racing ifVersion:0 creators on 8 servers: exactly one winner per race', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const servers = await hosts(withFreshSchema(baseUrl!), 8);
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all(servers.map((a, i) => a.raw('state_set', { key: `leader-${round}`, value: i, ifVersion: 0 })));
      expect(results.filter((r) => !r.isError)).toHaveLength(1);
      for (const loser of results.filter((r) => r.isError)) {
        expect(JSON.parse((loser.content[0] as { text: string }).text).error.code).toBe('VERSION_CONFLICT');
      }
    }
  });

  it('a watch on one server wakes on another server’s write within milliseconds', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const [watcher, writer] = await hosts(withFreshSchema(baseUrl!), 2);
    const samples: number[] = [];
    const writes: number[] = [];
    const afterAck: number[] = [];
    for (let i = 1; i <= 15; i++) {
      let woke = 0;
      const waiting = watcher.ok('watch', { key: 'signal', afterVersion: i - 1, waitMs: 20_000 }).then((r) => {
        woke = performance.now();
        return r;
      });
      await sleep(150); // the watch is waiting before the write
      const wrote = performance.now();
      await writer.ok('state_set', { key: 'signal', value: i });
      const acked = performance.now();
      writes.push(acked - wrote);
      const result = await waiting;
      samples.push(woke - wrote);
      afterAck.push(woke - acked);
      expect(result).toMatchObject({ value: i, version: i, timedOut: false });
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.error(
      `postgres cross-process watch wake-up (write call start -> watch result): median ${median(samples).toFixed(1)} ms, ` +
        `max ${Math.max(...samples).toFixed(1)} ms; after the write returned: median ${median(afterAck).toFixed(1)} ms; ` +
        `the write call alone: median ${median(writes).toFixed(1)} ms`,
    );
    const wakeMedian = median(samples);
    // The safety poll alone would take up to 2 s: a median this low means the doorbell woke the watch.
    expect(wakeMedian).toBeLessThan(250);
  });

  it('kill -9 of a server keeps every write it acknowledged', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(baseUrl!);
    const victim = await host(url, 'victim');
    await victim.ok('state_get', { key: 'warm-up' }); // the load window starts once the server answers
    const acknowledged = new Map<string, number>();
    let stop = false;
    const load = Array.from({ length: 4 }, async (_, w) => {
      for (let n = 0; !stop; n++) {
        try {
          const r = await victim.raw('state_set', { key: `k${w}-${n}`, value: n });
          if (!r.isError) acknowledged.set(`k${w}-${n}`, (r.structuredContent as { version: number }).version);
        } catch {
          return; // the process is gone
        }
      }
    });
    await sleep(700);
    victim.kill();
    stop = true;
    await Promise.all(load);
    expect(acknowledged.size).toBeGreaterThan(10);
    const other = await host(url, 'other');
    for (const [key, version] of acknowledged) expect((await other.ok('state_get', { key })).version, key).toBe(version);
  });

  it('times come from the database clock, not from a host whose clock is two hours behind', async ({ skip }) => {
    if (skipped) return skip(skipped);
    if (!existsSync(LIBFAKETIME)) return skip('libfaketime is not installed (apt-get install faketime)');
    const url = withFreshSchema(baseUrl!);
    const [behind, onTime] = await Promise.all([
      host(url, 'behind', { LD_PRELOAD: LIBFAKETIME, FAKETIME: '-2h', FAKETIME_DONT_FAKE_MONOTONIC: '1' }),
      host(url, 'ontime'),
    ]);
    const before = Date.now();
    // With its own clock, the late host would write an expiry already two hours in the past.
    await behind.ok('state_set', { key: 'lease', value: 'held', ttlSeconds: 60 });
    const seen = await onTime.ok('state_get', { key: 'lease' });
    expect(seen).toMatchObject({ found: true, value: 'held' });
    expect(Math.abs(Date.parse(seen.updatedAt as string) - before)).toBeLessThan(30_000);
    // and the late host itself sees its lease as live, by the store's clock
    expect(await behind.ok('state_get', { key: 'lease' })).toMatchObject({ found: true });
  });
});
