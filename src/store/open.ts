// Store URLs to backends: parsing a URL, opening a backend or a store.
import { MemoryBackend } from './memory/backend.js';
import type { PostgresOptions } from './postgres/backend.js';
import { defaultStorePath, isMemoryUrl, maskPassword, storeFile } from './url.js';
import { SqliteBackend, type SqliteOptions } from './sqlite/backend.js';
import { VersionedStore, type StoreOptions } from './versioned-store.js';
import type { Backend } from './types.js';

export { defaultStorePath, storeFile };
export { inspectFile as inspectStoreFile } from './sqlite/schema.js';

/**
 * Parses a store URL (`sqlite:///abs.db`, `sqlite://relative.db`, `memory://`,
 * `postgres://user:pass@host:port/db?schema=NAME`, `redis[s]://[:pass@]host:port[/db]?prefix=NAME`) into a backend.
 */
export async function openBackend(url: string | undefined, options: SqliteOptions & PostgresOptions = {}): Promise<Backend> {
  if (url === undefined || url === '') return SqliteBackend.open(defaultStorePath(), options);
  if (isMemoryUrl(url)) return new MemoryBackend();
  if (url.startsWith('sqlite://')) {
    const rest = url.slice('sqlite://'.length);
    if (rest === '') throw new Error('sqlite:// needs a path: sqlite:///absolute/path.db or sqlite://relative.db');
    return SqliteBackend.open(storeFile(url)!, options);
  }
  const scheme = url.split(':')[0];
  // the Postgres and Redis clients are loaded only for their stores (they are half of a SQLite server's start-up)
  if (scheme === 'postgres' || scheme === 'postgresql') return (await import('./postgres/backend.js')).PostgresBackend.open(url, options);
  if (scheme === 'redis' || scheme === 'rediss') return (await import('./redis/backend.js')).RedisBackend.open(url);
  throw new Error(
    `Unknown store URL "${maskPassword(url)}". Use sqlite:///absolute/path.db, sqlite://relative.db, postgres://user:password@host:port/database, redis://[:password@]host:port or memory://.`,
  );
}

export async function openStore(
  url: string | undefined,
  options: StoreOptions & SqliteOptions & PostgresOptions = {},
): Promise<VersionedStore> {
  return new VersionedStore(await openBackend(url, options), options);
}
