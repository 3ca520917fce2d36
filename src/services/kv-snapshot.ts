// One page of state_snapshot: many values of a scope in one consistent read, bounded in bytes, continued by cursor.
import { invalid } from '../errors.js';
import { checkPrefix, type ResolvedScope } from '../context.js';
import type { Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import { jsonBytes } from '../store/json-text.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { cursorEndingBytes, decodeKeyCursor, encodeCursor } from './cursor.js';
import { fitPage, mapLazily } from './page-fit.js';

export const SNAPSHOT_DEFAULT_BYTES = 16 * 1024;
export const SNAPSHOT_MAX_BYTES = 1024 * 1024;
export const SNAPSHOT_MAX_ROWS = 20_000;

/**
 * Values of a scope (or prefix) in key order, at most `maxBytes` of JSON per page; `nextCursor` continues after the
 * last key returned. A value that alone exceeds `maxBytes` is listed in `skipped` with its size instead of stopping
 * the listing.
 */
export async function snapshotPage(
  store: VersionedStore,
  keys: Keys,
  scope: ResolvedScope,
  args: { prefix?: string; maxBytes?: number; cursor?: string },
): Promise<{
  entries: Record<string, Json>;
  revision: number;
  truncated: boolean;
  nextCursor?: string;
  skipped?: Array<{ key: string; bytes: number }>;
}> {
  const prefix = checkPrefix(args.prefix);
  const maxBytes = args.maxBytes ?? SNAPSHOT_DEFAULT_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 2 || maxBytes > SNAPSHOT_MAX_BYTES) {
    throw invalid(`maxBytes must be a whole number from 2 to ${SNAPSHOT_MAX_BYTES}.`, { maxBytes, path: 'maxBytes' });
  }
  const after = args.cursor === undefined ? undefined : decodeKeyCursor(args.cursor, scope, prefix);
  // One read, so the entries are consistent. Every entry costs at least 6 bytes of JSON (`"k":0,`), which bounds
  // the rows maxBytes can use; SNAPSHOT_MAX_ROWS bounds the server's memory whatever maxBytes is.
  const rowLimit = Math.min(Math.floor(maxBytes / 6), SNAPSHOT_MAX_ROWS);
  const { entries: rows, revision } = await store.list({
    ...keys.dataRange(scope.id, prefix),
    after: after === undefined ? undefined : keys.data(scope.id, after),
    limit: rowLimit + 1,
  });
  // The whole reply fits maxBytes: its frame (with room for a `skipped` list), an entry `"key":value,` each, and the
  // cursor after the last, should the page end there. An entry too large for any page (the frame and it) is listed in
  // `skipped` instead, as `{"key","bytes"},`. So the first entry kept always fits (a page is only over maxBytes
  // when its first entry's cursor is what takes it over), and a page ends before the first entry that would.
  const frame = jsonBytes({ entries: {}, revision, truncated: false, skipped: [] });
  const measured = mapLazily(rows.slice(0, rowLimit), ([storage, entry]) => {
    const key = keys.userKey(scope.id, storage);
    const valueBytes = jsonBytes(entry.value);
    const size = jsonBytes(key) + valueBytes + 2;
    return { key, value: entry.value, valueBytes, size, tooLarge: frame + size > maxBytes };
  });
  const sizeOf = (row: { key: string; valueBytes: number; size: number; tooLarge: boolean }): number =>
    row.tooLarge ? jsonBytes({ key: row.key, bytes: row.valueBytes }) + 1 : row.size;
  const page = fitPage(measured, maxBytes, sizeOf, {
    used: frame,
    ending: (row) => cursorEndingBytes(scope, prefix, row.key),
  });
  const entries: Record<string, Json> = {};
  const skipped: Array<{ key: string; bytes: number }> = [];
  for (const row of page.kept) {
    if (row.tooLarge) skipped.push({ key: row.key, bytes: row.valueBytes });
    else Object.defineProperty(entries, row.key, { value: row.value, enumerable: true, writable: true, configurable: true });
  }
  const last = page.kept.at(-1)?.key;
  const truncated = page.stopped || rows.length > rowLimit;
  return {
    entries,
    revision,
    truncated,
    ...(truncated && last !== undefined ? { nextCursor: encodeCursor(scope, prefix, last) } : {}),
    ...(skipped.length > 0 ? { skipped } : {}),
  };
}
