import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import type { VersionedStore } from '../../../src/store/versioned-store.js';

/** This file's cases, run for one backend. */
export function recordsCases(backend: BackendCase): void {
  describe(`store contract: records and versions (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('reads nothing for a missing key', async () => {
      store = await backend.open();
      expect(await store.get('k')).toBeUndefined();
    });

    it('creates at version 1, bumps by one per write, and keeps who and when', async () => {
      store = await backend.open();
      const before = Date.now();
      const first = await store.transact((tx) => tx.set('k', { a: 1 }, { by: 'alice' }));
      expect(first.result.version).toBe(1);
      const second = await store.transact((tx) => tx.set('k', [1, 'two', null], { by: 'bob' }));
      expect(second.result.version).toBe(2);
      const entry = await store.get('k');
      expect(entry).toMatchObject({ value: [1, 'two', null], version: 2, updatedBy: 'bob' });
      expect(entry!.updatedAt).toBeGreaterThanOrEqual(before);
    });

    it('keeps every JSON value exactly, "__proto__" keys and unicode included', async () => {
      store = await backend.open();
      const value = JSON.parse('{"__proto__":{"x":1},"constructor":"c","emoji":"😀","nul":"a\\u0000b","n":-0.5,"deep":[[[{"t":true}]]]}');
      await store.transact((tx) => tx.set('__proto__', value, { by: 'a' }));
      const entry = await store.get('__proto__');
      expect(JSON.stringify(entry!.value)).toBe(JSON.stringify(value));
      expect(Object.getPrototypeOf(entry!.value)).toBe(Object.prototype);
      for (const v of [null, false, 0, '', 'x', []]) {
        await store.transact((tx) => tx.set('scalar', v, { by: 'a' }));
        expect((await store.get('scalar'))!.value).toEqual(v);
      }
    });

    it('bumps the store revision once per writing transaction, never for reads or no-ops', async () => {
      store = await backend.open();
      const r0 = await store.revision();
      const a = await store.transact(async (tx) => {
        await tx.set('a', 1, { by: 'x' });
        await tx.set('b', 2, { by: 'x' });
        return {};
      });
      expect(a.revision).toBe(r0 + 1);
      expect((await store.get('a'))!.revision).toBe(r0 + 1);
      const none = await store.transact(async (tx) => ({ found: (await tx.get('a')) !== undefined }));
      expect(none.revision).toBe(r0 + 1);
      await store.transact((tx) => tx.delete('a'));
      expect(await store.revision()).toBe(r0 + 2);
    });

    it('deletes, and reports whether there was something to delete; a re-create continues above the deleted version', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
      expect((await store.transact((tx) => tx.delete('k'))).result).toBe(true);
      expect((await store.transact((tx) => tx.delete('k'))).result).toBe(false);
      expect(await store.get('k')).toBeUndefined();
      await expect(store.transact((tx) => tx.set('k', 2, { by: 'a', ifVersion: 1 }))).rejects.toMatchObject({
        code: 'VERSION_CONFLICT',
        details: { currentVersion: 0 },
      });
      const again = await store.transact((tx) => tx.set('k', 2, { by: 'a', ifVersion: 0 }));
      expect(again.result.version).toBe(2);
    });

    it('refuses values over the size limit and too deep, and changes nothing', async () => {
      store = await backend.open({ maxValueBytes: 100 });
      await store.transact((tx) => tx.set('k', 'small', { by: 'a' }));
      await expect(store.transact((tx) => tx.set('k', 'x'.repeat(200), { by: 'a' }))).rejects.toMatchObject({
        code: 'VALUE_TOO_LARGE',
      });
      let deep: unknown = 1;
      for (let i = 0; i < 70; i++) deep = [deep];
      await expect(store.transact((tx) => tx.set('k', deep as never, { by: 'a' }))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      expect((await store.get('k'))!.value).toBe('small');
    });
  });
}
