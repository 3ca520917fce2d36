// The atomic read-modify-write operations of state_update: increment, append, merge, add_to_set.
import { type BlackboardError, invalid } from '../errors.js';
import type { Json } from './types.js';

/** The atomic read-modify-write operations of `state_update`. */
export const UPDATE_OPS = ['increment', 'append', 'merge', 'add_to_set'] as const;
export type UpdateOp = (typeof UPDATE_OPS)[number];

const typeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
const isObject = (v: unknown): v is { [key: string]: Json } => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Applies `op` to the current value (`undefined` when the key does not exist) and returns the new value.
 * - increment: number + number (absent counts as 0)
 * - append: array gets `operand` as one more element; a string gets a string operand concatenated; absent → `[operand]`
 * - merge: JSON Merge Patch (RFC 7396) of an object by an object: nested objects merge, `null` removes a field
 * - add_to_set: array gets `operand` unless an equal element is already there; absent → `[operand]`
 */
export function applyUpdate(op: UpdateOp, current: Json | undefined, operand: Json): Json {
  switch (op) {
    case 'increment': {
      if (typeof operand !== 'number' || !Number.isFinite(operand)) {
        throw invalid('increment needs a finite number as value.', { valueType: typeOf(operand) });
      }
      const base = current ?? 0;
      if (typeof base !== 'number') throw mismatch(op, base, 'a number');
      const next = base + operand;
      if (!Number.isFinite(next)) throw invalid('increment would overflow to a non-finite number.', { current: base });
      // a result a double cannot hold exactly would be a write that silently changes nothing, or the wrong thing
      if (Math.abs(next) > Number.MAX_SAFE_INTEGER) {
        throw invalid(`increment would pass ${Number.MAX_SAFE_INTEGER} in size, beyond which numbers are not exact. Nothing was changed.`, {
          current: base,
        });
      }
      if (operand !== 0 && next === base) {
        throw invalid(`increment by ${operand} is too small to change ${base}: the sum rounds back to it. Nothing was changed.`, {
          current: base,
        });
      }
      return next;
    }
    case 'append': {
      if (current === undefined) return [operand];
      if (Array.isArray(current)) return [...current, operand];
      if (typeof current === 'string') {
        if (typeof operand !== 'string') {
          throw invalid('append to a string needs a string value.', { valueType: typeOf(operand) });
        }
        return current + operand;
      }
      throw mismatch(op, current, 'an array or a string');
    }
    case 'merge': {
      if (!isObject(operand)) throw invalid('merge needs an object as value.', { valueType: typeOf(operand) });
      const base = current ?? {};
      if (!isObject(base)) throw mismatch(op, base, 'an object');
      return mergePatch(base, operand);
    }
    case 'add_to_set': {
      if (current === undefined) return [operand];
      if (!Array.isArray(current)) throw mismatch(op, current, 'an array');
      const wanted = canonicalJson(operand);
      return current.some((element) => canonicalJson(element) === wanted) ? current : [...current, operand];
    }
  }
}

function mismatch(op: UpdateOp, current: Json, wanted: string): BlackboardError {
  return invalid(
    `${op} needs the stored value to be ${wanted}, but it is ${typeOf(current)}. Read it with {tool:state_get} and write it with {tool:state_set} instead.`,
    { currentType: typeOf(current), path: 'op' },
  );
}

function mergePatch(target: { [key: string]: Json }, patch: { [key: string]: Json }): { [key: string]: Json } {
  const out: { [key: string]: Json } = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    // Own properties only, and defined rather than assigned: "__proto__" is an ordinary key here.
    const existing = Object.hasOwn(out, key) ? out[key] : undefined;
    if (value === null) delete out[key];
    else
      Object.defineProperty(out, key, {
        value: isObject(value) && isObject(existing) ? mergePatch(existing, value) : value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

/** JSON with object keys sorted, so equal values give equal text. */
export function canonicalJson(value: Json): string {
  // JSON.stringify does the walking (several times faster than doing it here); an object whose keys are not in
  // order is handed back as a sorted copy. Objects with integer-like keys, which JavaScript always enumerates
  // first and in numeric order, cannot be reordered that way: those values take the slower walk below.
  try {
    return JSON.stringify(value, sortedObject);
  } catch (error) {
    if (error !== UNORDERABLE) throw error;
    return walk(value);
  }
}

const UNORDERABLE = new Error('keys that cannot be put in order');
const INTEGER_LIKE = /^(0|[1-9][0-9]*)$/;

function sortedObject(_key: string, v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const keys = Object.keys(v);
  let ordered = true;
  for (let i = 1; i < keys.length && ordered; i++) ordered = keys[i - 1] < keys[i];
  if (ordered) return v;
  const out: Record<string, unknown> = Object.create(null);
  for (const key of keys.sort()) {
    if (INTEGER_LIKE.test(key)) throw UNORDERABLE;
    out[key] = (v as Record<string, unknown>)[key];
  }
  return out;
}

function walk(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(walk).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${walk(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
