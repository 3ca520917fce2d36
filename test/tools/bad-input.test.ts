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

  const wrongTypes: Array<[string, string, Record<string, unknown>, string, RegExp]> = [
    ['key as number', 'state_set', { key: 123, value: 1 }, 'key', /key must be of type string, not a number/],
    ['missing value', 'state_set', { key: 'k' }, 'value', /value is required/],
    ['ifVersion as string', 'state_set', { key: 'k', value: 1, ifVersion: '1' }, 'ifVersion', /ifVersion must be of type number, not a string/],
    ['fractional ifVersion', 'state_set', { key: 'k', value: 1, ifVersion: 1.5 }, 'ifVersion', /whole number/],
    ['negative ifVersion', 'state_set', { key: 'k', value: 1, ifVersion: -1 }, 'ifVersion', /out of range/],
    ['unknown op', 'state_update', { key: 'k', op: 'multiply', value: 2 }, 'op', /one of: increment, append, merge, add_to_set/],
    ['ops not an array', 'state_batch', { ops: 'set a' }, 'ops', /must be of type array/],
    ['misspelled op field', 'state_batch', { ops: [{ op: 'set', key: 'a', value: 1, if_version: 0 }] }, 'ops[0].if_version', /did you mean ifVersion\?/],
    ['scope as object', 'state_get', { key: 'k', scope: { name: 'global' } }, 'scope', /not an object/],
    ['limit above its maximum', 'state_list', { limit: 5000 }, 'limit', /out of range/],
  ];
  it.each(wrongTypes)('%s is INVALID_ARGUMENT naming the argument in details.path, and changes nothing', async (_name, tool, args, path, message) => {
    const before = await revision();
    const error = await a.err(tool, args);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path } });
    expect(error.message).toMatch(message);
    expect(await revision()).toBe(before);
  });

  it('an unknown argument name gets the closest known one', async () => {
    const error = await a.err('state_set', { key: 'k', value: 1, if_version: 0 });
    expect(error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^Unknown argument "if_version": did you mean ifVersion\? Arguments here: key, value, scope, ifVersion, ttlSeconds, idempotencyKey\.$/),
      details: { path: 'if_version', suggestion: 'ifVersion' },
    });
    const far = await a.err('state_get', { key: 'k', colour: 'red' });
    expect(far).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'colour' } });
    expect(far.details).not.toHaveProperty('suggestion');
    expect((await a.err('state_get', { key: 'k', Scope: 'thread' })).details).toMatchObject({ suggestion: 'scope' });
  });

  it('a schema error under a namespace names the argument the same way', async () => {
    const ns = await connect({ config: { namespace: 'team' } });
    try {
      expect(await ns.err('state_set', { key: 'k', value: 1, ifversion: 1 })).toMatchObject({ code: 'INVALID_ARGUMENT', details: { suggestion: 'ifVersion' } });
    } finally {
      await ns.close();
    }
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
