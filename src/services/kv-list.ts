// One page of state_list: keys of a scope in order with their versions and sizes, continued by cursor.
import { invalid } from '../errors.js';
import { checkPrefix, type ResolvedScope } from '../context.js';
import type { Keys } from '../keyspace.js';
import { jsonBytes } from '../store/json-text.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { cursorEndingBytes, decodeKeyCursor, encodeCursor } from './cursor.js';
import { fitPage, mapLazily } from './page-fit.js';

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;

export interface ListedKey {
  key: string;
  version: number;
  updatedAt: string;
  bytes: number;
}

/**
 * Keys of a scope (or prefix) in key order, `limit` a page; with `maxBytes`, a page also ends before a key that would
 * take its JSON (its `nextCursor` included) over that size — its first key always comes. `nextCursor` continues after
 * the last key returned.
 */
export async function listPage(
  store: VersionedStore,
  keys: Keys,
  scope: ResolvedScope,
  args: { prefix?: string; cursor?: string; limit?: number; maxBytes?: number },
): Promise<{ keys: ListedKey[]; nextCursor?: string }> {
  const prefix = checkPrefix(args.prefix);
  const limit = args.limit ?? LIST_DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT) {
    throw invalid(`limit must be a whole number from 1 to ${LIST_MAX_LIMIT}.`, { path: 'limit', limit });
  }
  const after = args.cursor === undefined ? undefined : decodeKeyCursor(args.cursor, scope, prefix);
  const { entries } = await store.list({
    ...keys.dataRange(scope.id, prefix),
    after: after === undefined ? undefined : keys.data(scope.id, after),
    limit: limit + 1,
  });
  const listed = mapLazily(entries.slice(0, limit), ([storage, entry]) => ({
    key: keys.userKey(scope.id, storage),
    version: entry.version,
    updatedAt: new Date(entry.updatedAt).toISOString(),
    bytes: jsonBytes(entry.value),
  }));
  // Each key costs its JSON and a comma; a page keeps room for the cursor after its last key, should it end there.
  const { kept: page } = fitPage(listed, args.maxBytes ?? Number.POSITIVE_INFINITY, (item) => jsonBytes(item) + 1, {
    used: jsonBytes({ keys: [] }),
    ending: (item) => cursorEndingBytes(scope, prefix, item.key),
  });
  const more = page.length < entries.length;
  return more ? { keys: page, nextCursor: encodeCursor(scope, prefix, page[page.length - 1].key) } : { keys: page };
}
