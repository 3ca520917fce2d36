import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MemoryBackend } from '../../src/store/memory.js';
import { RedisBackend } from '../../src/store/redis.js';
import { SqliteBackend } from '../../src/store/sqlite.js';
import { VersionedStore, type StoreOptions } from '../../src/store/versioned-store.js';

/** A backend under test: each `open()` gives a fresh, isolated store. */
export interface BackendCase {
  name: string;
  open(options?: StoreOptions): Promise<VersionedStore>;
  /** a second store on the same data (another "process"), where the backend can be shared */
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

const sqlitePaths = new WeakMap<VersionedStore, string>();
const redisUrls = new WeakMap<VersionedStore, string>();
const redisUrl = process.env.BLACKBOARD_TEST_REDIS_URL;

/** Every backend the store contract is run against. */
export const backends: BackendCase[] = [
  {
    name: 'memory',
    open: async (options) => new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, ...options }),
  },
  {
    name: 'sqlite',
    open: async (options) => {
      const path = join(tempDir(), 'store.db');
      const store = new VersionedStore(await SqliteBackend.open(path, { pollMs: 10 }), { sweepIntervalMs: 0, ...options });
      sqlitePaths.set(store, path);
      return store;
    },
    openShared: async (first, options) => {
      const path = sqlitePaths.get(first)!;
      return new VersionedStore(await SqliteBackend.open(path, { pollMs: 10 }), { sweepIntervalMs: 0, ...options });
    },
  },
  // Redis, when a server is given: each store is a fresh key prefix on it.
  ...(redisUrl
    ? [
        {
          name: 'redis',
          open: async (options?: StoreOptions) => {
            const url = `${redisUrl}${redisUrl.includes('?') ? '&' : '?'}prefix=c${randomUUID().slice(0, 12)}`;
            const store = new VersionedStore(await RedisBackend.open(url), { sweepIntervalMs: 0, ...options });
            redisUrls.set(store, url);
            return store;
          },
          openShared: async (first: VersionedStore, options?: StoreOptions) =>
            new VersionedStore(await RedisBackend.open(redisUrls.get(first)!), { sweepIntervalMs: 0, ...options }),
        },
      ]
    : []),
];
