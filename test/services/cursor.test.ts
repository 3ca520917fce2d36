import { describe, expect, it } from 'vitest';
import { cursorEndingBytes, decodeCursor, encodeCursor } from '../../src/services/cursor.js';
import { jsonBytes } from '../../src/store/json-text.js';

const keys = ['', 'a', 'ab', 'abc', 'abcd', 'é', '日本語', '😀', 'say "hi"\n\t\\', '\u0001\u001f', '\ud800', 'x'.repeat(1000)];
const scopes = [
  { label: 'global', id: 'global' },
  { label: 'thread', id: 'thread:t-ü' },
];

describe('cursorEndingBytes', () => {
  it('counts exactly the bytes {"nextCursor":…} of the cursor encodeCursor makes', () => {
    for (const scope of scopes)
      for (const prefix of ['', 'p/', '"ö"'])
        for (const key of keys) {
          const made = jsonBytes({ nextCursor: encodeCursor(scope, prefix, key) });
          expect(cursorEndingBytes(scope, prefix, key), JSON.stringify([scope.id, prefix, key])).toBe(made);
        }
  });

  it('is the cursor that decodes back to its key', () => {
    for (const key of keys) expect(decodeCursor(encodeCursor(scopes[1], 'p/', key), scopes[1], 'p/')).toBe(key);
  });
});
