import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteBackend } from '../../src/store/sqlite.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { tempDir } from '../contract/backends.js';

// What only the SQLite backend has to get right.
describe('SQLite backend', () => {
  it('many connections opening a brand-new file at once all succeed (no "database is locked")', async () => {
    for (let round = 0; round < 5; round++) {
      const path = join(tempDir(), 'new.db');
      const backends = await Promise.all(Array.from({ length: 8 }, () => SqliteBackend.open(path)));
      const stores = backends.map((b) => new VersionedStore(b, { sweepIntervalMs: 0 }));
      await Promise.all(stores.map((s, i) => s.transact((tx) => tx.update('n', 'increment', i + 1, { by: 'x' }))));
      expect((await stores[0].get('n'))!.value).toBe(36);
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('uses WAL, so readers are never blocked by a writer', async () => {
    const path = join(tempDir(), 'wal.db');
    const backend = await SqliteBackend.open(path);
    const store = new VersionedStore(backend, { sweepIntervalMs: 0 });
    // hold the write lock inside a transaction while reading through the store
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const writing = store.transact(async (tx) => {
      await tx.set('k', 'uncommitted', { by: 'x' });
      await held;
      return {};
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.get('k')).toBeUndefined(); // not blocked, and never a dirty read
    release();
    await writing;
    expect((await store.get('k'))!.value).toBe('uncommitted');
    await store.close();
  });
});
