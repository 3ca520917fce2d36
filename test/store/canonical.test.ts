import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/store/ops.js';
import type { Json } from '../../src/store/types.js';

/** The definition: keys sorted at every level, by code unit, whatever order the object has them in. */
function reference(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${reference(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The same value with every object's keys inserted in another order. */
function reorder(value: Json, seed: number): Json {
  if (Array.isArray(value)) return value.map((v, i) => reorder(v, seed + i));
  if (typeof value !== 'object' || value === null) return value;
  const keys = Object.keys(value);
  const order = keys.map((k, i) => [k, (i * 7919 + seed) % (keys.length + 1)] as const).sort((a, b) => a[1] - b[1]);
  const out: Record<string, Json> = {};
  for (const [k] of order)
    Object.defineProperty(out, k, { value: reorder(value[k], seed + 1), enumerable: true, writable: true, configurable: true });
  return out;
}

describe('canonicalJson', () => {
  it('is the sorted-key JSON of any value, whatever order its keys were inserted in', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, seed) => {
        const v = value as Json;
        expect(canonicalJson(v)).toBe(reference(v));
        expect(canonicalJson(reorder(v, seed))).toBe(reference(v));
      }),
      { numRuns: 500 },
    );
  });

  it('handles integer-like keys, "__proto__" and unicode keys', () => {
    const tricky = JSON.parse('{"b":1,"10":2,"9":3,"__proto__":{"z":1,"a":2},"é":4,"a":[{"2":0,"10":1},{"y":1,"x":2}]}') as Json;
    expect(canonicalJson(tricky)).toBe(reference(tricky));
    expect(canonicalJson(tricky)).toBe('{"10":2,"9":3,"__proto__":{"a":2,"z":1},"a":[{"10":1,"2":0},{"x":2,"y":1}],"b":1,"é":4}');
  });
});
