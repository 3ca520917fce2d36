import { afterEach, describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import { prefixEnd } from '../../../src/store/keys.js';
import type { Backend, BackendTx, TxContext, Writes } from '../../../src/store/types.js';
import { VersionedStore } from '../../../src/store/versioned-store.js';
import { sleep } from '../../helpers.js';

const ALL = { lo: '', hi: prefixEnd('') };

/**
 * A backend that runs every transaction function twice, throwing the first run's writes away, as an optimistic
 * backend does when something it read changed: whatever the store builds on a transaction must come out the same.
 */
function rerunning(inner: Backend): Backend {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'transaction') return Reflect.get(target, prop, receiver);
      return <T>(fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>, prefetch?: string[]) => {
        let runs = 0;
        return target.transaction(async (tx, context) => {
          runs++;
          const first = await fn(tx, context);
          if (runs > 1) return first;
          runs++;
          return fn(tx, context);
        }, prefetch);
      };
    },
  });
}

/** This file's cases, run for one backend. */
export function changesCases(backend: BackendCase): void {
  describe(`store contract: change log, tombstones and re-runs (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('logs every write in revision order with its version and whether it deleted; idempotency records are not logged', async () => {
      store = await backend.open();
      const r1 = await store.transact((tx) => tx.set('a', 1, { by: 'x' }));
      const r2 = await store.transact(async (tx) => {
        await tx.set('c', 1, { by: 'x' });
        await tx.set('b', 1, { by: 'x' });
        return {};
      });
      const r3 = await store.transact((tx) => tx.delete('a'));
      await store.transact((tx) => tx.set('d', 1, { by: 'x' }), { idempotencyKey: 'i\x1fns\x1ft\x1ftool\x1fonce' });
      const { changes, revision } = await store.changes({ after: 0, ...ALL, limit: 100 });
      expect(changes.slice(0, 4)).toEqual([
        { revision: r1.revision, key: 'a', version: 1, deleted: false },
        { revision: r2.revision, key: 'b', version: 1, deleted: false },
        { revision: r2.revision, key: 'c', version: 1, deleted: false },
        { revision: r3.revision, key: 'a', version: 1, deleted: true },
      ]);
      expect(changes.map((c) => c.key)).toEqual(['a', 'b', 'c', 'a', 'd']);
      expect(revision).toBe(await store.revision());
      expect(r1.revision).toBeLessThan(r2.revision);
      expect(r2.revision).toBeLessThan(r3.revision);
      // a range and an after
      expect((await store.changes({ after: r1.revision, lo: 'b', hi: 'c', limit: 100 })).changes.map((c) => c.key)).toEqual(['b']);
    });

    it('a deleted key is a tombstone: invisible, its version kept; re-created above it; swept after the retention', async () => {
      store = await backend.open({ changeRetentionMs: 300 });
      for (let i = 0; i < 3; i++) await store.transact((tx) => tx.set('k', i, { by: 'x' }));
      await store.transact((tx) => tx.delete('k'));
      expect(await store.get('k')).toBeUndefined();
      expect((await store.list({ ...ALL, limit: 10 })).entries).toEqual([]);
      expect(await store.backend.get('k')).toMatchObject({ ver: 3, del: 1 });
      expect((await store.transact((tx) => tx.set('k', 'again', { by: 'x' }))).result.version).toBe(4);
      await store.transact((tx) => tx.delete('k'));
      await sleep(400);
      expect(await store.sweep()).toBe(1);
      expect(await store.backend.get('k')).toBeUndefined();
      expect((await store.transact((tx) => tx.set('k', 'after sweep', { by: 'x' }))).result.version).toBe(5);
      // a brand-new key after the sweep: above the floor too, never a version some swept key had
      expect((await store.transact((tx) => tx.set('fresh', 1, { by: 'x' }))).result.version).toBe(5);
    });

    it('prunes the change log after the retention and reports the highest pruned revision', async () => {
      store = await backend.open({ changeRetentionMs: 200 });
      const old = await store.transact((tx) => tx.set('old', 1, { by: 'x' }));
      await sleep(300);
      const recent = await store.transact((tx) => tx.set('recent', 1, { by: 'x' }));
      await store.sweep();
      const page = await store.changes({ after: 0, ...ALL, limit: 100 });
      expect(page.compacted).toBe(old.revision);
      expect(page.changes.map((c) => c.key)).toEqual(['recent']);
      expect(page.changes[0].revision).toBe(recent.revision);
    });

    it('a sweep keeps up with more than one batch: every change past the retention is pruned, every expired key swept', async () => {
      store = await backend.open({ changeRetentionMs: 300 });
      let last = 0;
      for (let t = 0; t < 5; t++) {
        ({ revision: last } = await store.transact(async (tx) => {
          for (let i = 0; i < 100; i++) await tx.set(`k${t}-${i}`, i, { by: 'x', ...(t === 0 ? { ttlMs: 50 } : {}) });
        }));
      }
      await sleep(400);
      // batches of 40: the 500 changes and the 100 expired keys take several
      expect(await store.sweep(40)).toBe(100);
      const page = await store.changes({ after: 0, ...ALL, limit: 1000 });
      expect(page.compacted).toBe(last);
      // what is left is the sweep's own logged deletes of the expired keys
      expect(page.changes).toHaveLength(100);
      expect(page.changes.every((c) => c.deleted && c.key.startsWith('k0-'))).toBe(true);
      expect((await store.list({ ...ALL, limit: 1000 })).entries).toHaveLength(400);
    });

    it('an expired record becomes a logged delete when swept, so followers see it go', async () => {
      store = await backend.open();
      await store.transact((tx) => tx.set('t', 1, { by: 'x', ttlMs: 50 }));
      const { revision } = await store.changes({ after: 0, ...ALL, limit: 100 });
      await sleep(100);
      expect(await store.sweep()).toBe(1);
      expect((await store.changes({ after: revision, ...ALL, limit: 100 })).changes).toMatchObject([
        { key: 't', version: 1, deleted: true },
      ]);
    });

    it('transactions re-run by an optimistic backend apply once: versions, updates, batches, idempotency', async () => {
      const base = await backend.open();
      store = new VersionedStore(rerunning(base.backend), { sweepIntervalMs: 0 });
      expect((await store.transact((tx) => tx.set('k', 'v', { by: 'x' }))).result.version).toBe(1);
      for (let i = 0; i < 3; i++) await store.transact((tx) => tx.update('n', 'increment', 1, { by: 'x' }));
      expect(await store.get('n')).toMatchObject({ value: 3, version: 3 });
      const batch = await store.transact(async (tx) => {
        await tx.update('list', 'append', 'a', { by: 'x' });
        await tx.update('list', 'append', 'b', { by: 'x' });
        return (await tx.get('list'))!.value;
      });
      expect(batch.result).toEqual(['a', 'b']);
      const idem = { idempotencyKey: 'i\x1fns\x1ft\x1ftool\x1fk' };
      const first = await store.transact((tx) => tx.update('n', 'increment', 10, { by: 'x' }), idem);
      const again = await store.transact((tx) => tx.update('n', 'increment', 10, { by: 'x' }), idem);
      expect(again).toEqual({ result: { ...first.result }, revision: first.revision });
      expect((await store.get('n'))!.value).toBe(13);
      expect((await store.changes({ after: 0, ...ALL, limit: 100 })).changes.filter((c) => c.key === 'n')).toHaveLength(4);
    });
  });

  describe.skipIf(!backend.openShared)(`store contract: commits by another process (${backend.name})`, () => {
    let store: VersionedStore;
    afterEach(async () => store?.close());

    it('wake only the waiters of the keys that changed', async () => {
      store = await backend.open();
      const other = await backend.openShared!(store);
      try {
        let checksOfQuiet = 0;
        const quiet = store.waitUntil(
          'quiet',
          () => {
            checksOfQuiet++;
            return false;
          },
          { timeoutMs: 3_000 },
        );
        const busy = store.waitUntil('busy', (e) => e?.value === 5, { timeoutMs: 10_000 });
        await sleep(200);
        const before = checksOfQuiet;
        for (let i = 1; i <= 5; i++) {
          await other.transact((tx) => tx.set('busy', i, { by: 'b' }));
          await sleep(30);
        }
        expect(await busy).toMatchObject({ timedOut: false, entry: { value: 5 } });
        expect(checksOfQuiet - before).toBeLessThanOrEqual(1);
        expect((await quiet).timedOut).toBe(true);
      } finally {
        await other.close();
      }
    });
  });
}
