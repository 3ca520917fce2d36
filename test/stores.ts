// The stores the shared-store e2e and fault suites run against: every shareable backend this machine has.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tempDir } from './contract/backends.js';

/** A shareable backend under test: `fresh()` gives the URL of a new, empty, isolated store on it. */
export interface SharedStore {
  name: string;
  fresh(): string;
}

const id = (): string => `t${randomBytes(5).toString('hex')}`;

/** Adds a query option to a URL that may already have some. */
function withOption(url: string, name: string, value: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${name}=${value}`;
}

function storeFor(url: string): SharedStore {
  const scheme = url.split(':')[0];
  if (scheme === 'sqlite') return { name: 'sqlite', fresh: () => `sqlite://${join(tempDir(), 'shared.db')}` };
  if (scheme === 'postgres' || scheme === 'postgresql') return { name: 'postgres', fresh: () => withOption(url, 'schema', id()) };
  if (scheme === 'redis' || scheme === 'rediss') return { name: 'redis', fresh: () => withOption(url, 'prefix', id()) };
  throw new Error(`BLACKBOARD_TEST_STORE: no shareable backend for "${url}" (sqlite://, postgres://, redis://)`);
}

/**
 * `BLACKBOARD_TEST_STORE=URL` runs the suites against that store only; otherwise against SQLite and every server the
 * test run started (`BLACKBOARD_TEST_POSTGRES_URL`, `BLACKBOARD_TEST_REDIS_URL`, set by the global setup).
 */
export function sharedStores(env: NodeJS.ProcessEnv = process.env): SharedStore[] {
  if (env.BLACKBOARD_TEST_STORE) return [storeFor(env.BLACKBOARD_TEST_STORE)];
  const urls = ['sqlite://', env.BLACKBOARD_TEST_POSTGRES_URL, env.BLACKBOARD_TEST_REDIS_URL];
  return urls.filter((u): u is string => Boolean(u)).map(storeFor);
}
