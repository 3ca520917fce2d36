import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('budget tools', () => {
  it('steps until the max, then LIMIT_REACHED consumes nothing', async () => {
    const a = await agent({ config: { maxIterations: 3, budgets: { tokens: 1000 } } });
    expect(await a.ok('budget_status')).toEqual({
      budgets: [
        { name: 'iterations', current: 0, max: 3, remaining: 3, reached: false },
        { name: 'tokens', current: 0, max: 1000, remaining: 1000, reached: false },
      ],
    });
    expect(await a.ok('budget_step')).toEqual({ name: 'iterations', current: 1, max: 3, remaining: 2, reached: false });
    expect(await a.ok('budget_step', { amount: 2 })).toMatchObject({ current: 3, remaining: 0, reached: true });
    const refused = await a.err('budget_step');
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { name: 'iterations', current: 3, max: 3 } });
    expect(await a.ok('budget_step', { name: 'tokens', amount: 900 })).toMatchObject({ current: 900 });
    expect((await a.err('budget_step', { name: 'tokens', amount: 101 })).code).toBe('LIMIT_REACHED');
    expect(await a.ok('budget_step', { name: 'tokens', amount: 100 })).toMatchObject({ current: 1000, reached: true });
    expect((await a.err('budget_step', { name: 'nope' })).code).toBe('NOT_FOUND');
    expect((await a.err('budget_step', { amount: 0 })).code).toBe('INVALID_ARGUMENT');
  });

  it('on a thread without budgets, budget_step tells the model to go on without it', async () => {
    const a = await agent({ config: { tools: ['agent'], namespace: 'ns' } });
    const none = await a.err('budget_step');
    expect(none.code).toBe('NOT_FOUND');
    expect(none.message).toMatch(/This thread has no budgets, so there is nothing to spend: go on without ns_budget_step \(/);
  });

  it("a child's steps count against its parent and grandparent; a refused ancestor refuses the step", async () => {
    const store = memoryStore();
    const config = { maxIterations: 5 };
    const root = await agent({ store, config: { ...config, thread: 'root' } });
    const child = await agent({ store, config: { ...config, thread: 'child', parentThread: 'root' } });
    const grandchild = await agent({ store, config: { ...config, thread: 'gc', parentThread: 'child' } });
    await grandchild.ok('budget_step', { amount: 2 });
    await child.ok('budget_step', { amount: 1 });
    expect((await root.ok('budget_status')).budgets[0]).toMatchObject({ current: 3 });
    expect((await child.ok('budget_status')).budgets[0]).toMatchObject({ current: 3 });
    expect((await grandchild.ok('budget_status')).budgets[0]).toMatchObject({ current: 2 });
    await root.ok('budget_step', { amount: 2 });
    const refused = await grandchild.err('budget_step');
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { thread: 'root' } });
    expect((await grandchild.ok('budget_status')).budgets[0].current).toBe(2);
    expect((await child.ok('budget_status')).budgets[0].current).toBe(3);
  });

  it('a step charges a parent the thread was given while the step began (the chain is read in its transaction)', async () => {
    const store = memoryStore();
    const config = { agent: 'lead', maxIterations: 5 };
    const parent = await agent({ store, config: { ...config, thread: 'P' } });
    const worker = await agent({ store, config: { ...config, thread: 'X' } });
    // the next transaction (the step's) starts only once another connection has opened X under P
    const transact = store.transact.bind(store);
    let armed = true;
    store.transact = (async (...args: Parameters<typeof transact>) => {
      if (armed) {
        armed = false;
        await agent({ store, config: { ...config, thread: 'X', parentThread: 'P' } });
      }
      return transact(...args);
    }) as typeof store.transact;
    expect(await worker.ok('budget_step', { amount: 2 })).toMatchObject({ current: 2 });
    expect(armed).toBe(false);
    expect((await parent.ok('budget_status')).budgets[0]).toMatchObject({ current: 2 });
  });

  it('admin tools exist only with --allow-budget-admin', async () => {
    const plain = await agent({ config: { maxIterations: 1 } });
    const names = (await plain.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('budget_step');
    expect(names).not.toContain('budget_configure');
    expect(names).not.toContain('budget_increase');
    const admin = await agent({ config: { maxIterations: 1, allowBudgetAdmin: true } });
    await admin.ok('budget_step');
    expect((await admin.err('budget_step')).code).toBe('LIMIT_REACHED');
    expect(await admin.ok('budget_increase', { name: 'iterations', amount: 2 })).toMatchObject({ current: 1, max: 3 });
    await admin.ok('budget_step');
    expect(await admin.ok('budget_configure', { name: 'calls', max: 1 })).toMatchObject({ name: 'calls', max: 1, current: 0 });
    await admin.ok('budget_step', { name: 'calls' });
    expect((await admin.err('budget_step', { name: 'calls' })).code).toBe('LIMIT_REACHED');
    expect((await admin.err('budget_increase', { name: 'unknown', amount: 1 })).code).toBe('NOT_FOUND');
    expect((await admin.err('budget_increase', { name: 'calls', amount: 0 })).code).toBe('INVALID_ARGUMENT');
    expect((await admin.err('budget_configure', { name: 'calls', max: -1 })).code).toBe('INVALID_ARGUMENT');
    expect((await admin.err('budget_configure', { name: 'bad name!', max: 1 })).code).toBe('INVALID_ARGUMENT');
  });

  it('--tools enables only the named families', async () => {
    const a = await agent({ config: { tools: ['plan', 'budget'], maxIterations: 1 } });
    const names = (await a.client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual([
      'budget_status',
      'budget_step',
      'plan_claim',
      'plan_create',
      'plan_delete',
      'plan_get',
      'plan_list',
      'plan_step',
      'plan_update',
    ]);
  });

  it('a thread keeps the maxes of the first server that served it; other servers judge it by them', async () => {
    const store = memoryStore();
    const first = await agent({ store, config: { thread: 'T', maxIterations: 3, budgets: { cost: 10 } } });
    const generous = await agent({ store, config: { thread: 'T', maxIterations: 100, budgets: { cost: 1000, extra: 5 } } });
    expect((await generous.ok('budget_status')).budgets).toEqual([
      { name: 'cost', current: 0, max: 10, remaining: 10, reached: false },
      { name: 'iterations', current: 0, max: 3, remaining: 3, reached: false },
    ]);
    await generous.ok('budget_step', { amount: 3 });
    expect((await generous.err('budget_step')).code).toBe('LIMIT_REACHED');
    expect((await generous.err('budget_step', { name: 'extra' })).code).toBe('NOT_FOUND');
    expect((await first.ok('budget_status')).budgets[1]).toMatchObject({ current: 3, max: 3 });
  });

  it("a child started with larger maxes cannot spend past its parent's stored max", async () => {
    const store = memoryStore();
    await agent({ store, config: { thread: 'P', budgets: { cost: 10 } } });
    const child = await agent({ store, config: { thread: 'C', parentThread: 'P', budgets: { cost: 100 } } });
    expect(await child.ok('budget_step', { name: 'cost', amount: 10 })).toMatchObject({ current: 10, max: 100 });
    expect(await child.err('budget_step', { name: 'cost' })).toMatchObject({ code: 'LIMIT_REACHED', details: { thread: 'P', max: 10 } });
  });

  it('budget_configure and budget_increase change the stored max that every server uses', async () => {
    const store = memoryStore();
    const admin = await agent({ store, config: { thread: 'T', maxIterations: 1, allowBudgetAdmin: true } });
    await admin.ok('budget_configure', { name: 'iterations', max: 2 });
    const other = await agent({ store, config: { thread: 'T', maxIterations: 50 } });
    await other.ok('budget_step', { amount: 2 });
    expect((await other.err('budget_step')).details).toMatchObject({ max: 2 });
    await admin.ok('budget_increase', { name: 'iterations', amount: 1 });
    expect(await other.ok('budget_step')).toMatchObject({ current: 3, max: 3, reached: true });
  });
});
