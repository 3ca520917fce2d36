import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digest, hashOf } from '../../src/services/checkpoint-digest.js';
import { canonicalJson } from '../../src/store/ops.js';
import type { Json } from '../../src/store/types.js';

/** What a digest must say of `value` grown from a list of `n` elements: the same as hashing it whole. */
function expectExact(value: Json, d: ReturnType<typeof digest>, n?: number): void {
  const text = canonicalJson(value);
  expect(d.h).toBe(hashOf(value));
  expect(d.b).toBe(Buffer.byteLength(text, 'utf8'));
  if (n !== undefined && (Array.isArray(value) || typeof value === 'string') && value.length > n)
    expect(d.prefix).toBe(hashOf(value.slice(0, n)));
  else expect(d.prefix).toBeUndefined();
}

/** A list large enough for its hash to be remembered, with keys out of order (canonical JSON differs from its text). */
const big = (tag: string): Json[] => [{ z: tag, a: 'é'.repeat(5000), m: [1, { y: 2, x: 1 }] }];

describe('checkpoint digests', () => {
  it('a list that grew, changed, or was rewritten with its keys in another order hashes as if hashed whole', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('append' as const), values: fc.array(fc.jsonValue(), { minLength: 1, maxLength: 3 }) }),
      fc.record({ op: fc.constant('change' as const), at: fc.nat(), value: fc.jsonValue() }),
      fc.record({ op: fc.constant('reorder' as const), at: fc.nat() }),
      fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.string(), fc.array(step, { maxLength: 12 }), (tag, steps) => {
        let value = big(tag);
        let d = digest(value);
        expectExact(value, d);
        for (const s of steps) {
          const n = value.length;
          // a fresh copy each time, as a store read gives, changed in the way the step says
          const next = JSON.parse(JSON.stringify(value)) as Json[];
          if (s.op === 'append') next.push(...(s.values as Json[]));
          else if (s.op === 'change') next.splice(s.at % n, 1, s.value as Json, 'after a change');
          else if (s.op === 'reorder') {
            const el = next[s.at % n];
            if (el !== null && typeof el === 'object' && !Array.isArray(el))
              next[s.at % n] = Object.fromEntries(Object.entries(el).reverse()) as Json;
            next.push('after a reorder');
          } else next.length = Math.max(1, s.at % n);
          const grown = digest(next, n, d.h);
          expectExact(next, grown, n);
          value = next;
          d = grown;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('an element changed in place after hashing, or a last number that grew, is noticed, not taken from memory', () => {
    const value = big('in place');
    value.push({ b: 1, a: 2 });
    const first = digest(value);
    (value[1] as Record<string, Json>).a = 3; // the same object, mutated
    value.push('more');
    expectExact(value, digest(value, 2, first.h), 2);
    // text that starts the same but ends the last element elsewhere: 1 became 12
    const one = [...big('a number'), 1];
    const before = digest(one);
    expectExact([...big('a number'), 12, 'x'], digest([...big('a number'), 12, 'x'], 2, before.h), 2);
  });

  it('a list grown from an empty one, and strings, hash exactly', () => {
    const empty: Json[] = [];
    const d = digest(empty);
    expectExact(empty, d);
    const grown = big('from empty');
    expectExact(grown, digest(grown, 0, d.h), 0);
    const text = 'ab\ud83d\ude00cd'.repeat(2000);
    expectExact(text, digest(text, 5), 5);
    expectExact(text, digest(text, 3), 3); // inside a surrogate pair
  });
});
