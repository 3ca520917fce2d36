import { copyFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { tempDir } from '../contract/backends.js';
import { defaultConfig } from '../../src/config.js';
import { serveHttp } from '../../src/transports/http.js';
import { httpAgent } from '../e2e/http-helpers.js';
import { runCli, spawnAgent } from '../helpers.js';

const removeDb = (path: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
};

describe('a store that becomes unavailable', () => {
  it('store level: a removed or replaced database file fails every operation with STORE_UNAVAILABLE', async () => {
    const path = join(tempDir(), 'gone.db');
    const store = new VersionedStore(await SqliteBackend.open(path), { sweepIntervalMs: 0 });
    await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
    removeDb(path);
    await expect(store.transact((tx) => tx.set('k', 2, { by: 'a' }))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(store.get('k')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(store.list({ lo: '', hi: '\u{10ffff}', limit: 10 })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await store.close();
  });

  it('server level: writes after the file is removed or replaced are STORE_UNAVAILABLE, never a silent success, and the server stays up', async () => {
    const dir = tempDir();
    const db = join(dir, 'live.db');
    const a = await spawnAgent(['--store', `sqlite://${db}`]);
    try {
      await a.ok('state_set', { key: 'k', value: 'before' });
      copyFileSync(db, join(dir, 'copy.db'));
      removeDb(db);
      for (let i = 0; i < 3; i++) {
        const error = await a.err('state_set', { key: 'k', value: `after ${i}` });
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.message).toMatch(/removed or replaced/);
        expect((await a.err('state_update', { key: 'n', op: 'increment', value: 1 })).code).toBe('STORE_UNAVAILABLE');
        expect((await a.err('state_get', { key: 'k' })).code).toBe('STORE_UNAVAILABLE');
      }
      // a different file in its place is not the store we opened either
      renameSync(join(dir, 'copy.db'), db);
      expect((await a.err('state_set', { key: 'k', value: 'into the replacement' })).code).toBe('STORE_UNAVAILABLE');
      expect((await a.client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await a.close();
    }
  });

  it('stateless HTTP: a request the store cannot serve gets its tool error (STORE_UNAVAILABLE), not an HTTP 500; tools/list still answers', async () => {
    const db = join(tempDir(), 'http.db');
    const store = new VersionedStore(await SqliteBackend.open(db), { sweepIntervalMs: 0 });
    for (const [era, maxSessions] of [
      ['modern', 1000],
      ['legacy', 0], // a 2025 client of a server that keeps no sessions: every request is served alone
    ] as const) {
      const config = defaultConfig({
        tools: ['all'],
        http: { port: 0, host: '127.0.0.1', sessionIdleSeconds: 1800, allowedHosts: [], allowedOrigins: [], maxSessions },
      });
      const served = await serveHttp(config, store);
      try {
        if (era === 'modern') {
          const before = await httpAgent(served.url, {}, '', era);
          await before.ok('state_set', { key: 'k', value: 'before' });
          await before.close();
          removeDb(db);
        }
        const a = await httpAgent(served.url, {}, '', era);
        expect((await a.client.listTools()).tools.length).toBeGreaterThan(30);
        // the write first: it checks the file at once, where a read checks it at least once a second (a read of a
        // caller whose thread is recorded writes nothing); from then on every call fails
        for (const [tool, args] of [
          ['state_set', { key: 'k', value: 'after' }],
          ['state_get', { key: 'k' }],
        ] as const) {
          const error = await a.err(tool, args);
          expect(error.code, `${era} ${tool}`).toBe('STORE_UNAVAILABLE');
          expect(error.message).toMatch(/Nothing was changed/);
        }
        await a.close();
      } finally {
        await served.close();
      }
    }
    await store.close();
  });

  it('start-up on a path that cannot hold a database fails at once with a clear message', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a-file'), 'not a directory');
    const r = await runCli(['--store', `sqlite://${join(dir, 'a-file', 'x.db')}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open the store/);
    expect(r.stdout).toBe('');
    mkdirSync(join(dir, 'is-a-dir.db'));
    const r2 = await runCli(['--store', `sqlite://${join(dir, 'is-a-dir.db')}`]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/the store \S+is-a-dir\.db is not a file\. Check --store\./);
  });
});
