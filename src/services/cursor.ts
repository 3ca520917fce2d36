// The opaque cursor of state_list (it names the scope, prefix and last key of the page it continues), and the
// refusals of every listing's cursor.
import { type BlackboardError, invalid } from '../errors.js';
import { checkKey, type ResolvedScope } from '../context.js';
import { jsonBytes } from '../store/json-text.js';

/** INVALID_ARGUMENT for a cursor this server did not issue. */
export const notOurCursor = (): BlackboardError =>
  invalid('cursor is not one this server issued. Pass back nextCursor exactly as returned, or omit it to start over.', { path: 'cursor' });
/** INVALID_ARGUMENT for a cursor of another listing: `changed` says what differs (e.g. "scope or prefix"). */
export const otherListing = (changed: string): BlackboardError =>
  invalid(`cursor belongs to a different listing (${changed} changed). Omit it to start over.`, { path: 'cursor' });

/** A cursor that continues a listing of `scope` and `prefix` after `lastKey`. */
export function encodeCursor(scope: ResolvedScope, prefix: string, lastKey: string): string {
  return Buffer.from(JSON.stringify({ s: scope.id, p: prefix, k: lastKey }), 'utf8').toString('base64url');
}

/**
 * The bytes `{"nextCursor":…}` takes in a reply for the cursor {@link encodeCursor} would make after `lastKey`, counted
 * without making it (a page asks this of every item it keeps).
 */
export function cursorEndingBytes(scope: ResolvedScope, prefix: string, lastKey: string): number {
  const text = jsonBytes(scope.id) + jsonBytes(prefix) + jsonBytes(lastKey) + '{"s":,"p":,"k":}'.length;
  const base64 = Math.floor(text / 3) * 4 + (text % 3 === 0 ? 0 : (text % 3) + 1); // base64url has no padding
  return '{"nextCursor":""}'.length + base64;
}

/**
 * The key a cursor continues after; INVALID_ARGUMENT for a cursor of another listing (`changed` says what tells the
 * listings apart) or none of ours.
 */
export function decodeCursor(cursor: string, scope: ResolvedScope, prefix: string, changed = 'scope or prefix'): string {
  let parsed: { s?: unknown; p?: unknown; k?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw notOurCursor();
  }
  if (parsed?.s !== scope.id || parsed.p !== prefix || typeof parsed.k !== 'string') {
    throw otherListing(changed);
  }
  return parsed.k;
}

/**
 * The key a `state_list` or `state_snapshot` cursor continues after: a key a page listed, so one that breaks the key
 * rules (a NUL, a lone surrogate, made up) is no cursor of ours — refused here rather than handed to the store, which
 * would list from a garbled key or fail as if it were down.
 */
export function decodeKeyCursor(cursor: string, scope: ResolvedScope, prefix: string): string {
  const key = decodeCursor(cursor, scope, prefix);
  try {
    return checkKey(key, 'cursor');
  } catch {
    throw notOurCursor();
  }
}
