import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('budgets that cannot be undone', () => {
  it('restore: a checkpoint saved before spending brings back the state, not the budget', async () => {
    const w = await agent({ config: { agent: 'w', thread: 'W', maxIterations: 2 } });
    const cp = await w.ok('checkpoint_save', {});
    await w.ok('budget_step', {});
    await w.ok('budget_step', {});
    const refused = await w.err('budget_step', { amount: 100 });
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { requested: 100, remaining: 0, max: 2 } });
    expect(refused.message).toMatch(/asked for 100, 0 of 2 left/);
    expect(await w.ok('checkpoint_restore', { checkpointId: cp.checkpointId })).toMatchObject({ budgetsKept: true });
    expect((await w.ok('budget_status')).budgets).toEqual([{ name: 'iterations', current: 2, max: 2, remaining: 0, reached: true }]);
    expect((await w.err('budget_step', {})).code).toBe('LIMIT_REACHED');
  });

  it('LIMIT_REACHED says what was asked and what is left, never "used up" while some is left', async () => {
    const w = await agent({ config: { budgets: { cost: 5 } } });
    const refused = await w.err('budget_step', { name: 'cost', amount: 100 });
    expect(refused.message).toMatch(/asked for 100, 5 of 5 left/);
    expect(refused.message).not.toMatch(/used up/);
  });

  it('a worker whose budget is reached cannot claim new work but can finish the step it holds', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'L' } });
    const w = await agent({ store, config: { agent: 'w', thread: 'W', maxIterations: 1 } });
    const { planId } = await lead.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    await w.ok('plan_claim', { planId });
    await w.ok('budget_step', {});
    const refused = await w.err('plan_claim', { planId });
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { name: 'iterations', thread: 'W' } });
    expect(refused.message).toMatch(/plan_step/);
    expect(await w.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({ done: 1 });
    expect((await w.err('plan_step', { planId, stepId: 's2', status: 'in_progress' })).code).toBe('LIMIT_REACHED');
    // a child of the spent thread is refused too
    const child = await agent({ store, config: { agent: 'c', thread: 'C', parentThread: 'W' } });
    expect((await child.err('plan_claim', { planId })).details).toMatchObject({ thread: 'W' });
  });

  it("run_start into a parentless thread makes it this thread's child: its steps charge our budget", async () => {
    const w = await agent({ config: { agent: 'w', thread: 'W', maxIterations: 2 } });
    await w.ok('budget_step', {});
    await w.ok('run_start', { thread: 'T-fresh' });
    expect((await w.ok('whoami')).parentThread).toBe('W');
    await w.ok('budget_step', {});
    const refused = await w.err('budget_step', {});
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { thread: 'W', current: 2, max: 2 } });
  });
});

describe('handles are not credentials', () => {
  it('thread-switch: another agent cannot enter, write into, roll back or delete the checkpoints of a thread it does not own; the store is unchanged', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'A' } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'B' } });
    await alice.ok('state_set', { key: 'k', value: 'mine', scope: 'thread' });
    const cp = await alice.ok('checkpoint_save', {});
    await alice.ok('state_set', { key: 'k', value: 'newer', scope: 'thread' });
    // plans in alice's thread scope and in her run's scope are her thread's too
    const inThread = (await alice.ok('plan_create', { title: 'thread plan', steps: ['a'], scope: 'thread' })).planId;
    const inRun = (await alice.ok('plan_create', { title: 'run plan', steps: ['a'], scope: 'run' })).planId;
    await bob.ok('whoami'); // bob's sign of life is written now (at most every few seconds), not during the attempts
    const revision = await store.revision();
    for (const [tool, args] of [
      ['run_start', { thread: 'A' }],
      ['state_set', { key: 'k', value: 'bob was here', scope: 'thread:A' }],
      ['state_batch', { ops: [{ op: 'set', key: 'k', value: 'x', scope: 'thread:A' }] }],
      ['checkpoint_restore', { checkpointId: cp.checkpointId }],
      ['checkpoint_delete', { checkpointId: cp.checkpointId }],
      ['plan_create', { title: 'T', steps: [], scope: 'thread:A' }],
      ['plan_update', { planId: inThread, title: 'taken over' }],
      ['plan_delete', { planId: inThread }],
      ['plan_update', { planId: inRun, title: 'taken over' }],
      ['plan_update', { planId: inRun, status: 'abandoned' }],
      ['plan_delete', { planId: inRun }],
    ] as const) {
      const refused = await bob.err(tool, args);
      expect(refused, tool).toMatchObject({ code: 'FORBIDDEN', details: { thread: 'A', owner: 'alice' } });
      expect(refused.message).toMatch(/agent "alice"/);
    }
    expect(await store.revision()).toBe(revision);
    for (const [planId, title] of [
      [inThread, 'thread plan'],
      [inRun, 'run plan'],
    ])
      expect((await alice.ok('plan_get', { planId })).plan).toMatchObject({ title, status: 'active' });
    expect((await bob.ok('state_get', { key: 'k', scope: 'thread:A' })).value).toBe('newer');
    expect((await bob.ok('whoami')).thread).toBe('B');
    expect((await alice.ok('checkpoint_list', {})).checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual([
      cp.checkpointId,
    ]);
  });

  it("naming another agent's thread as one's own serves it for reading only; a parent named with it changes nothing", async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'A' } });
    await alice.ok('state_set', { key: 'k', value: 'mine', scope: 'thread' });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'B' } });
    await bob.ok('whoami');
    // bob presents alice's thread (a header, _meta or flag) and a parent of his own
    const visitor = await agent({ store, config: { agent: 'bob', thread: 'A', parentThread: 'B' } });
    expect((await visitor.ok('whoami')).parentThread).toBeNull(); // its sign of life is written now, not below
    const revision = await store.revision();
    for (const [tool, args] of [
      ['state_set', { key: 'k', value: 'bob was here', scope: 'thread' }],
      ['state_delete', { key: 'k', scope: 'thread' }],
      ['final_answer_set', { content: 'hijacked' }],
      ['scratchpad_write', { kind: 'observation', value: 'x' }],
      ['budget_step', {}],
    ] as const) {
      expect(await visitor.err(tool, args), tool).toMatchObject({ code: 'FORBIDDEN', details: { thread: 'A', owner: 'alice' } });
    }
    expect((await visitor.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('mine');
    expect(await store.revision()).toBe(revision);
    expect((await alice.ok('final_answer_get', { waitMs: 0 })).isSet).toBe(false);
    // alice herself is unaffected
    await alice.ok('state_set', { key: 'k', value: 'still mine', scope: 'thread' });
    // an agent's default thread is its own before it ever used it
    const early = await agent({ store, config: { agent: 'bob', thread: 'agent:carol' } });
    expect(await early.err('final_answer_set', { content: 'hijacked' })).toMatchObject({ code: 'FORBIDDEN', details: { owner: 'carol' } });
    const carol = await agent({ store, config: { agent: 'carol', thread: 'agent:carol' } });
    expect((await carol.ok('final_answer_set', { content: 'mine' })).answer).toMatchObject({ setBy: 'carol' });
    // callers with no name share agent:anonymous, which nobody owns
    const nameless = await agent({ store, config: { thread: 'agent:anonymous' } });
    await nameless.ok('state_set', { key: 'k', value: 1, scope: 'thread' });
  });

  it('a thread named before anyone recorded it is still refused once another agent records it first (the race to own it)', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'a', thread: 'home-a' } });
    const b = await agent({ store, config: { agent: 'b', thread: 'home-b' } });
    const inT = (who: typeof a, name: string, args: Record<string, unknown>) =>
      who.client.callTool({ name, arguments: args, _meta: { 'blackboard/thread': 'T' } });
    // b reads in T (recording nothing), then a records T by writing there
    expect((await inT(b, 'whoami', {})).isError).toBeFalsy();
    expect((await inT(a, 'state_set', { key: 'k', value: 'a', scope: 'thread' })).isError).toBeFalsy();
    const revision = await store.revision();
    for (const [tool, args] of [
      ['state_set', { key: 'k', value: 'b', scope: 'thread' }],
      ['final_answer_set', { content: 'hijacked' }],
    ] as const) {
      const refused = await inT(b, tool, args);
      expect(refused.isError, tool).toBe(true);
      expect(JSON.parse((refused.content[0] as { text: string }).text).error).toMatchObject({
        code: 'FORBIDDEN',
        details: { thread: 'T', owner: 'a' },
      });
    }
    expect(await store.revision()).toBe(revision);
    expect((await b.ok('state_get', { key: 'k', scope: 'thread:T' })).value).toBe('a');
    expect((await inT(a, 'final_answer_set', { content: 'mine' })).isError).toBeFalsy();
  });

  it('the owner of an ancestor thread may write into its descendants; a child may not write into its parent', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'P' } });
    const kid = await agent({ store, config: { agent: 'kid', thread: 'C', parentThread: 'P' } });
    const grandkid = await agent({ store, config: { agent: 'gk', thread: 'G', parentThread: 'C' } });
    await grandkid.ok('state_set', { key: 'k', value: 1, scope: 'thread' });
    await lead.ok('state_set', { key: 'k', value: 'from lead', scope: 'thread:G' });
    await kid.ok('state_set', { key: 'k', value: 'from kid', scope: 'thread:G' });
    expect((await kid.err('state_set', { key: 'k', value: 1, scope: 'thread:P' })).details).toMatchObject({ owner: 'lead' });
    expect((await grandkid.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('from kid');
  });

  it("a plan in a delegation tree's parent scope is changed only from inside the tree, as its keys are; outsiders still work its steps", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'P' } });
    const kid = await agent({ store, config: { agent: 'kid', thread: 'C', parentThread: 'P' } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'B' } });
    const { planId, version } = await lead.ok('plan_create', { title: 'tree plan', steps: ['a', 'b'], scope: 'parent' });
    await kid.ok('plan_claim', { planId, stepId: 's1' });
    // the tree's parent scope is not one bob can name for a key: "parent" is his own tree's
    expect((await bob.err('state_set', { key: 'k', value: 1, scope: 'parent:P' })).code).toBe('INVALID_ARGUMENT');
    await bob.ok('whoami'); // bob's sign of life is written now, not during the attempts
    const revision = await store.revision();
    for (const [tool, args] of [
      ['plan_update', { planId, title: 'taken over' }],
      ['plan_update', { planId, status: 'abandoned' }],
      ['plan_update', { planId, steps: ['x'], ifVersion: version + 1 }],
      ['plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'bob' }] }],
      ['plan_delete', { planId }],
    ] as const) {
      const refused = await bob.err(tool, args);
      expect(refused, tool).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'parent:P', rootThread: 'P' } });
      expect(refused.message).toMatch(/delegation tree of thread P/);
    }
    expect(await store.revision()).toBe(revision);
    expect((await lead.ok('plan_get', { planId })).plan).toMatchObject({ title: 'tree plan', status: 'active' });
    // step work stays open to anyone who sees the plan; a thread of the tree writes the plan itself
    expect(await bob.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's2' } });
    expect(await bob.ok('plan_step', { planId, stepId: 's2', status: 'completed' })).toMatchObject({ done: 1 });
    expect(await kid.ok('plan_update', { planId, title: 'renamed by a child' })).toMatchObject({ status: 'active' });
  });
});
