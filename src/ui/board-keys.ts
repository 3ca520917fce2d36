// The board's keys, a page at a time: search and a scope filter across every scope, with counts of what is hidden,
// and the views of single keys that changed (the live stream sends only those).
import type { Entry } from '../store/versioned-store.js';
import type { BoardSource } from './board-reader.js';
import { byScopeThenKey, keyView } from './board-views.js';
import type { KeyView } from './board-views.js';
import { parseKey, userKeys } from './layout.js';

/** The most keys one namespace is searched through (the count says when there are more). */
export const MAX_SCANNED = 100_000;
export const PAGE_DEFAULT = 100;
export const PAGE_MAX = 500;
const READ = 1000;

export interface ScopedKey extends KeyView {
  scope: string;
}

export interface KeysPage {
  revision: number;
  /** every scope with its number of keys, `global` first */
  scopes: Array<{ scope: string; keys: number }>;
  /** keys in the namespace, and how many match the search and scope */
  total: number;
  matched: number;
  /** the page: matching keys in the store's order (by scope, then key), from `offset` */
  keys: ScopedKey[];
  offset: number;
  /** the store holds more keys than were searched */
  truncated: boolean;
}

export interface KeysQuery {
  /** words that must all appear in the scope, key or value (case-insensitive) */
  q?: string;
  scope?: string;
  offset?: number;
  limit?: number;
}

/** Whether a key matches the search words (each in its scope, key or value JSON). */
export function matches(key: Pick<ScopedKey, 'scope' | 'key' | 'value'>, words: string[]): boolean {
  if (words.length === 0) return true;
  const text = `${key.scope}\n${key.key}\n${key.value}`.toLowerCase();
  return words.every((w) => text.includes(w));
}

export const searchWords = (q: string | undefined): string[] => (q ?? '').toLowerCase().split(/\s+/).filter(Boolean);

/** One page of a namespace's keys. Reads the namespace's keys once, in key order. */
export async function keysPage(source: BoardSource, namespace: string, query: KeysQuery): Promise<KeysPage> {
  const revision = await source.revision();
  const words = searchWords(query.q);
  const offset = Math.max(0, query.offset ?? 0);
  const limit = Math.min(PAGE_MAX, Math.max(1, query.limit ?? PAGE_DEFAULT));
  const counts = new Map<string, number>();
  const keys: ScopedKey[] = [];
  let total = 0;
  let matched = 0;
  let truncated = false;
  const range = userKeys(namespace);
  let after: string | undefined;
  scan: for (;;) {
    const { entries } = await source.list({ ...range, ...(after !== undefined ? { after } : {}), limit: READ });
    for (const [storageKey, entry] of entries) {
      if (total >= MAX_SCANNED) {
        truncated = true;
        break scan;
      }
      const parsed = parseKey(namespace, storageKey);
      if (parsed?.kind !== 'data') continue;
      total++;
      counts.set(parsed.scope, (counts.get(parsed.scope) ?? 0) + 1);
      if (query.scope !== undefined && parsed.scope !== query.scope) continue;
      // values are matched only when the scope and key alone do not match
      const light = { scope: parsed.scope, key: parsed.key, value: '' };
      const hit = matches(light, words) || (words.length > 0 && matches({ ...light, value: JSON.stringify(entry.value) ?? '' }, words));
      if (!hit) continue;
      if (matched >= offset && keys.length < limit) keys.push({ scope: parsed.scope, ...keyView(parsed.key, entry) });
      matched++;
    }
    if (entries.length < READ) break;
    after = entries[entries.length - 1][0];
  }
  const scopes = [...counts].map(([scope, n]) => ({ scope, keys: n })).sort((a, b) => byScopeThenKey(a, b));
  return { revision, scopes, total, matched, keys, offset, truncated };
}

/** The view of one changed storage key of the namespace (a user key), or its deletion; undefined for other records. */
export function changedKey(
  namespace: string,
  storageKey: string,
  entry: Entry | undefined,
): (ScopedKey | { scope: string; key: string; deleted: true }) | undefined {
  const parsed = parseKey(namespace, storageKey);
  if (parsed?.kind !== 'data') return undefined;
  if (!entry) return { scope: parsed.scope, key: parsed.key, deleted: true };
  return { scope: parsed.scope, ...keyView(parsed.key, entry) };
}
