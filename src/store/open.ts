import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { MemoryBackend } from './memory.js';
import { RedisBackend } from './redis.js';
import { maskStoreUrl } from './url.js';
import { SqliteBackend, type SqliteOptions } from './sqlite.js';
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
 * Parses a store URL (`sqlite:///abs.db`, `sqlite://relative.db`, `memory://`, `redis[s]://[:pass@]host:port[/db]`
 * with `?prefix=NAME`) into a backend.
 */
export async function openBackend(url: string | undefined, options: SqliteOptions = {}): Promise<Backend> {
  if (url === undefined || url === '') return SqliteBackend.open(defaultStorePath(), options);
  if (url === 'memory://' || url === 'memory:') return new MemoryBackend();
  if (url.startsWith('sqlite://')) {
    const rest = url.slice('sqlite://'.length);
    if (rest === '') throw new Error('sqlite:// needs a path: sqlite:///absolute/path.db or sqlite://relative.db');
    return SqliteBackend.open(isAbsolute(rest) ? rest : resolve(rest), options);
  }
  const scheme = url.split(':')[0];
  if (scheme === 'redis' || scheme === 'rediss') return RedisBackend.open(url);
  if (scheme === 'postgres' || scheme === 'postgresql') {
    throw new Error(
      `The ${scheme} backend is not available in this version of mcp-blackboard. Use sqlite:// (the default, safe for many processes on one machine) or memory://.`,
    );
  }
  throw new Error(
    `Unknown store URL "${maskStoreUrl(url)}". Use sqlite:///absolute/path.db, sqlite://relative.db, memory:// or redis://host:port.`,
  );
}

export async function openStore(
  url: string | undefined,
  options: StoreOptions & SqliteOptions = {},
): Promise<VersionedStore> {
  return new VersionedStore(await openBackend(url, options), options);
}
