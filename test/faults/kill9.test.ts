import { describe, expect, it } from 'vitest';
import { sleep, spawnAgent } from '../helpers.js';
import { sharedStores } from '../stores.js';

// Acknowledged means durable: every write that returned is there after kill -9 of the server.
// SQLite's two durability modes both keep acknowledged writes; the other backends have one.
const cases = sharedStores().flatMap((store) => (store.name === 'sqlite' ? ['full', 'normal'] : ['full']).map((sync) => ({ store, sync })));

describe('kill -9', () => {
  it.each(cases)(
    'keeps every acknowledged write across repeated kill -9 during a write load ($store.name, --sync $sync)',
    async ({ store, sync }) => {
      const url = store.fresh();
      const acknowledged = new Map<string, number>();
      let counter = 0;
      for (let round = 0; round < 3; round++) {
        const a = await spawnAgent(['--store', url, '--sync', sync]);
        await a.ok('state_get', { key: 'warm-up' }); // the load window starts once the server answers
        let stop = false;
        const writers = Array.from({ length: 4 }, async (_, w) => {
          while (!stop) {
            const key = `r${round}-w${w}-${counter++}`;
            try {
              const r = await a.raw('state_set', { key, value: counter });
              if (!r.isError) acknowledged.set(key, (r.structuredContent as { version: number }).version);
              const u = await a.raw('state_update', { key: 'total', op: 'increment', value: 1 });
              if (!u.isError)
                acknowledged.set('total', Math.max(acknowledged.get('total') ?? 0, (u.structuredContent as { value: number }).value));
            } catch {
              return; // the process is gone
            }
          }
        });
        await sleep(400 + round * 150);
        a.kill();
        stop = true;
        await Promise.all(writers);
        await a.close().catch(() => {});
      }
      expect(acknowledged.size).toBeGreaterThan(20);
      const check = await spawnAgent(['--store', url]);
      try {
        // read back 16 at a time (one by one, a loaded machine's round trips could take the test past its time)
        const entries = [...acknowledged];
        for (let i = 0; i < entries.length; i += 16) {
          const batch = entries.slice(i, i + 16);
          const got = await Promise.all(batch.map(([key]) => check.ok('state_get', { key })));
          batch.forEach(([key, version], j) => {
            expect(got[j].found, key).toBe(true);
            if (key === 'total') expect(got[j].value).toBeGreaterThanOrEqual(version);
            else expect(got[j].version).toBe(version);
          });
        }
      } finally {
        await check.close();
      }
    },
    // 8 s each on a quiet machine; one took over 60 s in a CI run whose every test ran about 1.7 times as long
    120_000,
  );
});
