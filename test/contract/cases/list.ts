import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import { compareKeys, prefixEnd } from '../../../src/store/keys.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

/** This file's cases, run for one backend. */
export function listCases(backend: BackendCase): void {
  describe(`store contract: listing (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    const keys = ['a', 'a%', 'a_b', 'aXb', 'ab', 'A', 'b', 'é', '😀', '\uffff', 'a/1', 'a/2', 'a/10'];

    async function fill(): Promise<void> {
      await store.transact(async (tx) => {
        for (const k of keys) await tx.set(k, k, { by: 'x' });
        return {};
      });
    }

    it('lists a range in code point order, with no wildcard or case folding in prefixes', async () => {
      store = await backend.open();
      await fill();
      const all = (await store.list({ lo: '', hi: prefixEnd(''), limit: 100 })).entries.map(([k]) => k);
      expect(all).toEqual([...keys].sort(compareKeys));
      expect(all.indexOf('😀')).toBeGreaterThan(all.indexOf('\uffff'));
      const under = (p: string) => store.list({ lo: p, hi: prefixEnd(p), limit: 100 }).then((r) => r.entries.map(([k]) => k));
      expect(await under('a_')).toEqual(['a_b']);
      expect(await under('a%')).toEqual(['a%']);
      expect(await under('A')).toEqual(['A']);
      expect(await under('a/')).toEqual(['a/1', 'a/10', 'a/2']);
    });

    it('pages with a key cursor, never repeating or skipping, even when keys are added between pages', async () => {
      store = await backend.open();
      await store.transact(async (tx) => {
        for (let i = 0; i < 250; i++) await tx.set(`k${String(i).padStart(3, '0')}`, i, { by: 'x' });
        return {};
      });
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.list({ lo: 'k', hi: prefixEnd('k'), after, limit: 100 });
        seen.push(...page.entries.map(([k]) => k));
        if (page.entries.length < 100) break;
        after = page.entries[page.entries.length - 1][0];
        await store.transact((tx) => tx.set('k000-early', 0, { by: 'x' })); // sorts before the cursor: not seen
      }
      expect(seen).toHaveLength(250);
      expect(new Set(seen).size).toBe(250);
    });

    it('returns the revision it read at', async () => {
      store = await backend.open();
      await fill();
      const rev = await store.revision();
      expect((await store.list({ lo: '', hi: prefixEnd(''), limit: 1 })).revision).toBe(rev);
      expect((await store.list({ lo: 'zzz', hi: prefixEnd('zzz'), limit: 1 })).revision).toBe(rev);
    });
  });
}
