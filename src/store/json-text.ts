// What `JSON.stringify` would write for a value — its UTF-8 size, its text, its first characters, how deep it nests,
// whether two values write the same text — found without writing a large value's whole text where that can be
// helped. (On some machines every string over 128 KB costs a fresh mapping of memory to make; a value that grew large
// must not pay that to be measured, previewed or compared.) What is found of an object the store froze is remembered:
// it never changes, so a list that grew by one element from a frozen list is measured and written at the cost of
// that element.
import { isStoreFrozen } from './frozen.js';
import type { Json } from './types.js';

/** JSON sizes, texts and nesting of objects the store froze, found once. */
const sizes = new WeakMap<object, number>();
const texts = new WeakMap<object, string>();
const levels = new WeakMap<object, number>();

/** What `find` finds of a frozen `value`, found once. */
function remembered<T>(found: WeakMap<object, T>, value: object, find: (value: object) => T): T {
  const known = found.get(value);
  if (known !== undefined) return known;
  const fresh = find(value);
  found.set(value, fresh);
  return fresh;
}

/** Characters `JSON.stringify` escapes in a string: quote, backslash, controls, and surrogates (lone ones escaped). */
const NEEDS_CARE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** The size in UTF-8 bytes of `JSON.stringify(value)` for plain data; 0 for `undefined` (which has no JSON). */
export function jsonBytes(value: unknown): number {
  switch (typeof value) {
    case 'undefined':
      return 0;
    case 'string':
      // Plain text is written as it is, between quotes; anything else is measured as written.
      return NEEDS_CARE.test(value) ? Buffer.byteLength(JSON.stringify(value), 'utf8') : Buffer.byteLength(value, 'utf8') + 2;
    case 'object': {
      if (value === null) return 4;
      if (!isStoreFrozen(value)) return objectBytes(value);
      return remembered(sizes, value, objectBytes);
    }
    default:
      // numbers and booleans: short texts (anything else is not data)
      return JSON.stringify(value)?.length ?? 0;
  }
}

function objectBytes(value: object): number {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return jsonBytes(toJSON.call(value)); // a Date is written as its ISO text
  if (Array.isArray(value)) {
    let bytes = 1 + Math.max(1, value.length); // brackets, and the commas between elements
    for (const element of value) bytes += element === undefined ? 4 : jsonBytes(element); // undefined is written null
    return bytes;
  }
  let bytes = 2;
  let members = 0;
  for (const key of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined) continue; // left out, as JSON.stringify leaves it out
    bytes += jsonBytes(key) + 1 + jsonBytes(member);
    members++;
  }
  return bytes + Math.max(0, members - 1);
}

/**
 * `before + JSON.stringify(list) + after`, when `list` is a list holding objects the store froze (otherwise
 * `undefined`: then `JSON.stringify` of the whole is what to use). Each frozen element's text is written once, so an
 * append to a long list writes the new element's text; the whole is made in one piece (no second copy of a text
 * that may be over 128 KB, which on some machines costs a fresh mapping of memory each). Given `scratch`, a text of
 * {@link BYTES_FROM_CHARS} or more is written there as UTF-8 instead of made as a string at all (see {@link Scratch}).
 */
export function listText(list: Json | undefined, before: string, after: string): string | undefined;
export function listText(list: Json | undefined, before: string, after: string, scratch?: Scratch): string | Buffer | undefined;
export function listText(list: Json | undefined, before: string, after: string, scratch?: Scratch): string | Buffer | undefined {
  if (!Array.isArray(list) || !list.some(isStoreFrozen)) return undefined;
  const parts = new Array<string>(list.length);
  let chars = before.length + after.length + list.length + 1;
  for (let i = 0; i < list.length; i++) {
    const element = list[i];
    // as in a list, undefined is written null
    parts[i] = isStoreFrozen(element) ? remembered(texts, element, JSON.stringify) : (JSON.stringify(element) ?? 'null');
    chars += parts[i].length;
  }
  if (scratch !== undefined && chars >= BYTES_FROM_CHARS) {
    const bytes = listBytes(list, parts, before, after, scratch);
    if (bytes !== undefined) return bytes;
  }
  parts[0] = `${before}[${parts[0]}`;
  parts[parts.length - 1] = `${parts[parts.length - 1]}]${after}`;
  return parts.join(',');
}

/** Texts at least this long (UTF-16 code units) are written as bytes by a {@link listText} given a scratch. */
export const BYTES_FROM_CHARS = 32 * 1024;

/**
 * Memory reused for texts written as UTF-8 bytes, so that a large text costs neither a string (V8 makes each string of
 * 128 KB or more in a fresh mapping of memory) nor fresh memory of its own (on this kind of machine, memory mapped and
 * given back again costs about 18 µs a page: 0.6 ms for a 150 KB text, against 0.02 ms to write it here). What
 * {@link take} gives stays valid until {@link reset}: its owner resets once the bytes were used.
 */
export class Scratch {
  private memory = Buffer.allocUnsafeSlow(0);
  private used = 0;

  /** `bytes` of memory, after what was taken since the last reset. */
  take(bytes: number): Buffer {
    if (this.used + bytes > this.memory.length) {
      // earlier takes keep the memory they were given
      this.memory = Buffer.allocUnsafeSlow(Math.max(2 * this.memory.length, this.used + bytes, 64 * 1024));
      this.used = 0;
    }
    const taken = this.memory.subarray(this.used, this.used + bytes);
    this.used += bytes;
    return taken;
  }

  /** Everything taken may be given out again; memory grown past {@link SCRATCH_KEPT_BYTES} is let go. */
  reset(): void {
    this.used = 0;
    if (this.memory.length > SCRATCH_KEPT_BYTES) this.memory = Buffer.allocUnsafeSlow(0);
  }
}

/** The most memory a {@link Scratch} keeps between uses (a write of larger texts takes fresh memory each time). */
const SCRATCH_KEPT_BYTES = 4 * 1024 * 1024;

/** {@link listText}'s text of `list` (whose elements' texts are `parts`) as UTF-8 in `scratch`; undefined if it did not fit. */
function listBytes(list: Json[], parts: string[], before: string, after: string, scratch: Scratch): Buffer | undefined {
  // the size of each element's text, remembered for frozen ones
  let size = Buffer.byteLength(before, 'utf8') + Buffer.byteLength(after, 'utf8') + 2 + Math.max(0, parts.length - 1);
  for (let i = 0; i < parts.length; i++) {
    const element = list[i];
    size += isStoreFrozen(element) ? jsonBytes(element) : Buffer.byteLength(parts[i], 'utf8');
  }
  // four bytes more than counted: a text longer than counted would show as one
  const out = scratch.take(size + 4);
  let at = 0;
  try {
    at = out.write(before, 0, 'utf8');
    out[at++] = 0x5b; // [
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) out[at++] = 0x2c; // ,
      at += out.write(parts[i], at, 'utf8');
    }
    out[at++] = 0x5d; // ]
    at += out.write(after, at, 'utf8');
  } catch {
    return undefined; // longer than counted, past the spare bytes
  }
  // Every size above is exact (jsonBytes is the size of what JSON.stringify writes); a text of another size is made as
  // a string instead, never stored cut short.
  return at === size ? out.subarray(0, size) : undefined;
}

/** Objects the store froze that hold no number JSON cannot write, found once. */
const finite = new WeakSet<object>();

/**
 * Whether `value` holds a number JSON cannot write — NaN or ±Infinity, which is what a literal beyond the double range
 * (`1e400`) reads as — that `JSON.stringify` would silently write as `null`. (An object with its own `toJSON` is
 * written as that returns, so is not looked into.) Call it on a value whose nesting is bounded.
 */
export function holdsNonFinite(value: unknown): boolean {
  if (typeof value === 'number') return !Number.isFinite(value);
  if (typeof value !== 'object' || value === null || finite.has(value)) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (holdsNonFinite(child)) return true;
  if (isStoreFrozen(value)) finite.add(value);
  return false;
}

/**
 * How many levels of lists and objects `value` nests (0 for a scalar, 1 for a flat list), exactly when that is at most
 * `most`, and some number above `most` otherwise: counting stops there, so the recursion is at most `most` deep.
 */
export function nesting(value: unknown, most: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  const frozen = isStoreFrozen(value);
  const known = frozen ? levels.get(value) : undefined;
  if (known !== undefined) return known;
  if (most <= 0) return 1;
  let deepest = 0;
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    const n = nesting(child, most - 1);
    if (n > deepest) deepest = n;
    if (deepest >= most) break;
  }
  const found = deepest + 1;
  if (frozen && found <= most) levels.set(value, found);
  return found;
}

/**
 * The first `chars` characters of `JSON.stringify(value)` (all of it when shorter), written only as far as needed: a
 * long list's preview costs its first elements, not the list.
 */
export function jsonHead(value: Json, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  const push = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length >= chars;
  };
  const write = (v: Json | undefined): boolean => {
    if (typeof v === 'string') {
      // Each character writes at least one, so the first chars + 1 of the string decide the first chars written (a
      // surrogate pair cut at the end is escaped, but only beyond that point).
      return push(JSON.stringify(v.length > chars ? v.slice(0, chars + 1) : v));
    }
    if (typeof v !== 'object' || v === null) return push(v === undefined ? 'null' : JSON.stringify(v));
    if (Array.isArray(v)) {
      if (push('[')) return true;
      for (let i = 0; i < v.length; i++) if ((i > 0 && push(',')) || write(v[i])) return true;
      return push(']');
    }
    if (push('{')) return true;
    let first = true;
    for (const key of Object.keys(v)) {
      if (v[key] === undefined) continue;
      if ((!first && push(',')) || push(`${JSON.stringify(key)}:`) || write(v[key])) return true;
      first = false;
    }
    return push('}');
  };
  write(value);
  const text = parts.join('');
  return text.length > chars ? text.slice(0, chars) : text;
}

/**
 * Whether `JSON.stringify(a) === JSON.stringify(b)`, compared value by value (member order counts, as it does in the
 * text), without writing either.
 */
export function sameJson(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // 0 and -0, or a number and another that writes the same text, compare as their texts do
    return typeof a === 'number' && typeof b === 'number' ? JSON.stringify(a) === JSON.stringify(b) : false;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as Json[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) {
      const x = a[i] === undefined ? null : a[i];
      const y = other[i] === undefined ? null : other[i];
      if (!sameJson(x, y)) return false;
    }
    return true;
  }
  const objectB = b as Record<string, Json>;
  const keysA = Object.keys(a).filter((key) => (a as Record<string, Json>)[key] !== undefined);
  const keysB = Object.keys(objectB).filter((key) => objectB[key] !== undefined);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    if (keysA[i] !== keysB[i] || !sameJson((a as Record<string, Json>)[keysA[i]], objectB[keysB[i]])) return false;
  }
  return true;
}
