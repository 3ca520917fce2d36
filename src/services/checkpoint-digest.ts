// Checkpoint value hashes: SHA-256 of JSON text; a list that grew since it was last hashed costs its new part.
import { createHash, type Hash } from 'node:crypto';
import { sameJson } from '../store/json-text.js';
import { canonicalJson } from '../store/ops.js';
import type { Json } from '../store/types.js';

/**
 * The address of a value: SHA-256 of its JSON text, so equal values share one blob. The text keeps each object's
 * members in their order: a restore must write back the very value (in canonical JSON, a value whose members are in
 * another order would share a blob with it and come back reordered).
 */
export const hashOf = (value: Json): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** The address checkpoints saved by earlier versions gave a value: SHA-256 of its canonical JSON (members sorted). */
export const canonicalHashOf = (value: Json): string => createHash('sha256').update(canonicalJson(value)).digest('hex');

/**
 * A value's hash `h`, its JSON's size `b`, and (when asked for with a prefix length shorter than
 * the value) the hash of its first elements or characters, `prefix`.
 */
export interface Digest {
  h: string;
  b: number;
  prefix?: string;
}

/**
 * A list hashed lately: its elements, its size in characters of JSON, and the SHA-256 state and byte count of its
 * JSON text less the closing bracket, ready to go on with appended elements.
 */
interface Hashed {
  elements: Json[];
  chars: number;
  state: Hash;
  bytes: number;
}

/** Lists hashed lately, by hash, oldest first; a hash names one content, so the cache is good for every store. */
const lately = new Map<string, Hashed>();
let latelyChars = 0;
/** Lists shorter than this (as JSON) are hashed whole every time: cheap enough, and not worth the memory. */
const REMEMBER_FROM = 4096;
/** How much JSON text the cache's lists make at most (UTF-16 code units): a few dozen growing lists of 100 KB. */
const REMEMBER_CHARS = 4 * 1024 * 1024;

/**
 * The value's digest. With `prefixLength` (an append's starting point) and `prefixHash` (the hash of the value it grew
 * from): when that value was hashed lately and this one's first elements have the same JSON text as its elements
 * (so they are the same values), only the rest is hashed.
 */
export function digest(value: Json, prefixLength?: number, prefixHash?: string): Digest {
  if (Array.isArray(value)) return digestList(value, prefixLength, prefixHash);
  const text = JSON.stringify(value);
  const h = createHash('sha256').update(text).digest('hex');
  const b = Buffer.byteLength(text, 'utf8');
  if (prefixLength !== undefined && typeof value === 'string' && value.length > prefixLength) {
    return { h, b, prefix: hashOf(value.slice(0, prefixLength)) };
  }
  return { h, b };
}

function digestList(value: Json[], prefixLength?: number, prefixHash?: string): Digest {
  const grows = prefixLength !== undefined && value.length > prefixLength;
  const known = grows && prefixHash !== undefined ? lately.get(prefixHash) : undefined;
  if (known !== undefined && known.elements.length === prefixLength) {
    // Compared value by value, without writing either list's text (a large text is costly to make).
    if (known.elements.every((element, i) => sameJson(element, value[i]))) {
      const tail = `${prefixLength > 0 ? ',' : ''}${value
        .slice(prefixLength)
        .map((e) => JSON.stringify(e))
        .join(',')}`;
      const state = known.state.copy().update(tail);
      const bytes = known.bytes + Buffer.byteLength(tail, 'utf8');
      const h = state.copy().update(']').digest('hex');
      forget(prefixHash as string);
      remember(h, { elements: value, chars: known.chars + tail.length, state, bytes });
      return { h, b: bytes + 1, prefix: prefixHash };
    }
  }
  const state = createHash('sha256').update('[');
  let text: string;
  let prefix: string | undefined;
  if (grows) {
    const head = JSON.stringify(value.slice(0, prefixLength));
    state.update(head.slice(1, -1));
    prefix = state.copy().update(']').digest('hex');
    const rest = JSON.stringify(value.slice(prefixLength));
    const tail = `${prefixLength > 0 ? ',' : ''}${rest.slice(1, -1)}`;
    state.update(tail);
    text = `${head.slice(0, -1)}${tail}]`;
  } else {
    text = JSON.stringify(value);
    state.update(text.slice(1, -1));
  }
  const b = Buffer.byteLength(text, 'utf8');
  const h = state.copy().update(']').digest('hex');
  if (text.length >= REMEMBER_FROM) remember(h, { elements: value, chars: text.length, state, bytes: b - 1 });
  return { h, b, ...(prefix !== undefined ? { prefix } : {}) };
}

function remember(h: string, hashed: Hashed): void {
  forget(h);
  if (hashed.chars > REMEMBER_CHARS / 4) return;
  lately.set(h, hashed);
  latelyChars += hashed.chars;
  for (const [old, { chars }] of lately) {
    if (latelyChars <= REMEMBER_CHARS) break;
    lately.delete(old);
    latelyChars -= chars;
  }
}

function forget(h: string): void {
  const hashed = lately.get(h);
  if (hashed === undefined) return;
  lately.delete(h);
  latelyChars -= hashed.chars;
}
