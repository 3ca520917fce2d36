import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBytes, jsonHead, sameJson } from '../../src/store/json-text.js';
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
