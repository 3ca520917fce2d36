import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

/** This file's cases, run for one backend. */
export function updateCases(backend: BackendCase): void {
  describe(`store contract: atomic updates (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());
    const update = (op: 'increment' | 'append' | 'merge' | 'add_to_set', value: unknown, key = 'k') =>
      store.transact((tx) => tx.update(key, op, value as never, { by: 'a' })).then((r) => r.result.value);

    it('increment starts from 0 and adds', async () => {
      store = await backend.open();
      expect(await update('increment', 5)).toBe(5);
      expect(await update('increment', -2.5)).toBe(2.5);
    });

    it('append adds one element to an array, text to a string', async () => {
      store = await backend.open();
      expect(await update('append', { step: 1 })).toEqual([{ step: 1 }]);
      expect(await update('append', [2])).toEqual([{ step: 1 }, [2]]);
      await store.transact((tx) => tx.set('s', 'ab', { by: 'a' }));
      expect(await update('append', 'cd', 's')).toBe('abcd');
    });

    it('merge is a JSON merge patch', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', { a: 1, b: { c: 2, d: 3 }, e: 4 }, { by: 'a' }));
      expect(await update('merge', { b: { c: 20, d: null }, e: null, f: [1] })).toEqual({ a: 1, b: { c: 20 }, f: [1] });
    });

    it('merge treats "__proto__" as an ordinary field', async () => {
      store = await backend.open();
      const patch = JSON.parse('{"__proto__":{"polluted":true}}');
      const merged = (await update('merge', patch)) as Record<string, unknown>;
      expect(Object.hasOwn(merged, '__proto__')).toBe(true);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(JSON.stringify((await store.get('k'))!.value)).toBe('{"__proto__":{"polluted":true}}');
    });

    it('add_to_set ignores an element already present (deep equality, any key order)', async () => {
      store = await backend.open();
      await update('add_to_set', { a: 1, b: 2 });
      expect(await update('add_to_set', { b: 2, a: 1 })).toEqual([{ a: 1, b: 2 }]);
      expect(await update('add_to_set', 'x')).toEqual([{ a: 1, b: 2 }, 'x']);
    });

    it('a type mismatch is INVALID_ARGUMENT and changes nothing', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 'text', { by: 'a' }));
      await expect(update('increment', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { currentType: 'string' } });
      await expect(update('merge', { a: 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(update('add_to_set', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(update('append', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(await store.get('k')).toMatchObject({ value: 'text', version: 1 });
    });

    it('keeps an existing expiry', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a', ttlMs: 60_000 }));
      await update('increment', 1);
      expect((await store.get('k'))!.expiresAt).toBeGreaterThan(Date.now());
    });

    it('concurrent increments all land', async () => {
      store = await backend.open();
      await Promise.all(Array.from({ length: 100 }, () => update('increment', 1)));
      expect(await store.get('k')).toMatchObject({ value: 100, version: 100 });
    });
  });

  // Backends that several processes can share: a second store on the same data stands for another process.
  describe.skipIf(!backend.openShared)(`store contract: atomic updates across stores (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('concurrent increments from two stores on the same data all land', async () => {
      store = await backend.open();
      const other = await backend.openShared!(store);
      try {
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => (i % 2 ? other : store).transact((tx) => tx.update('k', 'increment', 1, { by: 'a' }))),
        );
        expect((await other.get('k'))!.value).toBe(100);
      } finally {
        await other.close();
      }
    });
  });
}
