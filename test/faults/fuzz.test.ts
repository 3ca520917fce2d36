import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { tempDir } from '../contract/backends.js';
import { connect, DOCUMENTED_CODES, type Connected } from '../helpers.js';

// Property: a malformed or adversarial tool call never crashes the server, always fails with one of the documented error codes
// (a value of the wrong JSON type too: INVALID_ARGUMENT naming the argument), and never changes the store.
const MAX_VALUE = 2048;
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);

let a: Connected;
let store: VersionedStore;
beforeAll(async () => {
  store = new VersionedStore(await SqliteBackend.open(join(tempDir(), 'fuzz.db')), { sweepIntervalMs: 0, maxValueBytes: MAX_VALUE });
  a = await connect({ store, config: { agent: 'fuzzer', maxIterations: 1, maxValueBytes: MAX_VALUE } });
  // some state to protect: a used-up budget, a final answer, existing keys
  await a.ok('state_set', { key: 'exists', value: 'keep me' });
  await a.ok('budget_step');
  await a.ok('final_answer_set', { content: 'first' });
});
afterAll(async () => {
  await a.close();
  await store.close();
});

// --- generators of values that are always wrong -------------------------------------------------------------
const control = fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c));
const badKey = fc.oneof(
  fc.constant(''),
  fc.integer({ min: 513, max: 3000 }).map((n) => 'k'.repeat(n)),
  fc.tuple(fc.string({ maxLength: 20 }), control, fc.string({ maxLength: 20 })).map(([x, c, y]) => x + c + y),
  fc.tuple(fc.string({ maxLength: 10 }), fc.integer({ min: 0xd800, max: 0xdfff })).map(([x, s]) => x + String.fromCharCode(s)),
);
const nameChar = fc.constantFrom(...'abcXYZ019_.@-'.split(''));
const badName = fc.oneof(
  fc.constant(''),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom(' ', '%', '/', ':', '*', '\u00e9', '\u{1F600}', '\n'))
    .map(([x, c]) => `a${x}${c}`),
  fc.constantFrom('-lead', '.dot', '_under'),
  fc.stringMatching(/^[a-z]{129,140}$/),
);
// a thread id may also hold ':' and be up to 160 characters long
const badThread = fc.oneof(
  fc.constant(''),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom(' ', '%', '/', '*', '\u00e9', '\u{1F600}', '\n'))
    .map(([x, c]) => `a${x}${c}`),
  fc.constantFrom('-lead', '.dot', '_under', ':colon'),
  fc.stringMatching(/^[a-z]{161,170}$/),
);
const badScope = fc.oneof(
  fc.constantFrom(
    'Global',
    'GLOBAL',
    'globals',
    'threads',
    'run:',
    'parent:x',
    'user:1',
    'group',
    'agent_type',
    'plan:x',
    '*',
    '%',
    'group_x',
    'Group:x',
  ),
  badName.map((n) => `group:${n}`),
  badThread.map((n) => `thread:${n}`),
  fc.array(nameChar, { minLength: 1, maxLength: 6 }).map((cs) => `${cs.join('')}:${cs.join('')}`),
);
const wrongType = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
const hugeValue = fc.integer({ min: MAX_VALUE + 1, max: MAX_VALUE * 4 }).map((n) => 'v'.repeat(n));
const deepValue = fc.integer({ min: 65, max: 400 }).map((depth) => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { d: v };
  return v;
});
const goodKey = fc.string({ minLength: 1, maxLength: 30 }).filter((k) => !/[\u0000-\u001f\u007f-\u009f]/.test(k) && k.isWellFormed());
const anyJson = fc.jsonValue({ maxDepth: 3 });

type Call = { tool: string; args: Record<string, unknown> };
const call = (tool: string, args: Record<string, unknown>): Call => ({ tool, args });

const malformed: fc.Arbitrary<Call> = fc.oneof(
  // kv
  badKey.map((key) => call('state_set', { key, value: 1 })),
  badKey.map((key) => call('state_get', { key })),
  badKey.map((key) => call('watch', { key, waitMs: 0 })),
  fc.tuple(goodKey, badScope).map(([key, scope]) => call('state_set', { key, value: 1, scope })),
  fc.tuple(goodKey, badScope).map(([key, scope]) => call('state_get', { key, scope })),
  fc.tuple(badScope).map(([scope]) => call('state_list', { scope })),
  fc
    .tuple(goodKey, fc.constantFrom('profile:someone_else', 'profile:system'))
    .map(([key, scope]) => call('state_set', { key, value: 1, scope })),
  fc.tuple(goodKey, hugeValue).map(([key, value]) => call('state_set', { key, value })),
  fc.tuple(goodKey, deepValue).map(([key, value]) => call('state_set', { key, value })),
  fc.tuple(wrongType, anyJson).map(([key, value]) => call('state_set', { key, value })),
  fc
    // a numeric string is taken as its number ("3" is 3), so only strings that are not numbers are wrong
    .tuple(
      goodKey,
      fc.oneof(
        fc.string().filter((v) => Number.isNaN(Number(v))),
        fc.double({ noInteger: true }),
        fc.integer({ max: -1 }),
      ),
    )
    .map(([key, ifVersion]) => call('state_set', { key, value: 1, ifVersion })),
  fc
    .tuple(goodKey, fc.integer({ min: 2, max: 1e6 }))
    .map(([key, ifVersion]) => call('state_set', { key: `fresh/${key}`, value: 1, ifVersion })),
  fc.constant(call('state_set', { key: 'exists', value: 'x', ifVersion: 0 })),
  fc
    .tuple(
      goodKey,
      fc.string({ minLength: 1 }).filter((s) => !['increment', 'append', 'merge', 'add_to_set'].includes(s)),
    )
    .map(([key, op]) => call('state_update', { key, op, value: 1 })),
  fc
    .tuple(fc.oneof(fc.string(), fc.constant(null), fc.array(fc.integer())))
    .map(([value]) => call('state_update', { key: 'exists', op: 'increment', value })),
  fc.constant(call('state_update', { key: 'exists', op: 'merge', value: { a: 1 } })),
  fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 1001 })).map((limit) => call('state_list', { limit })),
  fc.string({ minLength: 1, maxLength: 40 }).map((cursor) => call('state_list', { cursor: `${cursor}!` })),
  fc.oneof(fc.integer({ max: 1 }), fc.integer({ min: 4 * 1024 * 1024 + 1 })).map((maxBytes) => call('state_snapshot', { maxBytes })),
  fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 600_001 })).map((waitMs) => call('watch', { key: 'exists', waitMs })),
  fc
    .array(fc.record({ op: fc.constant('set'), key: badKey, value: fc.constant(1) }), { minLength: 1, maxLength: 3 })
    .map((ops) => call('state_batch', { ops })),
  fc.constant(call('state_batch', { ops: [] })),
  fc.tuple(goodKey).map(([key]) =>
    call('state_batch', {
      ops: [
        { op: 'set', key: `b/${key}`, value: 1 },
        { op: 'set', key: 'exists', value: 2, ifVersion: 99 },
      ],
    }),
  ),
  // plans, scratchpad, finalizer, budget, lifecycle, history, signal, checkpoints
  fc.string({ maxLength: 30 }).map((planId) => call('plan_get', { planId: `x${planId}` })),
  fc.stringMatching(/^[0-9a-f]{12}$/).map((hex) => call('plan_update', { planId: `plan-${hex}`, title: 't' })),
  fc.constant(call('plan_create', { title: '   ', steps: [] })),
  fc.tuple(badScope).map(([scope]) => call('plan_create', { title: 't', steps: ['a'], scope })),
  fc.constant(call('plan_create', { title: 't', steps: [{ content: 'x', blockedBy: ['s9'] }] })),
  badKey.map((name) => call('scratchpad_write', { kind: 'variable', name, value: 1 })),
  fc.constantFrom('', '   ', '\n').map((observation) => call('scratchpad_write', { kind: 'observation', value: observation })),
  hugeValue.map((value) => call('scratchpad_write', { kind: 'variable', name: 'big', value })),
  fc.string({ minLength: 1, maxLength: 20 }).map((content) => call('final_answer_set', { content })),
  fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 600_001 })).map((waitMs) => call('final_answer_get', { waitMs })),
  badThread.map((thread) => call('final_answer_get', { thread })),
  fc.constant(call('budget_step', {})),
  fc.integer({ min: 1, max: 100 }).map((amount) => call('budget_step', { amount })),
  fc.oneof(fc.integer({ max: 0 })).map((amount) => call('budget_step', { amount })),
  fc.string({ minLength: 1, maxLength: 10 }).map((name) => call('budget_step', { name: `zz${name.replace(/[^a-z]/g, 'q')}` })),
  fc
    .constantFrom('paused', 'finished', 'error', 'stopped', 'awaiting_user_input', 'loading')
    .map((state) => call('agent_state_set', { state })),
  fc
    .string({ maxLength: 12 })
    .filter((s) => !['loading', 'running', 'paused', 'awaiting_user_input', 'finished', 'error', 'stopped'].includes(s))
    .map((state) => call('agent_state_set', { state })),
  fc
    .oneof(fc.constantFrom('', 'Tool Call', '1abc', 'a b', 'signal', 'run_end', 'plan_reassign'), fc.stringMatching(/^[a-z]{65,70}$/))
    .map((kind) => call('history_append', { kind, content: 'x' })),
  fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 501 })).map((limit) => call('history_list', { limit })),
  fc.integer({ max: -1 }).map((keepLast) => call('history_prune', { keepLast })),
  fc
    .oneof(fc.double({ min: 1.0001, max: 1e6, noNaN: true }), fc.double({ max: -0.0001, min: -1e6, noNaN: true }))
    .map((confidence) => call('signal', { kind: 'commit', confidence })),
  fc
    .string({ maxLength: 10 })
    .filter((k) => !['uncertain', 'explore', 'commit'].includes(k))
    .map((kind) => call('signal', { kind })),
  fc.string({ maxLength: 30 }).map((checkpointId) => call('checkpoint_restore', { checkpointId })),
  fc.stringMatching(/^[0-9a-f]{8}$/).map((hex) => call('checkpoint_delete', { checkpointId: `cp-000000000-${hex}` })),
  badThread.map((thread) => call('run_start', { thread })),
  fc.constantFrom('done', 'running', '').map((status) => call('run_end', { status })),
  // unknown arguments are refused, never ignored
  fc.tuple(goodKey).map(([key]) => call('state_set', { key, value: 1, if_version: 0 })),
);

describe('fuzz: malformed and adversarial tool calls', () => {
  it(`${RUNS} calls: the server stays up, every call fails with a documented error code, the store is unchanged`, async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(malformed, async ({ tool, args }) => {
        const before = await store.revision();
        const result = await a.raw(tool, args);
        expect(result.isError, `${tool} ${JSON.stringify(args).slice(0, 200)}`).toBe(true);
        expect(result.structuredContent).toBeUndefined();
        const text = (result.content[0] as { text: string }).text;
        const { error } = JSON.parse(text) as { error: { code: string; details?: { path?: string; issues?: unknown[] } } };
        expect(DOCUMENTED_CODES, error.code).toContain(error.code);
        // every INVALID_ARGUMENT names the argument, a schema violation (which lists its issues) as well as the rest
        if (error.code === 'INVALID_ARGUMENT') expect(typeof error.details?.path, `${tool} ${text.slice(0, 300)}`).toBe('string');
        const code = error.code === 'INVALID_ARGUMENT' && error.details?.issues !== undefined ? 'SCHEMA' : error.code;
        seen.set(code, (seen.get(code) ?? 0) + 1);
        expect(await store.revision()).toBe(before);
      }),
      { numRuns: RUNS },
    );
    // it really exercised the codes it claims to, and the server still works
    for (const code of [
      'INVALID_ARGUMENT',
      'VALUE_TOO_LARGE',
      'FORBIDDEN',
      'NOT_FOUND',
      'VERSION_CONFLICT',
      'LIMIT_REACHED',
      'MULTIPLE_FINAL_ANSWERS',
      'INVALID_TRANSITION',
      'SCHEMA',
    ]) {
      expect(seen.get(code) ?? 0, code).toBeGreaterThan(0);
    }
    expect((await a.ok('state_get', { key: 'exists' })).value).toBe('keep me');
    // about 5 s alone; under the whole suite's load on 2 cores it measured 47 s and more
  }, 180_000);

  it('look-alike namespaces, scopes and keys (_, %, case) never see each other', async () => {
    const shared = new VersionedStore(await SqliteBackend.open(join(tempDir(), 'lookalike.db')), { sweepIntervalMs: 0 });
    const team = await connect({ store: shared, config: { namespace: 'team' } });
    const teamX = await connect({ store: shared, config: { namespace: 'team_x' } });
    try {
      const lookalike = fc.tuple(
        fc.array(fc.constantFrom('a', 'A', '_', '%', 'x', '/', '.', '\u00e9'), { minLength: 1, maxLength: 6 }),
        fc.constantFrom('global', 'group:a_b', 'group:aXb', 'group:A_B'),
      );
      await fc.assert(
        fc.asyncProperty(lookalike, lookalike, async ([k1, s1], [k2, s2]) => {
          const key1 = k1.join('');
          const key2 = k2.join('');
          await team.ok('state_set', { key: key1, value: 'v1', scope: s1 });
          // the other namespace never sees it
          expect((await teamX.ok('state_get', { key: key1, scope: s1 })).found).toBe(false);
          // only that exact key in that exact scope holds it (the store has nothing else: each run deletes its key)
          const got = await team.ok('state_get', { key: key2, scope: s2 });
          expect(got.found).toBe(key1 === key2 && s1 === s2);
          // a prefix lists exactly the keys that start with it
          const listed = (await team.ok('state_list', { scope: s1, prefix: key2, limit: 1000 })).keys.map((k: { key: string }) => k.key);
          expect(listed.every((k: string) => k.startsWith(key2))).toBe(true);
          expect(listed.includes(key1)).toBe(key1.startsWith(key2));
          await team.ok('state_delete', { key: key1, scope: s1 });
        }),
        { numRuns: 300 },
      );
      expect((await teamX.ok('state_list', { limit: 1000 })).keys).toEqual([]);
    } finally {
      await team.close();
      await teamX.close();
      await shared.close();
    }
  });
});
