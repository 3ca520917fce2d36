// Store URLs to backends: the default SQLite path, URL parsing and masking, opening a backend or a store.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { MemoryBackend } from './memory/backend.js';
import { PostgresBackend, type PostgresOptions } from './postgres/backend.js';
import { RedisBackend } from './redis/backend.js';
import { maskPassword } from './url.js';
import { SqliteBackend, type SqliteOptions } from './sqlite/backend.js';
import { VersionedStore, type StoreOptions } from './versioned-store.js';
import type { Backend } from './types.js';

/** Where the SQLite file lives when no `--store` is given: the user's data directory. */
export function defaultStorePath(): string {
  const env = process.env;
  const base =
    process.platform === 'win32'
      ? (env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'))
      : process.platform === 'darwin'
        ? join(homedir(), 'Library', 'Application Support')
        : env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME)
          ? env.XDG_DATA_HOME
          : join(homedir(), '.local', 'share');
  return join(base, 'mcp-blackboard', 'blackboard.db');
}

/**
 * The local file a store URL keeps its data in (the default and `sqlite://` stores), or undefined for a store that
 * is not a local file. Resolves a relative path against the working directory.
 */
export function storeFile(url: string | undefined): string | undefined {
  if (url === undefined || url === '') return defaultStorePath();
  const rest = url.startsWith('sqlite://') ? url.slice('sqlite://'.length) : '';
  return rest === '' ? undefined : isAbsolute(rest) ? rest : resolve(rest);
}

/** How a store URL is shown to people: with its password masked. */
export const maskStoreUrl = (url: string): string => maskPassword(url);

/**
 * Parses a store URL (`sqlite:///abs.db`, `sqlite://relative.db`, `memory://`,
 * `postgres://user:pass@host:port/db?schema=NAME`, `redis[s]://[:pass@]host:port[/db]?prefix=NAME`) into a backend.
 */
export async function openBackend(url: string | undefined, options: SqliteOptions & PostgresOptions = {}): Promise<Backend> {
  if (url === undefined || url === '') return SqliteBackend.open(defaultStorePath(), options);
  if (url === 'memory://' || url === 'memory:') return new MemoryBackend();
  if (url.startsWith('sqlite://')) {
    const rest = url.slice('sqlite://'.length);
    if (rest === '') throw new Error('sqlite:// needs a path: sqlite:///absolute/path.db or sqlite://relative.db');
    return SqliteBackend.open(storeFile(url)!, options);
  }
  const scheme = url.split(':')[0];
  if (scheme === 'postgres' || scheme === 'postgresql') return PostgresBackend.open(url, options);
  if (scheme === 'redis' || scheme === 'rediss') return RedisBackend.open(url);
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
