/**
 * Storage key layout and range helpers. Every storage key is `<kind>\x1f<namespace>\x1f<scope>\x1f<key>`; user keys
 * and names never contain control characters, so `\x1f` cannot be forged and one namespace or scope can never match
 * another's range, whatever `_`, `%` or case the names use.
 */
export const SEP = '\x1f';

/** The namespace token used when the server runs without `--namespace` (cannot collide: NS starts with a letter). */
export const DEFAULT_NAMESPACE_TOKEN = '-';

export const storageKey = (...parts: string[]): string => parts.join(SEP);

/** A storage key for people, in error details: its scope and key (kind and namespace left out), `/`-joined. */
export const showStorageKey = (key: string): string => key.split(SEP).slice(2).join('/');

/** Every write goes to the change log but idempotency records (kind `i`) and the store's bookkeeping (`m`). */
export const isLoggedKey = (key: string): boolean => !key.startsWith(`i${SEP}`) && !key.startsWith(`m${SEP}`);

/** The store's own bookkeeping lives under kind `m`, outside every namespace. */
export const VERSION_FLOOR_KEY = storageKey('m', 'version-floor');

/**
 * Where the SQLite layout before schema version 2 kept the store's revision and compaction mark: rows of the records
 * table under kind `m` (`legacyMetaKey('revision')`, `legacyMetaKey('compacted')`), which the migration moves out.
 */
export const legacyMetaKey = (name: 'revision' | 'compacted'): string => storageKey('m', name);

/** The smallest string greater than every string that starts with `prefix` (code point order = UTF-8 byte order). */
export function prefixEnd(prefix: string): string {
  const cps = Array.from(prefix);
  while (cps.length > 0) {
    const last = cps.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      let next = last + 1;
      if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
      return cps.join('') + String.fromCodePoint(next);
    }
  }
  return '\u{10ffff}\u{10ffff}';
}

/** Compares like SQLite's BINARY collation on UTF-8 text: by code point. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate starts an astral code point, which sorts above every BMP code point.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}
