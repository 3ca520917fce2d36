import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Connected } from '../helpers.js';

// Every bad call gets a clear error and changes nothing: the revision is the proof.
let a: Connected;
beforeAll(async () => {
  a = await connect({ config: { maxValueBytes: 1000, agent: 'tester' } });
  await a.ok('state_set', { key: 'keep', value: 'me' });
});
afterAll(() => a.close());

async function revision(): Promise<number> {
  return a.store.revision();
}

describe('bad input', () => {
  const semantic: Array<[string, string, Record<string, unknown>, string]> = [
    ['empty key', 'state_set', { key: '', value: 1 }, 'INVALID_ARGUMENT'],
    ['513-character key', 'state_set', { key: 'k'.repeat(513), value: 1 }, 'INVALID_ARGUMENT'],
    ['control character in key', 'state_set', { key: 'a\nb', value: 1 }, 'INVALID_ARGUMENT'],
    ['NUL in key', 'state_set', { key: 'a\u0000b', value: 1 }, 'INVALID_ARGUMENT'],
    ['separator look-alike in key', 'state_set', { key: 'a\u001fb', value: 1 }, 'INVALID_ARGUMENT'],
    ['lone surrogate in key', 'state_set', { key: 'a\ud800', value: 1 }, 'INVALID_ARGUMENT'],
    ['oversized value', 'state_set', { key: 'big', value: 'x'.repeat(2000) }, 'VALUE_TOO_LARGE'],
    ['oversized update result', 'state_update', { key: 'keep', op: 'append', value: 'y'.repeat(1200) }, 'VALUE_TOO_LARGE'],
    ['unknown scope', 'state_set', { key: 'k', value: 1, scope: 'planet' }, 'INVALID_ARGUMENT'],
    ['unknown scope on read', 'state_get', { key: 'k', scope: 'thread:../../x' }, 'INVALID_ARGUMENT'],
    ['negative ifVersion', 'state_set', { key: 'k', value: 1, ifVersion: -1 }, 'INVALID_ARGUMENT'],
    ['empty idempotency key', 'state_set', { key: 'k', value: 1, idempotencyKey: '' }, 'INVALID_ARGUMENT'],
    ['huge ttl', 'state_set', { key: 'k', value: 1, ttlSeconds: 1e12 }, 'INVALID_ARGUMENT'],
    ['bad prefix', 'state_list', { prefix: 'a\tb' }, 'INVALID_ARGUMENT'],
    ['another agent\'s profile', 'state_delete', { key: 'k', scope: 'profile:mallory' }, 'FORBIDDEN'],
  ];
  it.each(semantic)('%s → %s', async (_name, tool, args, code) => {
    const before = await revision();
    const error = await a.err(tool, args);
    expect(error.code).toBe(code);
    expect(await revision()).toBe(before);
    expect((await a.ok('state_get', { key: 'keep' })).value).toBe('me');
  });

  it('deeply nested values are refused, not crashed on', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const before = await revision();
    expect((await a.err('state_set', { key: 'deep', value: deep })).code).toBe('INVALID_ARGUMENT');
    expect(await revision()).toBe(before);
  });

  const wrongTypes: Array<[string, string, Record<string, unknown>]> = [
    ['key as number', 'state_set', { key: 123, value: 1 }],
    ['missing value', 'state_set', { key: 'k' }],
    ['ifVersion as string', 'state_set', { key: 'k', value: 1, ifVersion: '1' }],
    ['fractional ifVersion', 'state_set', { key: 'k', value: 1, ifVersion: 1.5 }],
    ['unknown op', 'state_update', { key: 'k', op: 'multiply', value: 2 }],
    ['misspelled argument', 'state_set', { key: 'k', value: 1, if_version: 0 }],
    ['ops not an array', 'state_batch', { ops: 'set a' }],
    ['scope as object', 'state_get', { key: 'k', scope: { name: 'global' } }],
  ];
  it.each(wrongTypes)('%s is a schema violation reported by the SDK, and changes nothing', async (_name, tool, args) => {
    const before = await revision();
    const result = await a.raw(tool, args);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect((result.content[0] as { text: string }).text).toMatch(/validation/i);
    expect(await revision()).toBe(before);
  });

  it('"__proto__", "constructor" and friends are ordinary keys', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString']) {
      await a.ok('state_set', { key, value: { key } });
      expect(await a.ok('state_get', { key })).toMatchObject({ found: true, value: { key } });
    }
    const listed = (await a.ok('state_list', { prefix: '__' })).keys.map((k: { key: string }) => k.key);
    expect(listed).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).key).toBeUndefined();
  });

  it('unicode keys up to 512 characters (not UTF-16 units) are accepted', async () => {
    const key = '😀'.repeat(512);
    await a.ok('state_set', { key, value: 1 });
    expect((await a.ok('state_get', { key })).found).toBe(true);
  });
});
