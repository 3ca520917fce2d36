import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import { changedSince } from '../../../src/services/kv.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

const exists = (e: unknown) => e !== undefined;

/** This file's cases, run for one backend. */
export function watchCases(backend: BackendCase): void {
  describe(`store contract: change feed and waits (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('returns at once when the condition already holds', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
      const r = await store.waitUntil('k', exists, { timeoutMs: 5000 });
      expect(r.timedOut).toBe(false);
      expect(r.entry!.value).toBe(1);
    });

    it('wakes on a write in this process', async () => {
      store = await backend.open();
      const started = Date.now();
      const waiting = store.waitUntil('k', exists, { timeoutMs: 10_000 });
      setTimeout(() => void store.transact((tx) => tx.set('k', 'hello', { by: 'a' })), 50);
      const r = await waiting;
      expect(r).toMatchObject({ timedOut: false, entry: { value: 'hello' } });
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it('times out with the current state', async () => {
      store = await backend.open();
      const started = Date.now();
      const r = await store.waitUntil('k', exists, { timeoutMs: 100 });
      expect(r).toEqual({ entry: undefined, timedOut: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    });

    it('rejects when aborted', async () => {
      store = await backend.open();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await expect(store.waitUntil('k', exists, { timeoutMs: 10_000, signal: controller.signal })).rejects.toThrow(/cancel/);
    });

    it('wakes when the entry expires', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a', ttlMs: 80 }));
      const r = await store.waitUntil('k', changedSince(1), { timeoutMs: 5000 });
      expect(r).toEqual({ entry: undefined, timedOut: false });
    });

    it('never misses a delete-and-recreate that lands on the same version', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 'old', { by: 'a' }));
      const waiting = store.waitUntil('k', changedSince(1), { timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 30));
      await store.transact(async (tx) => {
        await tx.delete('k');
        return {};
      });
      await store.transact((tx) => tx.set('k', 'new', { by: 'a' }));
      const r = await waiting;
      expect(r.timedOut).toBe(false);
    });
  });

  // Backends that several processes can share: a second store on the same data stands for another process.
  describe.skipIf(!backend.openShared)(`store contract: waits across stores (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('wakes on a write made through another store on the same data (another process)', async () => {
      store = await backend.open();
      const other = await backend.openShared!(store);
      try {
        const started = Date.now();
        const waiting = store.waitUntil('k', exists, { timeoutMs: 10_000 });
        setTimeout(() => void other.transact((tx) => tx.set('k', 'from afar', { by: 'b' })), 100);
        expect(await waiting).toMatchObject({ timedOut: false, entry: { value: 'from afar' } });
        expect(Date.now() - started).toBeLessThan(5_000);
      } finally {
        await other.close();
      }
    });
  });
}
