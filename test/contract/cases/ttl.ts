import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import { prefixEnd } from '../../../src/store/keys.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** This file's cases, run for one backend. */
export function ttlCases(backend: BackendCase): void {
  describe(`store contract: expiry (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('an expired record is invisible to reads, listings and CAS, and the sweep removes it', async () => {
      store = await backend.open();
      await store.transact(async (tx) => {
        await tx.set('short', 1, { by: 'a', ttlMs: 300 });
        await tx.set('long', 2, { by: 'a', ttlMs: 60_000 });
        await tx.set('forever', 3, { by: 'a' });
        return {};
      });
      expect(await store.get('short')).toBeDefined();
      await sleep(400);
      expect(await store.get('short')).toBeUndefined();
      expect((await store.list({ lo: '', hi: prefixEnd(''), limit: 10 })).entries.map(([k]) => k)).toEqual(['forever', 'long']);
      // absent for compare-and-set too: it can be created again, above the version it expired at
      const again = await store.transact((tx) => tx.set('short', 'new', { by: 'a', ifVersion: 0, ttlMs: 10 }));
      expect(again.result.version).toBe(2);
      await sleep(30);
      expect(await store.sweep()).toBe(1); // expired: now a tombstone, so followers see the key go
      expect(await store.sweep()).toBe(0);
      expect(await store.get('short')).toBeUndefined();
      expect((await store.get('long'))!.value).toBe(2);
    });

    it('a set without ttl clears an earlier expiry', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a', ttlMs: 300 }));
      await store.transact((tx) => tx.set('k', 2, { by: 'a' }));
      await sleep(400);
      expect((await store.get('k'))!.value).toBe(2);
    });
  });
}
