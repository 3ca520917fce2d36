import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

/** This file's cases, run for one backend. */
export function casCases(backend: BackendCase): void {
  describe(`store contract: compare-and-set (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('ifVersion 0 creates only when absent', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 'first', { by: 'a', ifVersion: 0 }));
      await expect(store.transact((tx) => tx.set('k', 'second', { by: 'b', ifVersion: 0 }))).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
        details: { currentVersion: 1 },
      });
      expect((await store.get('k'))!.value).toBe('first');
    });

    it('a stale ifVersion fails with the current version and changes nothing', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
      await store.transact((tx) => tx.set('k', 2, { by: 'a', ifVersion: 1 }));
      await expect(store.transact((tx) => tx.set('k', 3, { by: 'a', ifVersion: 1 }))).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
        details: { currentVersion: 2 },
      });
      await expect(store.transact((tx) => tx.delete('k', { ifVersion: 1 }))).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
      await expect(store.transact((tx) => tx.update('k', 'increment', 1, { by: 'a', ifVersion: 5 }))).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
      });
      expect(await store.get('k')).toMatchObject({ value: 2, version: 2 });
    });

    it('a positive ifVersion on a missing key conflicts with currentVersion 0', async () => {
      store = await backend.open();
      await expect(store.transact((tx) => tx.set('k', 1, { by: 'a', ifVersion: 3 }))).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
        details: { currentVersion: 0 },
      });
      expect(await store.get('k')).toBeUndefined();
    });

    it('of many concurrent ifVersion:0 creators exactly one wins', async () => {
      store = await backend.open();
      const attempts = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => store.transact((tx) => tx.set('lock', `owner-${i}`, { by: `a${i}`, ifVersion: 0 }))),
      );
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(1);
      expect(
        attempts.filter((a) => a.status === 'rejected').every((a) => (a as PromiseRejectedResult).reason.code === 'VERSION_CONFLICT'),
      ).toBe(true);
    });
  });

  // Backends that several processes can share: a second store on the same data stands for another process.
  describe.skipIf(!backend.openShared)(`store contract: compare-and-set across stores (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('two stores on the same data: concurrent creators still produce exactly one winner', async () => {
      store = await backend.open();
      const other = await backend.openShared!(store);
      try {
        const attempts = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? other : store).transact((tx) => tx.set('lock', i, { by: 'a', ifVersion: 0 }))),
        );
        expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(1);
      } finally {
        await other.close();
      }
    });
  });
}
