import { describe, expect, it } from 'vitest';
import { dataKey, resolveScope } from '../../src/context.js';
import { agentsClosedAfterEach, memoryStore, sleep, type Connected } from '../helpers.js';

const KV_TOOLS = [
  'state_get',
  'state_set',
  'state_delete',
  'state_list',
  'state_snapshot',
  'state_update',
  'state_batch',
  'watch',
  'state_changes',
];

const agent = agentsClosedAfterEach();

describe('kv tools: listing', () => {
  it('lists the nine kv tools with output schemas and truthful annotations', async () => {
    const a = await agent({ config: { tools: ['kv'] } });
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...KV_TOOLS].sort());
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toBeDefined();
      expect(tool.description!.length).toBeGreaterThan(30);
      expect(tool.annotations?.openWorldHint).toBe(false);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    for (const name of ['state_get', 'state_list', 'state_snapshot', 'watch', 'state_changes'])
      expect(byName[name]?.readOnlyHint, name).toBe(true);
    // listed as what differs from MCP's defaults: not read-only, destructive and not idempotent go unsaid
    for (const name of ['state_set', 'state_delete', 'state_update', 'state_batch']) {
      expect(byName[name]?.readOnlyHint ?? false, name).toBe(false);
      expect(byName[name]?.destructiveHint ?? true, name).toBe(true);
    }
    expect(byName.state_delete?.idempotentHint).toBe(true);
    expect(byName.state_set?.idempotentHint ?? false).toBe(false);
    expect(byName.state_update?.idempotentHint ?? false).toBe(false);
  });

  it('answers initialize with its name, version and the tools capability', async () => {
    const a = await agent();
    expect(a.client.getServerVersion()).toMatchObject({ name: 'mcp-blackboard', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(a.client.getServerCapabilities()?.tools).toBeDefined();
  });

  it('prefixes every tool with the namespace, and namespaces never see each other', async () => {
    const store = memoryStore();
    const team = await agent({ store, config: { namespace: 'team' } });
    const other = await agent({ store, config: { namespace: 'team_b' } });
    const plain = await agent({ store });
    const { tools } = await team.client.listTools();
    expect(tools.map((t) => t.name)).toContain('team_state_get');
    expect(tools.every((t) => t.name.startsWith('team_'))).toBe(true);
    await team.ok('state_set', { key: 'secret', value: 'team only' });
    await team.ok('state_set', { key: 'secret2', value: 'team only' });
    expect(await other.ok('state_get', { key: 'secret' })).toEqual({ found: false });
    expect(await plain.ok('state_get', { key: 'secret' })).toEqual({ found: false });
    expect((await other.ok('state_list', {})).keys).toEqual([]);
    expect((await plain.ok('state_snapshot', {})).entries).toEqual({});
    expect((await team.ok('state_list', {})).keys.map((k: { key: string }) => k.key)).toEqual(['secret', 'secret2']);
  });
});

describe('kv tools: get, set, delete', () => {
  it('round-trips a value with version, time and author', async () => {
    const a = await agent({ config: { agent: 'planner' } });
    expect(await a.ok('state_get', { key: 'goal' })).toEqual({ found: false });
    expect(await a.ok('state_set', { key: 'goal', value: { text: 'ship it' } })).toMatchObject({
      version: 1,
      revision: expect.any(Number),
    });
    const got = await a.ok('state_get', { key: 'goal' });
    expect(got).toMatchObject({ found: true, value: { text: 'ship it' }, version: 1, updatedBy: 'planner' });
    expect(new Date(got.updatedAt).getTime()).toBeGreaterThan(Date.now() - 10_000);
    expect((await a.ok('state_set', { key: 'goal', value: null })).version).toBe(2);
    expect(await a.ok('state_get', { key: 'goal' })).toMatchObject({ found: true, value: null, version: 2 });
    expect(await a.ok('state_delete', { key: 'goal' })).toMatchObject({ deleted: true });
    expect(await a.ok('state_delete', { key: 'goal' })).toMatchObject({ deleted: false });
  });

  it('a number beyond a double (1e400, which JSON reads as Infinity) is INVALID_ARGUMENT, never stored as null', async () => {
    const a = await agent({ config: { agent: 'planner', tools: ['all'] } });
    await a.ok('state_set', { key: 'm', value: { kept: 1 } });
    const huge = JSON.parse('1e400') as number; // what a client's JSON parser makes of the literal
    const before = await a.ok('state_changes', {});
    for (const [tool, args] of [
      ['state_set', { key: 'n', value: huge }],
      ['state_set', { key: 'n', value: { a: [1, -huge, { b: Number.NaN }] } }],
      ['state_update', { key: 'm', op: 'merge', value: { x: huge } }],
      ['state_update', { key: 'l', op: 'append', value: huge }],
      ['state_batch', { ops: [{ op: 'set', key: 'n', value: [huge] }] }],
    ] as const) {
      const refused = await a.err(tool, args);
      expect([tool, refused.code, refused.message], JSON.stringify(args)).toEqual([
        tool,
        'INVALID_ARGUMENT',
        expect.stringMatching(/NaN or Infinity/),
      ]);
    }
    expect((await a.ok('state_changes', {})).revision).toBe(before.revision);
    expect(await a.ok('state_get', { key: 'n' })).toEqual({ found: false });
    expect((await a.ok('state_get', { key: 'm' })).value).toEqual({ kept: 1 });
  });

  it('compare-and-set: ifVersion 0 creates once; a stale version is VERSION_CONFLICT with currentVersion', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'lock', value: 'me', ifVersion: 0 });
    const conflict = await a.err('state_set', { key: 'lock', value: 'you', ifVersion: 0 });
    expect(conflict).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentVersion: 1 } });
    expect(conflict.message).toMatch(/retry/i);
    expect(await a.err('state_delete', { key: 'lock', ifVersion: 7 })).toMatchObject({ code: 'VERSION_CONFLICT' });
    expect((await a.ok('state_get', { key: 'lock' })).value).toBe('me');
    expect(await a.ok('state_delete', { key: 'lock', ifVersion: 1 })).toMatchObject({ deleted: true });
  });

  it('ttlSeconds makes a key expire', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'temp', value: 1, ttlSeconds: 0.3 });
    expect((await a.ok('state_get', { key: 'temp' })).found).toBe(true);
    await sleep(400);
    expect((await a.ok('state_get', { key: 'temp' })).found).toBe(false);
    expect((await a.err('state_set', { key: 'temp', value: 1, ttlSeconds: 0 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('state_set', { key: 'temp', value: 1, ttlSeconds: -5 })).code).toBe('INVALID_ARGUMENT');
  });

  it('idempotencyKey: a retry returns the first result and applies nothing', async () => {
    const a = await agent();
    const first = await a.ok('state_update', { key: 'n', op: 'increment', value: 1, idempotencyKey: 'req-1' });
    const retry = await a.ok('state_update', { key: 'n', op: 'increment', value: 1, idempotencyKey: 'req-1' });
    expect(retry).toEqual(first);
    expect((await a.ok('state_get', { key: 'n' })).value).toBe(1);
    const set1 = await a.ok('state_set', { key: 's', value: 'a', idempotencyKey: 'req-2' });
    expect(await a.ok('state_set', { key: 's', value: 'a', idempotencyKey: 'req-2' })).toEqual(set1);
    expect((await a.ok('state_get', { key: 's' })).value).toBe('a');
  });

  it('idempotencyKey: the same key with different arguments is refused and writes nothing', async () => {
    const a = await agent();
    const first = await a.ok('state_set', { key: 'i1', value: 'first', idempotencyKey: 'step-1' });
    const revision = await a.store.revision();
    const reused = await a.err('state_set', { key: 'i2', value: 'second', idempotencyKey: 'step-1' });
    expect(reused).toMatchObject({ code: 'INVALID_ARGUMENT', details: { idempotencyKey: 'step-1' } });
    expect(reused.message).toMatch(/idempotencyKey "step-1" was used for a different call: state_set .*use a new key per intended write/);
    expect((await a.ok('state_get', { key: 'i2' })).found).toBe(false);
    expect(await a.store.revision()).toBe(revision);
    // argument order does not make a different call; the same key on another tool is a different call too
    expect(await a.ok('state_set', { value: 'first', key: 'i1', idempotencyKey: 'step-1' })).toEqual(first);
    const otherTool = await a.err('state_delete', { key: 'i1', idempotencyKey: 'step-1' });
    expect(otherTool.message).toMatch(/idempotencyKey "step-1" was used for a different call: a state_set call\. Nothing was written/);
    expect((await a.ok('state_get', { key: 'i1' })).value).toBe('first');
    expect(await a.store.revision()).toBe(revision);
    await a.ok('state_update', { key: 'n', op: 'increment', value: 1, idempotencyKey: 'step-2' });
    const batch = await a.ok('state_batch', { ops: [{ op: 'set', key: 'b', value: 1 }], idempotencyKey: 'b-1' });
    expect((await a.err('state_batch', { ops: [{ op: 'set', key: 'b', value: 2 }], idempotencyKey: 'b-1' })).code).toBe('INVALID_ARGUMENT');
    expect(await a.ok('state_batch', { ops: [{ op: 'set', key: 'b', value: 1 }], idempotencyKey: 'b-1' })).toEqual(batch);
    expect((await a.ok('state_get', { key: 'b' })).value).toBe(1);
  });

  it("idempotencyKey: another agent's write in the same thread, labelled alike, is its own call and is applied", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'P' } });
    const kid = await agent({ store, config: { agent: 'kid', thread: 'C', parentThread: 'P' } });
    const increment = { key: 'n', op: 'increment', value: 1, scope: 'thread', idempotencyKey: 'step-1' };
    await kid.ok('state_update', increment);
    // the lead, owner of the thread above, works in the child's thread with the same label
    const inC = await lead.client.callTool({ name: 'state_update', arguments: increment, _meta: { 'blackboard/thread': 'C' } });
    expect(inC.structuredContent).toMatchObject({ value: 2, version: 2 });
    expect(await kid.ok('state_update', increment)).toMatchObject({ value: 1, version: 1 }); // the kid's retry: its first result
    expect((await kid.ok('state_get', { key: 'n', scope: 'thread' })).value).toBe(2);
  });

  it('idempotencyKey: a retry that spells out a default, or names the same scope another way, is the same call', async () => {
    const a = await agent({ config: { thread: 'T', tools: ['all'], maxIterations: 9, allowBudgetAdmin: true } });
    const set = await a.ok('state_set', { key: 'k', value: 1, idempotencyKey: 'A' });
    expect(await a.ok('state_set', { key: 'k', value: 1, idempotencyKey: 'A', scope: 'global' })).toEqual(set);
    const mine = await a.ok('state_update', { key: 'n', op: 'increment', value: 1, scope: 'thread', idempotencyKey: 'B' });
    expect(await a.ok('state_update', { key: 'n', op: 'increment', value: 1, scope: 'thread:T', idempotencyKey: 'B' })).toEqual(mine);
    const batch = await a.ok('state_batch', { ops: [{ op: 'set', key: 'b', value: 1 }], idempotencyKey: 'C' });
    const spelled = { ops: [{ op: 'set', key: 'b', value: 1, scope: 'global' }], atomic: true, idempotencyKey: 'C' };
    expect(await a.ok('state_batch', spelled)).toEqual(batch);
    const step = await a.ok('budget_step', { idempotencyKey: 'D' });
    expect(await a.ok('budget_step', { idempotencyKey: 'D', amount: 1, name: 'iterations' })).toEqual(step);
    const plan = await a.ok('plan_create', { title: 'p', steps: ['x'], idempotencyKey: 'E' });
    expect(await a.ok('plan_create', { title: 'p', steps: ['x'], scope: 'global', idempotencyKey: 'E' })).toEqual(plan);
    const raised = await a.ok('budget_increase', { name: 'iterations', amount: 1, idempotencyKey: 'G' });
    expect(await a.ok('budget_increase', { name: 'iterations', amount: 1, thread: 'T', idempotencyKey: 'G' })).toEqual(raised);
    expect((await a.ok('budget_status', {})).budgets[0]).toMatchObject({ name: 'iterations', current: 1, max: 10 });
    expect((await a.ok('state_get', { key: 'n', scope: 'thread' })).value).toBe(1);
    expect((await a.ok('plan_list', {})).plans).toHaveLength(1);
    // a different scope is still a different call
    expect((await a.err('state_set', { key: 'k', value: 1, idempotencyKey: 'A', scope: 'thread' })).code).toBe('INVALID_ARGUMENT');
  });
});

describe('kv tools: scopes', () => {
  it('keeps each scope apart and resolves thread, run, parent, agent_type and profile from the identity', async () => {
    const store = memoryStore();
    const parent = await agent({ store, config: { agent: 'boss', agentType: 'planner', thread: 'T1' } });
    const child = await agent({ store, config: { agent: 'worker', agentType: 'coder', thread: 'T2', parentThread: 'T1' } });
    const grandchild = await agent({ store, config: { agent: 'helper', agentType: 'coder', thread: 'T3', parentThread: 'T2' } });
    for (const scope of ['global', 'thread', 'run', 'parent', 'agent_type', 'profile', 'group:reviewers']) {
      await parent.ok('state_set', { key: 'k', value: `parent:${scope}`, scope });
    }
    const read = async (who: Connected, scope: string) => (await who.ok('state_get', { key: 'k', scope })).value;
    expect(await read(child, 'global')).toBe('parent:global');
    expect(await read(child, 'thread')).toBeUndefined();
    expect(await read(child, 'run')).toBeUndefined();
    expect(await read(child, 'parent')).toBe('parent:parent');
    expect(await read(grandchild, 'parent')).toBe('parent:parent');
    expect(await read(child, 'agent_type')).toBeUndefined();
    expect(await read(child, 'profile')).toBeUndefined();
    expect(await read(child, 'group:reviewers')).toBe('parent:group:reviewers');
    expect(await read(child, 'thread:T1')).toBe('parent:thread');
    expect(await read(child, 'profile:boss')).toBe('parent:profile');
    expect(await read(child, 'agent_type:planner')).toBe('parent:agent_type');
    await child.ok('state_set', { key: 'k', value: 'coders', scope: 'agent_type' });
    expect(await read(grandchild, 'agent_type')).toBe('coders');
    // a parent reads its child's thread explicitly
    await child.ok('state_set', { key: 'result', value: 42, scope: 'thread' });
    expect((await parent.ok('state_get', { key: 'result', scope: 'thread:T2' })).value).toBe(42);
  });

  it("another agent's profile is read-only (FORBIDDEN), and scope names are checked", async () => {
    const a = await agent({ config: { agent: 'alice' } });
    await a.ok('state_set', { key: 'pref', value: 'tea', scope: 'profile' });
    expect((await a.ok('state_get', { key: 'pref', scope: 'profile:alice' })).value).toBe('tea');
    expect((await a.err('state_set', { key: 'pref', value: 'x', scope: 'profile:bob' })).code).toBe('FORBIDDEN');
    expect((await a.err('state_set', { key: 'pref', value: 'x', scope: 'profile:system' })).code).toBe('FORBIDDEN');
    expect((await a.ok('state_get', { key: 'pref', scope: 'profile:system' })).found).toBe(false);
    for (const scope of ['globall', 'Global', 'group:', 'group:a b', 'thread:', 'user:x', 'group:%', '']) {
      const e = await a.err('state_get', { key: 'k', scope });
      expect(e.code, scope).toBe('INVALID_ARGUMENT');
    }
    const noType = await a.err('state_get', { key: 'k', scope: 'agent_type' });
    expect(noType.code).toBe('INVALID_ARGUMENT');
    expect(noType.message).toMatch(/--agent-type/);
  });

  it('look-alike groups never share keys', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: 1, scope: 'group:a_b' });
    for (const scope of ['group:aXb', 'group:A_B', 'group:a', 'group:a_b.']) {
      expect((await a.ok('state_get', { key: 'k', scope })).found, scope).toBe(false);
    }
  });
});

describe('kv tools: list and snapshot', () => {
  it('lists sorted by key with prefix and cursor paging', async () => {
    const a = await agent();
    for (let i = 0; i < 25; i++) await a.ok('state_set', { key: `task/${String(i).padStart(2, '0')}`, value: i });
    await a.ok('state_set', { key: 'taskx', value: 'not under task/' });
    const keys: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await a.ok('state_list', { prefix: 'task/', limit: 10, ...(cursor ? { cursor } : {}) });
      expect(page.keys.length).toBeLessThanOrEqual(10);
      keys.push(...page.keys.map((k: { key: string }) => k.key));
      cursor = page.nextCursor;
    } while (cursor);
    expect(keys).toEqual(Array.from({ length: 25 }, (_, i) => `task/${String(i).padStart(2, '0')}`));
    const first = await a.ok('state_list', {});
    expect(first.keys[0]).toMatchObject({ key: 'task/00', version: 1, updatedAt: expect.any(String) });
    expect(first.nextCursor).toBeUndefined();
  });

  it('refuses bad limits and foreign cursors', async () => {
    const a = await agent();
    for (const limit of [0, 1001, -1]) expect((await a.err('state_list', { limit })).code).toBe('INVALID_ARGUMENT');
    for (let i = 0; i < 3; i++) await a.ok('state_set', { key: `k${i}`, value: i });
    const { nextCursor } = await a.ok('state_list', { limit: 1 });
    const cursorErrors = [
      await a.err('state_list', { cursor: nextCursor, prefix: 'other' }),
      await a.err('state_list', { cursor: 'garbage!!' }),
      await a.err('state_snapshot', { cursor: 'garbage!!' }),
      await a.err('history_list', { cursor: 'garbage!!' }),
      await a.err('checkpoint_list', { cursor: 'garbage!!' }),
      await a.err('team_list', { cursor: 'garbage!!' }),
    ];
    // every listing names the argument it refused, as any other rule checked when the tool runs does
    for (const e of cursorErrors) expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'cursor' } });
  });

  it('snapshot reads many values in one call, bounded by maxBytes', async () => {
    const a = await agent();
    for (let i = 0; i < 50; i++) await a.ok('state_set', { key: `doc/${String(i).padStart(2, '0')}`, value: 'x'.repeat(100) });
    await a.ok('state_set', { key: '__proto__', value: { odd: true } });
    const all = await a.ok('state_snapshot', { prefix: 'doc/' });
    expect(Object.keys(all.entries)).toHaveLength(50);
    expect(all.truncated).toBe(false);
    expect(all.revision).toBeGreaterThan(0);
    const small = await a.ok('state_snapshot', { prefix: 'doc/', maxBytes: 1000 });
    expect(small.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(small.entries))).toBeLessThanOrEqual(1000);
    expect(Object.keys(small.entries).length).toBeGreaterThan(5);
    const proto = await a.ok('state_snapshot', { prefix: '__' });
    expect(Object.hasOwn(proto.entries, '__proto__')).toBe(true);
    // biome-ignore lint/suspicious/noProto: a user key named __proto__ must come back as an ordinary key
    expect(proto.entries.__proto__).toEqual({ odd: true });
    expect((await a.err('state_snapshot', { maxBytes: 1 })).code).toBe('INVALID_ARGUMENT');
  });
});

describe('kv tools: update and batch', () => {
  it('state_update applies each op atomically and returns the new value', async () => {
    const a = await agent();
    expect(await a.ok('state_update', { key: 'n', op: 'increment', value: 2 })).toMatchObject({ value: 2, version: 1 });
    expect(await a.ok('state_update', { key: 'log', op: 'append', value: 'a' })).toMatchObject({ value: ['a'] });
    expect(await a.ok('state_update', { key: 'cfg', op: 'merge', value: { a: 1, b: { c: 1 } } })).toMatchObject({
      value: { a: 1, b: { c: 1 } },
    });
    expect(await a.ok('state_update', { key: 'cfg', op: 'merge', value: { b: { d: 2 }, a: null } })).toMatchObject({
      value: { b: { c: 1, d: 2 } },
    });
    expect(await a.ok('state_update', { key: 'tags', op: 'add_to_set', value: 'x' })).toMatchObject({ value: ['x'] });
    expect(await a.ok('state_update', { key: 'tags', op: 'add_to_set', value: 'x' })).toMatchObject({ value: ['x'], version: 2 });
    const bad = await a.err('state_update', { key: 'tags', op: 'increment', value: 1 });
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', details: { currentType: 'array' } });
    expect((await a.err('state_update', { key: 'n', op: 'increment', value: 'one' })).code).toBe('INVALID_ARGUMENT');
    // a sum a double cannot hold exactly is refused: the write would silently change nothing, or the wrong thing
    await a.ok('state_set', { key: 'big', value: Number.MAX_SAFE_INTEGER - 1 });
    expect(await a.ok('state_update', { key: 'big', op: 'increment', value: 1 })).toMatchObject({
      value: Number.MAX_SAFE_INTEGER,
      version: 2,
    });
    for (const value of [1, 0.5]) {
      const refused = await a.err('state_update', { key: 'big', op: 'increment', value });
      expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', details: { current: Number.MAX_SAFE_INTEGER } });
      expect(refused.message).toMatch(/beyond which numbers are not exact. Nothing was changed/);
    }
    await a.ok('state_set', { key: 'f', value: 1e15 });
    expect((await a.err('state_update', { key: 'f', op: 'increment', value: 1e-10 })).message).toMatch(/too small to change/);
    expect(await a.ok('state_update', { key: 'f', op: 'increment', value: -0.25 })).toMatchObject({ value: 1e15 - 0.25 });
    expect(await a.ok('state_get', { key: 'big' })).toMatchObject({ value: Number.MAX_SAFE_INTEGER, version: 2 });
  });

  it('concurrent increments from many agents on one store all land', async () => {
    const store = memoryStore();
    const agents = await Promise.all(Array.from({ length: 4 }, () => agent({ store })));
    await Promise.all(
      agents.flatMap((a) => Array.from({ length: 25 }, () => a.ok('state_update', { key: 'hits', op: 'increment', value: 1 }))),
    );
    expect((await agents[0].ok('state_get', { key: 'hits' })).value).toBe(100);
  });

  it('an atomic batch applies all or none and names the failing operation', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'b', value: 'old' });
    const failed = await a.err('state_batch', {
      ops: [
        { op: 'set', key: 'a', value: 1 },
        { op: 'increment', key: 'n', value: 1 },
        { op: 'set', key: 'b', value: 'new', ifVersion: 9 },
      ],
    });
    expect(failed).toMatchObject({ code: 'VERSION_CONFLICT', details: { index: 2, currentVersion: 1 } });
    expect((await a.ok('state_get', { key: 'a' })).found).toBe(false);
    expect((await a.ok('state_get', { key: 'n' })).found).toBe(false);
    const done = await a.ok('state_batch', {
      ops: [
        { op: 'set', key: 'a', value: 1 },
        { op: 'increment', key: 'n', value: 5 },
        { op: 'delete', key: 'b', ifVersion: 1 },
      ],
    });
    expect(done.results).toEqual([
      { key: 'a', ok: true, version: 1 },
      { key: 'n', ok: true, version: 1, value: 5 },
      { key: 'b', ok: true, deleted: true },
    ]);
  });

  it('an atomic batch conflicting with its own earlier write names that operation, not a version never committed', async () => {
    const a = await agent();
    const failed = await a.err('state_batch', {
      ops: [
        { op: 'set', key: 'n', value: 1, ifVersion: 0 },
        { op: 'set', key: 'n', value: 2, ifVersion: 0 },
      ],
    });
    expect(failed).toMatchObject({ code: 'VERSION_CONFLICT', details: { index: 1, conflictsWith: 0, path: 'ops[1].ifVersion' } });
    expect(failed.details).not.toHaveProperty('currentVersion');
    expect(failed.details).not.toHaveProperty('current');
    expect(failed.message).toContain('operation #0 of this batch writes "n" first');
    expect((await a.ok('state_get', { key: 'n' })).found).toBe(false);
    // the version a conflict with the store names is one a retry can use
    await a.ok('state_set', { key: 'm', value: 'x' });
    const stale = await a.err('state_batch', { ops: [{ op: 'set', key: 'm', value: 'y', ifVersion: 5 }] });
    expect(stale.details).toMatchObject({ currentVersion: 1, current: 'x' });
  });

  it('a non-atomic batch applies each op on its own and reports each', async () => {
    const a = await agent();
    const r = await a.ok('state_batch', {
      atomic: false,
      ops: [
        { op: 'set', key: 'x', value: 1 },
        { op: 'set', key: 'y', value: 2, ifVersion: 3 },
        { op: 'append', key: 'x', value: 2 },
        { op: 'set', key: 'z', value: 3 },
      ],
    });
    expect(r.results.map((x: { ok: boolean }) => x.ok)).toEqual([true, false, false, true]);
    expect(r.results[1].error.code).toBe('VERSION_CONFLICT');
    expect(r.results[2].error.code).toBe('INVALID_ARGUMENT');
    expect((await a.ok('state_get', { key: 'x' })).value).toBe(1);
    expect((await a.ok('state_get', { key: 'z' })).value).toBe(3);
    expect((await a.ok('state_get', { key: 'y' })).found).toBe(false);
  });

  it('refuses empty, oversized and malformed batches', async () => {
    const a = await agent();
    expect((await a.err('state_batch', { ops: [] })).code).toBe('INVALID_ARGUMENT');
    const many = Array.from({ length: 101 }, (_, i) => ({ op: 'set', key: `k${i}`, value: i }));
    expect((await a.err('state_batch', { ops: many })).code).toBe('INVALID_ARGUMENT');
    const noValue = await a.err('state_batch', {
      ops: [
        { op: 'set', key: 'a', value: 1 },
        { op: 'set', key: 'b' },
      ],
    });
    expect(noValue).toMatchObject({ code: 'INVALID_ARGUMENT', details: { index: 1 } });
    expect((await a.ok('state_get', { key: 'a' })).found).toBe(false);
  });
});

describe('kv tools: watch', () => {
  it('returns at once when the key exists, else waits for it to be set', async () => {
    const store = memoryStore();
    const a = await agent({ store });
    const b = await agent({ store });
    await a.ok('state_set', { key: 'ready', value: 'yes' });
    expect(await a.ok('watch', { key: 'ready' })).toEqual({ found: true, value: 'yes', version: 1, timedOut: false });
    const waiting = a.ok('watch', { key: 'answer', waitMs: 10_000 });
    await sleep(50);
    await b.ok('state_set', { key: 'answer', value: 42 });
    expect(await waiting).toEqual({ found: true, value: 42, version: 1, timedOut: false });
  });

  it('with afterVersion waits for a newer version, and a delete counts', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: 'v1' });
    const newer = a.ok('watch', { key: 'k', afterVersion: 1, waitMs: 10_000 });
    await sleep(30);
    await a.ok('state_set', { key: 'k', value: 'v2' });
    expect(await newer).toEqual({ found: true, value: 'v2', version: 2, timedOut: false });
    expect(await a.ok('watch', { key: 'k', afterVersion: 1 })).toMatchObject({ version: 2, timedOut: false });
    const gone = a.ok('watch', { key: 'k', afterVersion: 2, waitMs: 10_000 });
    await sleep(30);
    await a.ok('state_delete', { key: 'k' });
    expect(await gone).toEqual({ found: false, timedOut: false });
  });

  it('times out with timedOut:true and checks its arguments', async () => {
    const a = await agent();
    expect(await a.ok('watch', { key: 'never', waitMs: 50 })).toEqual({ found: false, timedOut: true });
    expect((await a.err('watch', { key: 'k', waitMs: 600_001 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('watch', { key: 'k', afterVersion: -1 })).code).toBe('INVALID_ARGUMENT');
  });

  it('sends progress notifications while blocked when given a progress token', async () => {
    const a = await agent({ config: { progressIntervalMs: 100 } });
    const progress: number[] = [];
    const result = await a.raw('watch', { key: 'slow', waitMs: 1000 }, { onprogress: (p) => progress.push(p.progress) });
    expect(result.structuredContent).toEqual({ found: false, timedOut: true });
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
  });

  it('stops waiting when the client cancels the request', async () => {
    const a = await agent();
    const controller = new AbortController();
    const pending = a.raw('watch', { key: 'k', waitMs: 60_000 }, { signal: controller.signal });
    await sleep(50);
    controller.abort('changed my mind');
    await expect(pending).rejects.toThrow();
    // the server is still healthy and nothing leaked into the store
    expect(await a.ok('state_get', { key: 'k' })).toEqual({ found: false });
  });
});

describe('kv tools: bounded reads', () => {
  it('a snapshot of very many tiny keys stops at the row bound and says so', async () => {
    const a = await agent();
    await a.store.transact(async (tx) => {
      const who = a.bb.session.identity;
      for (let i = 0; i < 20_050; i++) await tx.set(dataKey(who, resolveScope('global', who), String(i).padStart(6, '0')), 0, { by: 'x' });
      return {};
    });
    const snap = await a.ok('state_snapshot', { maxBytes: 1024 * 1024 });
    expect(Object.keys(snap.entries)).toHaveLength(20_000);
    expect(snap.truncated).toBe(true);
    const all = await a.ok('state_snapshot', { prefix: '0000', maxBytes: 1024 * 1024 });
    expect(Object.keys(all.entries)).toHaveLength(100);
    expect(all.truncated).toBe(false);
  });

  it('state_snapshot without arguments stays under 16 KiB of compact JSON, over 400 keys of 1 KB', async () => {
    const a = await agent();
    await a.store.transact(async (tx) => {
      const who = a.bb.session.identity;
      for (let i = 0; i < 400; i++)
        await tx.set(dataKey(who, resolveScope('global', who), `doc/${String(i).padStart(3, '0')}`), 'x'.repeat(1000), { by: 'x' });
      return {};
    });
    const result = await a.raw('state_snapshot', {});
    const text = (result.content[0] as { text: string }).text;
    expect(text.length).toBeLessThan(16 * 1024 + 100);
    expect(text).not.toMatch(/\n/);
    const snap = JSON.parse(text);
    expect(snap.truncated).toBe(true);
    expect(Object.keys(snap.entries).length).toBeGreaterThan(10);
    const more = await a.ok('state_snapshot', { maxBytes: 1024 * 1024 });
    expect(Object.keys(more.entries)).toHaveLength(400);
    expect((await a.err('state_snapshot', { maxBytes: 1024 * 1024 + 1 })).details).toMatchObject({ path: 'maxBytes' });
  });
});

describe('kv tools: non-atomic batches report every failure in its slot', () => {
  it('a FORBIDDEN operation fails only its own slot', async () => {
    const a = await agent({ config: { agent: 'alice' } });
    const r = await a.ok('state_batch', {
      atomic: false,
      ops: [
        { op: 'set', key: 'mine', value: 1 },
        { op: 'set', key: 'theirs', value: 2, scope: 'profile:bob' },
        { op: 'set', key: '', value: 3 },
        { op: 'increment', key: 'n', value: 1 },
      ],
    });
    expect(r.results).toMatchObject([
      { key: 'mine', ok: true, version: 1 },
      { key: 'theirs', ok: false, error: { code: 'FORBIDDEN' } },
      { key: '', ok: false, error: { code: 'INVALID_ARGUMENT' } },
      { key: 'n', ok: true, value: 1 },
    ]);
    expect(await a.ok('state_get', { key: 'theirs', scope: 'profile:bob' })).toEqual({ found: false });
    const atomic = await a.err('state_batch', {
      ops: [
        { op: 'set', key: 'x', value: 1 },
        { op: 'set', key: 'y', value: 2, scope: 'profile:bob' },
      ],
    });
    expect(atomic).toMatchObject({ code: 'FORBIDDEN', details: { index: 1 } });
    expect(await a.ok('state_get', { key: 'x' })).toEqual({ found: false });
  });
});
