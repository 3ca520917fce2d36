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

    it('keys prefetched mid-transaction read as single gets would: present, absent, deleted, its own writes first', async () => {
      store = await backend.open();
      await store.transact(async (tx) => {
        await tx.set('p1', 'one', { by: 'a' });
        await tx.set('p2', 'two', { by: 'a' });
        return {};
      });
      await store.transact(async (tx) => ({ gone: await tx.delete('p2') }));
      const { result } = await store.transact(async (tx) => {
        await tx.set('p3', 'mine', { by: 'a' });
        await tx.prefetch(['p1', 'p2', 'p3', 'p4']);
        const [p1, p2, p3, p4] = await Promise.all(['p1', 'p2', 'p3', 'p4'].map((k) => tx.get(k)));
        const recreated = await tx.set('p2', 'again', { by: 'a', ifVersion: 0 });
        const fresh = await tx.set('p4', 'new', { by: 'a', ifVersion: 0 });
        return {
          p1: p1?.value,
          p2: p2 === undefined,
          p3: p3?.value,
          p4: p4 === undefined,
          recreated: recreated.version,
          fresh: fresh.version,
        };
      });
      expect(result).toEqual({ p1: 'one', p2: true, p3: 'mine', p4: true, recreated: 2, fresh: 1 });
    });

    it('concurrent transactions that prefetch the key they change lose no update', async () => {
      store = await backend.open();
      const other = backend.openShared ? await backend.openShared(store) : store;
      try {
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 ? other : store).transact(async (tx) => {
              await tx.prefetch(['counted']);
              const n = (await tx.get('counted'))?.value;
              return tx.set('counted', (typeof n === 'number' ? n : 0) + 1, { by: 'a' });
            }),
          ),
        );
        expect((await store.get('counted'))!.value).toBe(12);
      } finally {
        if (other !== store) await other.close();
      }
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
