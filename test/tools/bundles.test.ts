import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('namespace export while writers write', () => {
  it('says whether the bundle is the namespace at one moment: a consistent one never holds part of an atomic batch', async () => {
    const store = memoryStore();
    const writer = await agent({ store, config: { agent: 'w', thread: 'tw' } });
    const exporter = await agent({ store, config: { agent: 'e', thread: 'te' } });
    // filler between "a" and "z", so that a listing takes many pages
    for (let b = 0; b < 3000; b += 100) {
      await writer.ok('state_batch', {
        ops: Array.from({ length: 100 }, (_, i) => ({ op: 'set', key: `m${String(b + i).padStart(5, '0')}`, value: b + i })),
      });
    }
    expect((await exporter.bb.services.bundles.exportNamespace()).consistent).toBe(true);

    let writing = true;
    let n = 0;
    const load = (async () => {
      while (writing) {
        n++;
        await writer.ok('state_batch', {
          ops: [
            { op: 'set', key: 'a', value: n },
            { op: 'set', key: 'z', value: n },
          ],
        });
      }
    })();
    const seen = { consistent: 0, not: 0 };
    for (let i = 0; i < 8; i++) {
      const { doc, consistent } = await exporter.bb.services.bundles.exportNamespace();
      const a = doc.records['global\u001fa']?.v;
      const z = doc.records['global\u001fz']?.v;
      if (consistent) expect(a).toBe(z);
      seen[consistent ? 'consistent' : 'not']++;
    }
    writing = false;
    await load;
    expect(n).toBeGreaterThan(8); // the writer did write during the exports
    expect(seen.consistent + seen.not).toBe(8);
  });
});
