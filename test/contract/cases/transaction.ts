import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

/** This file's cases, run for one backend. */
export function transactionCases(backend: BackendCase): void {
  describe(`store contract: transactions and idempotency (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('applies all writes or none', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('b', 'old', { by: 'a' }));
      await expect(
        store.transact(async (tx) => {
          await tx.set('a', 1, { by: 'a' });
          await tx.set('b', 'new', { by: 'a', ifVersion: 7 });
          return {};
        }),
      ).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
      expect(await store.get('a')).toBeUndefined();
      expect((await store.get('b'))!.value).toBe('old');
    });

    it('reads inside a transaction see its own earlier writes', async () => {
      store = await backend.open();
      const { result } = await store.transact(async (tx) => {
        await tx.set('a', 1, { by: 'x' });
        await tx.update('a', 'increment', 1, { by: 'x' });
        const a = await tx.get('a');
        await tx.delete('a');
        return { seen: a!.value, version: a!.version, after: (await tx.get('a')) === undefined };
      });
      expect(result).toEqual({ seen: 2, version: 2, after: true });
      expect(await store.get('a')).toBeUndefined();
    });

    it('a repeat with the same idempotency key returns the first result and applies nothing', async () => {
      store = await backend.open();
      const first = await store.transact((tx) => tx.update('n', 'increment', 1, { by: 'a' }).then((e) => ({ v: e.value })), {
        idempotencyKey: 'i1',
      });
      const again = await store.transact((tx) => tx.update('n', 'increment', 1, { by: 'a' }).then((e) => ({ v: e.value })), {
        idempotencyKey: 'i1',
      });
      expect(again).toEqual(first);
      expect((await store.get('n'))!.value).toBe(1);
      const other = await store.transact((tx) => tx.update('n', 'increment', 1, { by: 'a' }).then((e) => ({ v: e.value })), {
        idempotencyKey: 'i2',
      });
      expect(other.result).toEqual({ v: 2 });
    });

    it('a failed call does not consume its idempotency key', async () => {
      store = await backend.open();
      await expect(store.transact((tx) => tx.set('k', 1, { by: 'a', ifVersion: 9 }), { idempotencyKey: 'retry' })).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
      });
      const ok = await store.transact((tx) => tx.set('k', 1, { by: 'a' }), { idempotencyKey: 'retry' });
      expect(ok.result.version).toBe(1);
    });

    it('an error thrown by the caller rolls back and leaves the store usable', async () => {
      store = await backend.open();
      await expect(
        store.transact(async (tx) => {
          await tx.set('a', 1, { by: 'x' });
          throw new Error('boom');
        }),
      ).rejects.toThrow();
      expect(await store.get('a')).toBeUndefined();
      await store.transact((tx) => tx.set('a', 2, { by: 'x' }));
      expect((await store.get('a'))!.value).toBe(2);
    });

    it('deleteRange removes a whole range and nothing outside it', async () => {
      store = await backend.open();
      await store.transact(async (tx) => {
        for (let i = 0; i < 1200; i++) await tx.set(`r/${String(i).padStart(4, '0')}`, i, { by: 'a' });
        await tx.set('r0', 'outside', { by: 'a' });
        await tx.set('q', 'outside', { by: 'a' });
        return {};
      });
      const { result } = await store.transact((tx) => tx.deleteRange('r/', 'r0'));
      expect(result).toBe(1200);
      expect((await store.list({ lo: '', hi: '\u{10ffff}', limit: 10 })).entries.map(([k]) => k)).toEqual(['q', 'r0']);
    });
  });

  describe(`store contract: prefetched reads (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('a transaction that names its keys up front reads exactly what it would have read', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('a', 'A', { by: 'x' }));
      const { result } = await store.transact(
        async (tx) => {
          const a = await tx.get('a');
          const missing = await tx.get('missing');
          await tx.set('a', 'A2', { by: 'x', ifVersion: 1 });
          return { a: a?.value ?? null, missing: missing === undefined, after: (await tx.get('a'))!.value };
        },
        { prefetch: ['a', 'missing'] },
      );
      expect(result).toEqual({ a: 'A', missing: true, after: 'A2' });
      await expect(store.transact((tx) => tx.set('a', 'stale', { by: 'x', ifVersion: 1 }), { prefetch: ['a'] })).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
      });
    });
  });
}
