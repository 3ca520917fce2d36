// Backend initializers for the store contract suite, and the temp directories tests make.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MemoryBackend } from '../../src/store/memory/backend.js';
import { PostgresBackend } from '../../src/store/postgres/backend.js';
import { RedisBackend } from '../../src/store/redis/backend.js';
import { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { VersionedStore, type StoreOptions } from '../../src/store/versioned-store.js';

/**
 * A backend under test. `open()` gives a fresh, isolated, empty store; `openShared(first)` a second store on the
 * same data (another process or machine), for backends that can be shared — its absence skips the cross-process
 * cases, with that reason in their names.
 */
export interface BackendCase {
  name: string;
  open(options?: StoreOptions): Promise<VersionedStore>;
  openShared?: (first: VersionedStore, options?: StoreOptions) => Promise<VersionedStore>;
}

const dirs: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bb-test-'));
  dirs.push(dir);
  return dir;
}
process.on('exit', () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Builds a case for a backend opened from a URL-like location: `fresh()` makes a new one, `open(at)` opens it. */
export function sharedCase(
  name: string,
  fresh: () => string,
  open: (at: string) => Promise<ConstructorParameters<typeof VersionedStore>[0]>,
): BackendCase {
  const where = new WeakMap<VersionedStore, string>();
  const make = async (at: string, options?: StoreOptions): Promise<VersionedStore> => {
    const store = new VersionedStore(await open(at), { sweepIntervalMs: 0, ...options });
    where.set(store, at);
    return store;
  };
  return {
    name,
    open: (options) => make(fresh(), options),
    openShared: (first, options) => make(where.get(first)!, options),
  };
}

export const memoryCase: BackendCase = {
  name: 'memory',
  open: async (options) => new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, ...options }),
};

export const sqliteCase: BackendCase = sharedCase(
  'sqlite',
  () => join(tempDir(), 'store.db'),
  (path) => SqliteBackend.open(path, { pollMs: 10 }),
);

/** Postgres: a fresh `?schema=` per store on the server at `url`; a second backend on the same schema is another host. */
export const postgresCase = (url: string): BackendCase =>
  sharedCase(
    'postgres',
    () => `${url}${url.includes('?') ? '&' : '?'}schema=t_${randomUUID().replaceAll('-', '')}`,
    (at) => PostgresBackend.open(at, { safetyPollMs: 200 }),
  );

/** Redis: a fresh `?prefix=` per store on the server at `url`; a second backend on the same prefix is another host. */
export const redisCase = (url: string): BackendCase =>
  sharedCase(
    'redis',
    () => `${url}${url.includes('?') ? '&' : '?'}prefix=c${randomUUID().slice(0, 12)}`,
    (at) => RedisBackend.open(at),
  );
