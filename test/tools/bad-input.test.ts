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
    ["another agent's profile", 'state_delete', { key: 'k', scope: 'profile:mallory' }, 'FORBIDDEN'],
  ];
  it.each(semantic)('%s → %s', async (_name, tool, args, code) => {
    const before = await revision();
    const error = await a.err(tool, args);
    expect(error.code).toBe(code);
    expect(await revision()).toBe(before);
    expect((await a.ok('state_get', { key: 'keep' })).value).toBe('me');
  });

  const paths: Array<[string, string, Record<string, unknown>, Record<string, unknown>]> = [
    ['empty key', 'state_get', { key: '' }, { path: 'key', length: 0 }],
    ['513-character key', 'state_get', { key: 'k'.repeat(513) }, { path: 'key', length: 513 }],
    ['control character in key', 'state_set', { key: 'a\nb', value: 1 }, { path: 'key' }],
    ['lone surrogate in key', 'state_delete', { key: 'a\ud800' }, { path: 'key' }],
    ['empty group name', 'state_get', { key: 'k', scope: 'group:' }, { path: 'scope', 'group name': '' }],
    ['unknown scope', 'state_list', { scope: 'planet' }, { path: 'scope', scope: 'planet' }],
    ['bad prefix', 'state_changes', { afterRevision: 0, prefix: 'a\tb' }, { path: 'prefix' }],
    [
      'bad key in a batch',
      'state_batch',
      {
        ops: [
          { op: 'set', key: 'a', value: 1 },
          { op: 'set', key: '', value: 1 },
        ],
      },
      { path: 'ops[1].key', index: 1, length: 0 },
    ],
    [
      'bad scope in a batch',
      'state_batch',
      { ops: [{ op: 'set', key: 'a', value: 1, scope: 'group:' }] },
      { path: 'ops[0].scope', index: 0 },
    ],
    ['no value in a batch', 'state_batch', { ops: [{ op: 'increment', key: 'a' }] }, { path: 'ops[0].value', index: 0 }],
    ['bad scope of watch', 'watch', { key: 'k', scope: 'nope', waitMs: 0 }, { path: 'scope' }],
  ];
  it.each(paths)('%s (past the schema) names its argument in details.path, keeping its details', async (_name, tool, args, details) => {
    const before = await revision();
    const error = await a.err(tool, args);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details });
    expect(await revision()).toBe(before);
  });

  it('a bad key in a non-atomic batch names it in its slot', async () => {
    const { results } = await a.ok('state_batch', {
      atomic: false,
      ops: [
        { op: 'set', key: 'nb', value: 1 },
        { op: 'set', key: '', value: 1 },
      ],
    });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENT', details: { path: 'ops[1].key', length: 0 } } });
  });

  it('deeply nested values are refused, not crashed on', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const before = await revision();
    expect((await a.err('state_set', { key: 'deep', value: deep })).code).toBe('INVALID_ARGUMENT');
    expect(await revision()).toBe(before);
  });

  const wrongTypes: Array<[string, string, Record<string, unknown>, string, RegExp]> = [
    ['key as number', 'state_set', { key: 123, value: 1 }, 'key', /key must be a string, not a number \(123\)/],
    ['missing value', 'state_set', { key: 'k' }, 'value', /value is required/],
    [
      'ifVersion as a word',
      'state_set',
      { key: 'k', value: 1, ifVersion: 'one' },
      'ifVersion',
      /ifVersion must be a number, not the string "one"/,
    ],
    [
      'fractional ifVersion',
      'state_set',
      { key: 'k', value: 1, ifVersion: 1.5 },
      'ifVersion',
      /ifVersion must be a whole number, not 1\.5\./,
    ],
    ['negative ifVersion', 'state_set', { key: 'k', value: 1, ifVersion: -1 }, 'ifVersion', /out of range/],
    ['unknown op', 'state_update', { key: 'k', op: 'multiply', value: 2 }, 'op', /one of: increment, append, merge, add_to_set/],
    ['ops not an array', 'state_batch', { ops: 'set a' }, 'ops', /ops must be an array, not the string "set a"/],
    [
      'misspelled op field',
      'state_batch',
      { ops: [{ op: 'set', key: 'a', value: 1, if_version: 0 }] },
      'ops[0].if_version',
      /did you mean ifVersion\?/,
    ],
    ['scope as object', 'state_get', { key: 'k', scope: { name: 'global' } }, 'scope', /not an object/],
    ['limit above its maximum', 'state_list', { limit: 5000 }, 'limit', /out of range/],
  ];
  it.each(wrongTypes)(
    '%s is INVALID_ARGUMENT naming the argument in details.path, and changes nothing',
    async (_name, tool, args, path, message) => {
      const before = await revision();
      const error = await a.err(tool, args);
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path } });
      expect(error.message).toMatch(message);
      expect(await revision()).toBe(before);
    },
  );

  it('every problem of a call is reported at once (up to 5), each with its path', async () => {
    const before = await revision();
    const error = await a.err('state_set', { key: 7, ifVersion: -2, ttlSecond: 5 });
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/^4 problems: /);
    expect((error.details!.issues as Array<{ path: string }>).map((i) => i.path).sort()).toEqual([
      'ifVersion',
      'key',
      'ttlSecond',
      'value',
    ]);
    expect(error.message).toMatch(/key must be a string/);
    expect(error.message).toMatch(/value is required/);
    expect(error.message).toMatch(/did you mean ttlSeconds\?/);
    const many = await a.err('state_batch', { ops: Array.from({ length: 8 }, () => ({ op: 'set', key: 1 })) });
    expect(many.details!.issues).toHaveLength(5);
    expect(many.message).toMatch(/^8 problems \(first 5\): /);
    const six = await a.err('state_set', { key: 7, value: 1, scope: 2, ifVersion: 'x', ttlSeconds: 'y', idempotencyKey: 3, colour: 'red' });
    expect(six.message).toMatch(/^6 problems \(first 5\): /);
    expect(six.details!.issues).toHaveLength(5);
    const five = await a.err('state_set', { key: 7, value: 1, scope: 2, ifVersion: 'x', ttlSeconds: 'y', idempotencyKey: 3 });
    expect(five.message).toMatch(/^5 problems: /);
    expect(await revision()).toBe(before);
  });

  it('a numeric string is taken as the number, and null for an optional argument as not given', async () => {
    await a.ok('state_set', { key: 'n1', value: 1 });
    await a.ok('state_set', { key: 'n2', value: 2 });
    expect((await a.ok('state_list', { limit: '1', prefix: 'n' })).keys).toHaveLength(1);
    expect(
      await a.ok('state_set', { key: 'n1', value: 3, ifVersion: '1', scope: null, ttlSeconds: null, idempotencyKey: null }),
    ).toMatchObject({ version: 2 });
    expect(await a.ok('state_get', { key: 'n1', scope: null, maxBytes: null })).toMatchObject({ value: 3 });
    // a value that is any JSON keeps its null
    await a.ok('state_set', { key: 'nul', value: null });
    expect(await a.ok('state_get', { key: 'nul' })).toMatchObject({ found: true, value: null });
    expect((await a.err('state_list', { limit: '1x' })).message).toMatch(/limit must be a number, not the string "1x"/);
  });

  it('a union argument that matches no form names the form it came closest to and what that form expected', async () => {
    const error = await a.err('plan_create', { title: 't', steps: ['ok', { contnt: 'typo', owner: 'me' }] });
    expect(error.details).toMatchObject({ path: 'steps[1]' });
    expect(error.message).toMatch(/^steps\[1\] is not valid as an object \{content, /);
    expect(error.message).toMatch(/steps\[1\]\.content is required/);
    expect(error.message).toMatch(/did you mean content\?/);
  });

  it('an unknown or unprefixed tool name is answered in the envelope with the closest registered one', async () => {
    const misspelled = await a.err('state_gte', { key: 'k' });
    expect(misspelled).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'name', suggestion: 'state_get' } });
    expect(misspelled.message).toMatch(/^There is no tool "state_gte" here: did you mean state_get\?/);
    expect((await a.err('team_state_get', { key: 'k' })).details).toMatchObject({ suggestion: 'state_get' });
    const team = await connect({ config: { namespace: 'team' } });
    try {
      const bare = await team.client.callTool({ name: 'state_get', arguments: { key: 'k' } });
      expect(bare.isError).toBe(true);
      const body = JSON.parse((bare.content as Array<{ text: string }>)[0].text);
      expect(body.error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { suggestion: 'team_state_get' } });
      expect((await team.ok('state_get', { key: 'k' })).found).toBe(false);
    } finally {
      await team.close();
    }
  });

  it('a tool this server leaves out is said to be left out, not matched to a neighbour; a long name is not echoed whole', async () => {
    const agentOnly = await connect({ config: { tools: ['agent'] } });
    const left = await agentOnly.err('plan_update', { planId: 'p' }).finally(() => agentOnly.close());
    expect(left.message).toMatch(
      /^There is no tool "plan_update" here: this server's tool set \(--tools\) leaves it out \(it comes with the "planner" profile/,
    );
    expect(left.details).not.toHaveProperty('suggestion');
    // left out by another flag: the message names that flag, not a profile that would not bring it
    const operator = await connect({ config: { tools: ['operator'] } });
    const admin = await operator.err('budget_configure', { name: 'x', max: 1 }).finally(() => operator.close());
    expect(admin.message).toMatch(
      /^There is no tool "budget_configure" here: it exists only on a server started with --allow-budget-admin\. Its tools: /,
    );
    const reader = await connect({ config: { tools: ['all'], readOnly: true, namespace: 'ns' } });
    const write = await reader.err('state_set', { key: 'k', value: 1 }).finally(() => reader.close());
    expect(write.message).toMatch(/^There is no tool "ns_state_set" here: it writes, and this server serves reads only \(--read-only\)\. /);
    const long = await a.err(`x${'y'.repeat(100_000)}`, {});
    expect(JSON.stringify(long).length).toBeLessThan(5000);
    const arg = await a.err('state_get', { key: 'k', [`z${'w'.repeat(100_000)}`]: 1 });
    expect(arg.code).toBe('INVALID_ARGUMENT');
    expect(JSON.stringify(arg).length).toBeLessThan(5000);
  });

  it('an unknown argument name gets the closest known one', async () => {
    const error = await a.err('state_set', { key: 'k', value: 1, if_version: 0 });
    expect(error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(
        /^Unknown argument "if_version": did you mean ifVersion\? Arguments here: key, value, scope, ifVersion, ttlSeconds, idempotencyKey\.$/,
      ),
      details: {
        path: 'if_version',
        suggestion: 'ifVersion',
        issues: [{ path: 'if_version', message: expect.stringMatching(/^Unknown argument "if_version": did you mean ifVersion\?/) }],
      },
    });
    const far = await a.err('state_get', { key: 'k', colour: 'red' });
    expect(far).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'colour' } });
    expect(far.details).not.toHaveProperty('suggestion');
    expect((await a.err('state_get', { key: 'k', Scope: 'thread' })).details).toMatchObject({ suggestion: 'scope' });
    // plan_step's name for a step, given in a step update (whose name is id)
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a'] });
    const sibling = await a.err('plan_update', { planId, stepUpdates: [{ stepId: 's1', status: 'skipped' }] });
    expect(sibling.message).toMatch(/Unknown argument "stepUpdates\[0\]\.stepId": did you mean id\?/);
  });

  it('a schema error under a namespace names the argument the same way', async () => {
    const ns = await connect({ config: { namespace: 'team' } });
    try {
      expect(await ns.err('state_set', { key: 'k', value: 1, ifversion: 1 })).toMatchObject({
        code: 'INVALID_ARGUMENT',
        details: { suggestion: 'ifVersion' },
      });
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

describe('details.path', () => {
  // The server's instructions say: on INVALID_ARGUMENT fix the argument named in details.path. So every one names it,
  // the errors found while the tool runs as well as the schema's.
  const deep = (n: number): unknown => Array.from({ length: n }).reduce<unknown>((v) => [v], 1);
  const cases: Array<[string, Record<string, unknown>, string, string?]> = [
    ['plan_create', { title: '', steps: ['a'] }, 'title'],
    ['plan_create', { title: 't', steps: ['a', { content: '' }] }, 'steps[1].content'],
    ['plan_create', { title: 't', steps: ['a', { content: 'b', blockedBy: ['s9'] }] }, 'steps[1].blockedBy'],
    [
      'plan_create',
      {
        title: 't',
        steps: [
          { content: 'a', blockedBy: ['s2'] },
          { content: 'b', blockedBy: ['s1'] },
        ],
      },
      'steps[0].blockedBy',
    ],
    ['plan_create', { title: 't', steps: ['a', { content: 'b', owner: 'a b' }] }, 'steps[1].owner'],
    ['plan_get', { planId: 'plan-1' }, 'planId'],
    ['plan_update', { planId: 'PLAN', title: '' }, 'title'],
    ['plan_update', { planId: 'PLAN', stepUpdates: [{ id: 's1' }, { id: 's9', status: 'completed' }] }, 'stepUpdates[1].id', 'NOT_FOUND'],
    ['plan_update', { planId: 'PLAN', stepUpdates: [{ id: 's2', content: '' }] }, 'stepUpdates[0].content'],
    ['plan_update', { planId: 'PLAN', stepUpdates: [{ id: 's1', blockedBy: ['s1'] }] }, 'stepUpdates[0].blockedBy'],
    ['plan_update', { planId: 'PLAN', ifVersion: 1, steps: ['a', { id: 's7', content: 'x' }] }, 'steps[1].id'],
    ['plan_update', { planId: 'PLAN', ifVersion: 1, steps: ['a', 'b', { content: 'c', blockedBy: ['s9'] }] }, 'steps[2].blockedBy'],
    ['plan_step', { planId: 'PLAN', stepId: 's1', status: 'completed', fence: 0 }, 'fence'],
    ['final_answer_set', { content: '' }, 'content'],
    ['final_answer_set', { content: 'x', metadata: deep(70) }, 'metadata'],
    ['final_answer_get', { thread: 'a b', waitMs: 0 }, 'thread'],
    ['run_start', { thread: 'a b' }, 'thread'],
    ['history_append', { kind: 'Decision', content: 'x' }, 'kind'],
    ['history_append', { kind: 'note', content: 'x', data: deep(70) }, 'data'],
    ['history_list', { limit: 0 }, 'limit'],
    ['checkpoint_restore', { checkpointId: 'cp-1' }, 'checkpointId'],
    ['checkpoint_save', { label: 'l'.repeat(201) }, 'label'],
    ['message_send', { to: 'a b', content: 'x' }, 'to'],
    ['state_set', { key: 'x', value: deep(70) }, 'value'],
    ['state_update', { key: 'obj', op: 'merge', value: [1] }, 'value'],
    ['state_update', { key: 'obj', op: 'increment', value: 1 }, 'op'],
    ['state_batch', { ops: [{ op: 'set', key: 'x', value: deep(70) }] }, 'ops[0].value'],
    ['scratchpad_write', { kind: 'variable', name: 'v', value: deep(70) }, 'value'],
    ['state_changes', { afterRevision: 99999 }, 'afterRevision'],
    ['budget_step', { name: 'a b' }, 'name'],
    ['signal', { kind: 'commit', confidence: 2 }, 'confidence'],
    ['state_set', { key: 'obj', value: 2, idempotencyKey: 'first' }, 'idempotencyKey'],
  ];
  let b: Connected;
  let plan = '';
  beforeAll(async () => {
    b = await connect({ config: { agent: 'tester', tools: ['all'] } });
    await b.ok('state_set', { key: 'obj', value: { a: 1 } });
    plan = (await b.ok('plan_create', { title: 'P', steps: ['a', 'b'] })).planId;
    await b.ok('state_set', { key: 'obj', value: { a: 1 }, idempotencyKey: 'first' });
  });
  afterAll(() => b.close());
  it.each(cases.map(([tool, args, path, code]) => [tool, path, args, code ?? 'INVALID_ARGUMENT'] as const))(
    '%s: %s',
    async (tool, path, args, code) => {
      const before = await b.store.revision();
      const error = await b.err(tool, JSON.parse(JSON.stringify(args).replaceAll('"PLAN"', JSON.stringify(plan))));
      expect(error.code).toBe(code);
      expect(error.details?.path).toBe(path);
      expect(await b.store.revision()).toBe(before);
    },
  );
});
