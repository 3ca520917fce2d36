// The storage key layout: the one module that builds and parses the keys under which services keep their records.
import { DEFAULT_NAMESPACE_TOKEN, SEP, prefixEnd, storageKey } from './store/keys.js';

/**
 * Every storage key is `<kind>␟<namespace>␟<scope>␟<key>` (`␟` = U+001F, which no name or user key may contain, so no
 * namespace or scope can ever match another's range):
 * - kind `d`, data: a user key in a scope (`global`, `thread:ID`, `run:THREAD:RUN`, `group:NAME`, …), or a family's
 *   record in an internal scope `~family:owner` that no tool argument can name (plans, budgets, history, …);
 * - kind `i`, idempotency records: `i␟<namespace>␟<thread>␟<tool>␟<idempotencyKey>`;
 * - kind `m`, the store's own bookkeeping (owned by `store/keys.ts`).
 */
export interface KeyRange {
  lo: string;
  hi: string;
}

/** What a data-kind storage key holds: a user key in a scope, or a family's record. */
export type ParsedKey =
  | { kind: 'data'; scope: string; key: string }
  | { kind: 'family'; family: string; owner: string; key: string };

const token = (namespace: string | undefined): string => namespace ?? DEFAULT_NAMESPACE_TOKEN;
const rangeOf = (lo: string): KeyRange => ({ lo, hi: prefixEnd(lo) });
const familyScope = (family: string, owner: string): string => `~${family}:${owner}`;

/** The storage key of a user key in a scope (`scopeId` as resolved from the caller's identity). */
export const dataKey = (namespace: string | undefined, scopeId: string, key: string): string =>
  storageKey('d', token(namespace), scopeId, key);

/** The keys of a scope that start with `prefix`. */
export const dataRange = (namespace: string | undefined, scopeId: string, prefix = ''): KeyRange =>
  rangeOf(dataKey(namespace, scopeId, prefix));

/** A family's record: `family` names the service (`plan`, `budget`, …), `owner` whose it is (a thread, `id`, …). */
export const familyKey = (namespace: string | undefined, family: string, owner: string, key: string): string =>
  storageKey('d', token(namespace), familyScope(family, owner), key);

/** Every record of a family's owner. */
export const familyRange = (namespace: string | undefined, family: string, owner: string): KeyRange =>
  rangeOf(familyKey(namespace, family, owner, ''));

/** Every data-kind record of a namespace: its scopes and its families. */
export const namespaceRange = (namespace: string | undefined): KeyRange => rangeOf(storageKey('d', token(namespace), ''));

/** Where the first result of an idempotent call is kept: per namespace, thread and tool. */
export const idempotencyKey = (namespace: string | undefined, thread: string, tool: string, key: string): string =>
  storageKey('i', token(namespace), thread, tool, key);

/** The last part of a storage key: the user key, plan id, budget name, … */
export const lastPart = (storage: string): string => storage.slice(storage.lastIndexOf(SEP) + 1);

/**
 * A key relative to its namespace (`<scope>␟<key>`), as checkpoints and bundles keep them, so a document restores
 * into whichever namespace loads it; {@link absoluteKey} is the inverse.
 */
export const relativeKey = (namespace: string | undefined, storage: string): string =>
  storage.slice(namespaceRange(namespace).lo.length);
export const absoluteKey = (namespace: string | undefined, relative: string): string => namespaceRange(namespace).lo + relative;

/** Whether a relative key is well formed: a scope and a key, no control characters but the one separator. */
export const isRelativeKey = (relative: string): boolean =>
  relative.includes(SEP) && !/[\u0000-\u001e\u007f-\u009f]/.test(relative);

/** A relative key for people (`scope/key`), in messages. */
export const showRelative = (relative: string): string => relative.replace(SEP, '/');

/** Whether a relative key belongs to one of these families (checkpoints' own records, left out of exports). */
export const isFamilyRelative = (relative: string, families: readonly string[]): boolean =>
  families.some((family) => relative.startsWith(`~${family}:`));

/** Parses a data-kind key of `namespace`; `undefined` for anything else. */
export function parseKey(namespace: string | undefined, storage: string): ParsedKey | undefined {
  const { lo } = namespaceRange(namespace);
  if (!storage.startsWith(lo)) return undefined;
  const rest = storage.slice(lo.length);
  const sep = rest.indexOf(SEP);
  if (sep < 0) return undefined;
  const scope = rest.slice(0, sep);
  const key = rest.slice(sep + 1);
  if (!scope.startsWith('~')) return { kind: 'data', scope, key };
  const colon = scope.indexOf(':');
  if (colon < 0) return undefined;
  return { kind: 'family', family: scope.slice(1, colon), owner: scope.slice(colon + 1), key };
}
