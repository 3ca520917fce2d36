import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { envelopeText, recordText } from '../../src/store/codec.js';
import { deepFreeze, frozenCopy } from '../../src/store/frozen.js';
import { BYTES_FROM_CHARS, jsonBytes, jsonHead, listText, nesting, Scratch, sameJson } from '../../src/store/json-text.js';
import type { Json } from '../../src/store/types.js';

/** JSON values whose strings hold any code unit: controls, quotes, backslashes, astral pairs and lone surrogates. */
const anyJson = fc.oneof(fc.jsonValue({ stringUnit: 'binary' }), fc.jsonValue({ stringUnit: 'grapheme' }), fc.jsonValue());
const written = (value: Json): string => JSON.stringify(value);

describe('jsonBytes', () => {
  it('is the UTF-8 size of what JSON.stringify writes, for any value', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        expect(jsonBytes(value as Json)).toBe(Buffer.byteLength(written(value as Json), 'utf8'));
      }),
      { numRuns: 2000 },
    );
  });

  it('counts members and elements JSON.stringify leaves out or writes as null', () => {
    const value = { a: undefined, b: [undefined, 1], c: 'x' } as unknown as Json;
    expect(jsonBytes(value)).toBe(Buffer.byteLength(written(value), 'utf8'));
    expect(jsonBytes({ a: undefined } as unknown as Json)).toBe(2);
    expect(jsonBytes(undefined)).toBe(0);
    expect(jsonBytes([])).toBe(2);
    expect(jsonBytes({})).toBe(2);
    const dated = { at: new Date(0), list: [new Date(1)] };
    expect(jsonBytes(dated)).toBe(Buffer.byteLength(JSON.stringify(dated), 'utf8'));
  });

  it('measures a large list as its text would be', () => {
    const list = Array.from({ length: 2000 }, (_, i) => ({ id: `m-${i}`, content: `${i}: "quoted" é 😀 \n`.repeat(5) }));
    expect(jsonBytes(list)).toBe(Buffer.byteLength(written(list), 'utf8'));
  });
});

describe('jsonHead', () => {
  it('is the first characters of what JSON.stringify writes, for any value and length', () => {
    fc.assert(
      fc.property(anyJson, fc.nat({ max: 400 }), (value, chars) => {
        expect(jsonHead(value as Json, chars)).toBe(written(value as Json).slice(0, chars));
      }),
      { numRuns: 2000 },
    );
  });

  it('cuts a string that ends a preview inside a surrogate pair exactly as the whole text would', () => {
    const value = ['ab', `x${'😀'.repeat(20)}`];
    for (let chars = 0; chars < 60; chars++) expect(jsonHead(value, chars)).toBe(written(value).slice(0, chars));
  });
});

describe('sameJson', () => {
  it('is true exactly when JSON.stringify writes the same text', () => {
    fc.assert(
      fc.property(anyJson, anyJson, (a, b) => {
        expect(sameJson(a as Json, b as Json)).toBe(written(a as Json) === written(b as Json));
        expect(sameJson(a as Json, structuredClone(a) as Json)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('tells apart values that differ only in member order, a nested element, or a type', () => {
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameJson([{ a: [1, 2] }], [{ a: [1, 3] }])).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson(0, -0)).toBe(true);
    expect(sameJson({ a: undefined, b: 1 } as unknown as Json, { b: 1 })).toBe(true);
  });
});

describe('what is found of values the store froze', () => {
  /** The nesting of a value counted the plain way: 0 for a scalar, one more than the deepest member for a list or object. */
  const levels = (value: unknown): number =>
    typeof value !== 'object' || value === null ? 0 : 1 + Math.max(0, ...Object.values(value).map(levels));

  it('a list holding frozen values writes, measures and nests as JSON.stringify would, and again after it grew', () => {
    expect(listText([1, 2], '', '')).toBeUndefined(); // nothing frozen in it: JSON.stringify of the whole
    expect(listText(frozenCopy({ a: 1 }), '', '')).toBeUndefined();
    fc.assert(
      fc.property(fc.array(anyJson, { maxLength: 8 }), fc.array(anyJson, { maxLength: 4 }), (held, added) => {
        const frozen = frozenCopy([...(held as Json[]), { held: true }]);
        for (const list of [frozen, [...frozen, ...(added as Json[])], [...frozen, undefined as unknown as Json]]) {
          for (let pass = 0; pass < 2; pass++) {
            // the second pass finds what the first remembered
            const record = { rev: 7, v: list, ver: 3, at: 5, by: 'agent' };
            expect(recordText(record)).toBe(written(record as unknown as Json));
            expect(envelopeText(record)).toBe(written({ value: record } as unknown as Json));
            expect(jsonBytes(list)).toBe(Buffer.byteLength(written(list), 'utf8'));
            expect(nesting(list, 64)).toBe(levels(list));
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a long list holding frozen values is written as the same text in UTF-8 bytes, given a scratch; a short one as a string', () => {
    const scratch = new Scratch();
    // one long element takes the list past the size from which it is written as bytes
    const long = 'é😀"\\\n—'.repeat(BYTES_FROM_CHARS / 4);
    fc.assert(
      fc.property(fc.array(anyJson, { maxLength: 8 }), fc.array(anyJson, { maxLength: 4 }), (held, added) => {
        const frozen = frozenCopy([...(held as Json[]), { long }]);
        scratch.reset();
        const texts: Array<[Buffer, string]> = [];
        for (const list of [frozen, [...frozen, ...(added as Json[])], [...frozen, undefined as unknown as Json]]) {
          const record = { rev: 7, v: list, ver: 3, at: 5, by: 'agent' };
          const text = envelopeText(record, scratch);
          expect(Buffer.isBuffer(text)).toBe(true);
          texts.push([text as Buffer, written({ value: record } as unknown as Json)]);
        }
        // each stays as written until the scratch is reset, however many were taken since
        for (const [bytes, expected] of texts) expect(bytes.toString('utf8')).toBe(expected);
      }),
      { numRuns: 200 },
    );
    const short = { rev: 1, v: frozenCopy([{ a: 'b' }]), ver: 1, at: 1, by: 'x' };
    expect(envelopeText(short, scratch)).toBe(written({ value: short } as unknown as Json));
  });

  it('a scratch gives its memory out again after a reset, but does not keep more than 4 MiB', () => {
    const scratch = new Scratch();
    const first = scratch.take(1000);
    const second = scratch.take(10);
    expect(second.buffer).toBe(first.buffer); // taken after it, from the same memory
    expect(second.byteOffset).toBe(first.byteOffset + 1000);
    scratch.reset();
    const again = scratch.take(1000);
    expect(again.buffer).toBe(first.buffer); // the same memory again
    expect(again.byteOffset).toBe(first.byteOffset);
    const large = scratch.take(5 * 1024 * 1024);
    scratch.reset();
    expect(scratch.take(10).buffer).not.toBe(large.buffer);
  });

  it('nesting is exact up to the limit and above it beyond, without counting further', () => {
    let deep: Json = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(nesting(deep, 64)).toBeGreaterThan(64); // counting stops: no stack overflow
    const five = deepFreeze([[[[[1]]]]]);
    expect(nesting(five, 4)).toBeGreaterThan(4);
    expect(nesting(five, 5)).toBe(5); // not the cut-off answer of the call before
    expect(nesting(five, 4)).toBeGreaterThan(4);
    expect(nesting({ a: { b: 1 }, c: [] }, 64)).toBe(2);
    expect(nesting('text', 0)).toBe(0);
  });

  it("a caller's own frozen objects are measured and written anew every time: their insides may change", () => {
    const inner = { text: 'before' };
    const list = [Object.freeze({ inner })] as unknown as Json[];
    const shared = [...frozenCopy([{ id: 1 }]), ...list];
    expect(listText(shared, '', '')).toBe(written(shared));
    const size = jsonBytes(shared);
    inner.text = 'after, and longer';
    expect(listText(shared, '', '')).toBe(written(shared));
    expect(jsonBytes(shared)).toBe(size + 'after, and longer'.length - 'before'.length);
  });
});
