// A silent partition between servers and Postgres or Redis (through a fault proxy), with server kill -9s and a
// crash-restart of the database: every call answers within 15 s, all recovers, every reply matches the final state.
import { describe, expect, it } from 'vitest';
import { sleep } from '../helpers.js';
import { startPostgres } from '../services/postgres.js';
import { startRedis } from '../services/redis.js';
import {
  checkFeed,
  checkFinal,
  databases,
  follow,
  freshStore,
  Ledger,
  load,
  PG,
  proxyTo,
  readyServer,
  REDIS,
  server,
  setUntilDone,
  watchFor,
} from './link-harness.js';

for (const kind of ['postgres', 'redis'] as const) {
  const base = kind === 'postgres' ? PG : REDIS;
  describe(`${kind}: the link to the database fails`, () => {
    it.skipIf(!base)(
      'a 12 s silent partition, server kill -9s and a database crash-restart: every call answers within 15 s, all recovers, the follower misses nothing',
      async () => {
        const started = kind === 'postgres' ? await startPostgres({ maxConnections: 100 }) : await startRedis();
        if ('skipped' in started) return;
        databases.push(started);
        const store = freshStore(kind, started.url);
        const proxy = await proxyTo(store);
        const agents = await Promise.all(Array.from({ length: 4 }, (_, i) => readyServer(proxy.via(store), `p${i}`)));
        const ledger = new Ledger();
        const feed = follow(agents[0], ledger, 0);
        // Writers on the servers that will be killed, and on the ones that stay.
        let stop = load(agents, ledger, 20);
        // A watch waiting across the partition (on a key written only after it heals).
        const acrossPartition = watchFor(agents[1], 'bell', 0);
        await sleep(2000);
        const healed = proxy.partition(12_000);
        await sleep(4000);
        agents[3].kill(); // kill -9 during the partition
        // Its replacement starts while the partition lasts: it keeps trying to open the store and serves once healed.
        const replacement = readyServer(proxy.via(store), 'p4');
        await healed;
        const healedAt = Date.now();
        await stop();
        const survivors = [...agents.slice(0, 3), await replacement];
        const startedIn = Date.now() - healedAt;
        const rungAfterPartition = await setUntilDone(agents[2], 'bell', 1);
        const woken = [await acrossPartition];
        stop = load(survivors.slice(1), ledger, 20);
        // A watch waiting across the database's crash-restart.
        const acrossCrash = watchFor(agents[0], 'bell', 1);
        await sleep(2000);
        // The database crashes and comes back; another server is killed meanwhile.
        await started.kill9();
        survivors[3].kill();
        await sleep(500);
        await started.restart();
        await sleep(4000);
        await stop();
        const rungAfterCrash = await setUntilDone(agents[2], 'bell', 2);
        woken.push(await acrossCrash);
        // Recovered by itself: every surviving server answers again.
        for (const agent of survivors.slice(0, 3)) {
          let reply = await ledger.call(agent, 'state_get', { key: 'list-0' });
          for (let i = 0; !reply.ok && i < 50; i++) {
            await sleep(200);
            reply = await ledger.call(agent, 'state_get', { key: 'list-0' });
          }
          expect(reply.ok).toBe(true);
        }
        const reader = await server(store, 'reader');
        const versions = await checkFinal(reader, ledger);
        await feed.drain((await reader.ok('state_changes', {})).revision as number);
        checkFeed(feed.changes, versions);
        const summary = `${ledger.calls} calls, replacement served ${startedIn} ms after the heal, ${ledger.failed} failed, ${ledger.unknown} unknown, slowest ${ledger.slowest} ms (${ledger.slowestCall}); ${ledger.errors.slice(0, 5).join(' | ')}`;
        const wakes = `watches woke ${woken[0].at - rungAfterPartition} ms after the write past the partition and ${woken[1].at - rungAfterCrash} ms after the one past the crash-restart, ${woken[0].errors + woken[1].errors} watch calls failed`;
        console.error(`[link faults] ${kind} partition: ${summary}; ${wakes}`);
        expect(woken.map((w) => w.version)).toEqual([1, 2]);
        expect(woken[0].at - rungAfterPartition, wakes).toBeLessThan(5000);
        expect(woken[1].at - rungAfterCrash, wakes).toBeLessThan(5000);
        expect(ledger.slowest, summary).toBeLessThan(15_000);
        expect(ledger.acked.size).toBeGreaterThan(100);
      },
      120_000,
    );
  });
}
