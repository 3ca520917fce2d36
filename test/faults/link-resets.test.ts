// The link between servers and Postgres or Redis reset every ~3 s under load (through a fault proxy): every reply is
// checked against the final state, and almost no call fails.
import { describe, expect, it } from 'vitest';
import { sleep } from '../helpers.js';
import { checkFeed, checkFinal, follow, freshStore, Ledger, load, PG, proxyTo, REDIS, server } from './link-harness.js';

for (const kind of ['postgres', 'redis'] as const) {
  const base = kind === 'postgres' ? PG : REDIS;
  describe(`${kind}: the link to the database fails`, () => {
    it.skipIf(!base)(
      'resets every ~3 s for 40 s under 6 server processes: replies match the final state, almost no call fails',
      async () => {
        const store = freshStore(kind, base!);
        const proxy = await proxyTo(store);
        // the reader goes straight to the database (no resets); started with the others, it makes no call until the end
        const [reader, ...agents] = await Promise.all([
          server(store, 'reader'),
          ...Array.from({ length: 6 }, (_, i) => server(proxy.via(store), `s${i}`)),
        ]);
        const ledger = new Ledger();
        const feed = follow(agents[0], ledger, 0);
        const stop = load(agents, ledger);
        let resets = 0;
        const end = Date.now() + 40_000;
        while (Date.now() < end) {
          await sleep(2500 + Math.random() * 1000);
          if (proxy.resetAll() > 0) resets++;
        }
        await stop();
        const versions = await checkFinal(reader, ledger);
        await feed.drain((await reader.ok('state_changes', {})).revision as number);
        checkFeed(feed.changes, versions);
        const summary = `${ledger.calls} calls, ${ledger.failed} failed, ${ledger.unknown} unknown, ${resets} resets, slowest ${ledger.slowest} ms (${ledger.slowestCall}); ${ledger.errors.join(' | ')}`;
        console.error(`[link faults] ${kind} resets: ${summary}`);
        expect(resets).toBeGreaterThanOrEqual(10);
        expect(ledger.calls).toBeGreaterThan(300);
        expect(ledger.failed, summary).toBeLessThanOrEqual(ledger.calls * 0.001);
        expect(ledger.unknown, summary).toBeLessThanOrEqual(ledger.calls * 0.001);
      },
      120_000,
    );
  });
}
