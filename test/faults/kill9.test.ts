import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { sleep, spawnAgent } from '../helpers.js';

// Acknowledged means durable: every write that returned is there after kill -9 of the server.
describe('kill -9', () => {
  it.each(['full', 'normal'])('keeps every acknowledged write across repeated kill -9 during a write load (--sync %s)', async (sync) => {
    const db = join(tempDir(), 'durable.db');
    const acknowledged = new Map<string, number>();
    let counter = 0;
    for (let round = 0; round < 3; round++) {
      const a = await spawnAgent(['--store', `sqlite://${db}`, '--sync', sync]);
      let stop = false;
      const writers = Array.from({ length: 4 }, async (_, w) => {
        while (!stop) {
          const key = `r${round}-w${w}-${counter++}`;
          try {
            const r = await a.raw('state_set', { key, value: counter });
            if (!r.isError) acknowledged.set(key, (r.structuredContent as { version: number }).version);
            const u = await a.raw('state_update', { key: 'total', op: 'increment', value: 1 });
            if (!u.isError) acknowledged.set('total', Math.max(acknowledged.get('total') ?? 0, (u.structuredContent as { value: number }).value));
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
    const check = await spawnAgent(['--store', `sqlite://${db}`]);
    try {
      for (const [key, version] of acknowledged) {
        const got = await check.ok('state_get', { key });
        expect(got.found, key).toBe(true);
        if (key === 'total') expect(got.value).toBeGreaterThanOrEqual(version);
        else expect(got.version).toBe(version);
      }
    } finally {
      await check.close();
    }
  });
});
