import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';
import type { ThreadDocument } from '../../src/services/checkpoint-document.js';

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

describe('import', () => {
  it('a thread bundle holds its thread only: a record elsewhere in the namespace is refused, nothing changed', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'alice-t' } });
    await alice.ok('state_set', { key: 'goal', value: 'ship' });
    await alice.ok('state_set', { key: 'notes', scope: 'thread', value: 'mine' });
    const mallory = await agent({ store, config: { agent: 'mallory', thread: 'mallory-t' } });
    const doc = (await mallory.bb.services.bundles.exportThread('alice-t')) as ThreadDocument;
    for (const [rel, v] of [
      ['global\u001fgoal', 'EVIL'],
      ['thread:bob-t\u001fnotes', 'wiped'],
      ['~budget:bob-t\u001ftokens', { current: 0, max: 1 }],
    ] as const) {
      const bad = { ...doc, thread: 'mallory-t', records: { ...doc.records, [rel]: { v, ver: 1, at: 1, by: 'alice' } } };
      await expect(mallory.bb.services.bundles.import(bad)).rejects.toMatchObject({ code: 'CHECKPOINT_CORRUPT' });
    }
    expect((await alice.ok('state_get', { key: 'goal' })).value).toBe('ship');
  });

  it('importing the same bundle again writes nothing: no new revision, nothing in the change log', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'a', thread: 't' } });
    for (const key of ['x', 'y']) await a.ok('state_set', { key, scope: 'thread', value: key });
    await a.ok('state_set', { key: 'g', value: 1 });
    const thread = await a.bb.services.bundles.exportThread('t');
    const { doc: namespace } = await a.bb.services.bundles.exportNamespace();
    const before = await store.revision();
    expect(await a.bb.services.bundles.import(namespace)).toMatchObject({ replaced: 0, removed: 0 });
    expect(await a.bb.services.bundles.import(thread)).toMatchObject({ replaced: 0, removed: 0 });
    const { changes } = await store.changes({ after: before, lo: '', hi: '\uffff', limit: 10 });
    expect(changes.map((c) => c.key)).toEqual([]);
    expect(await store.revision()).toBe(before);
  });

  it('an imported namespace lists its plans as the store it came from did, newest first (one transaction wrote them all)', async () => {
    const a = await agent({ store: memoryStore(), config: { agent: 'a', thread: 't' } });
    for (const title of ['p1', 'p2', 'p3', 'p4', 'p5', 'p6']) {
      await a.ok('plan_create', { title, steps: ['s'] });
      await new Promise((r) => setTimeout(r, 3)); // each written at its own millisecond
    }
    const titles = async (x: typeof a) => {
      const first = await x.ok('plan_list', { limit: 4 });
      const rest = await x.ok('plan_list', { limit: 4, cursor: first.nextCursor });
      return [...first.plans, ...rest.plans].map((p: { title: string }) => p.title);
    };
    expect(await titles(a)).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1']);
    const { doc } = await a.bb.services.bundles.exportNamespace();
    const b = await agent({ store: memoryStore(), config: { agent: 'b', thread: 'u' } });
    await b.bb.services.bundles.import(doc);
    expect(await titles(b)).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1']);
  });
});
