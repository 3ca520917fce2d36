// Two connections on one thread (two processes of one agent, or a planner and a worker): what one changes, the other's
// writes follow, and nothing the other sends undoes it.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('a connection that has not seen another connection begin a new run', () => {
  it('cannot write its scratchpad, final answer, lifecycle or budget step into the replaced run: it is told to retry', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'w', thread: 't', budgets: { tokens: 100 } } });
    const b = await agent({ store, config: { agent: 'w', thread: 't', budgets: { tokens: 100 } } });
    await b.ok('whoami');
    const { run } = await a.ok('run_start', {});
    // b's look at the thread's run happens just before a's run_start commits: as if it had not looked
    b.bb.services.runs.session.refresh = async () => {};
    for (const [tool, args] of [
      ['scratchpad_write', { kind: 'observation', value: 'lost?' }],
      ['final_answer_set', { content: 'answer in a replaced run' }],
      ['agent_state_set', { state: 'running' }],
      ['budget_step', { name: 'tokens', amount: 1 }],
      ['state_set', { key: 'k', scope: 'run', value: 1 }],
    ] as const) {
      const refused = await b.err(tool, args);
      expect([tool, refused.code, refused.message]).toEqual([tool, 'RUN_FINISHED', expect.stringMatching(/replaced by a new run.*Retry/)]);
    }
    expect((await a.ok('final_answer_get', { waitMs: 0 })).isSet).toBe(false);
    expect((await a.ok('whoami')).run).toBe(run);
  });

  it('nor when another call of its own moves it to the new run while the write waits for its transaction', async () => {
    for (const [tool, args] of [
      ['final_answer_set', { content: 'stale' }],
      ['agent_state_set', { state: 'paused' }],
      ['scratchpad_write', { kind: 'observation', value: 'stale' }],
      ['budget_step', { name: 'tokens', amount: 1 }],
      ['state_set', { key: 'k', scope: 'run', value: 'stale' }],
    ] as const) {
      const store = memoryStore();
      const a = await agent({ store, config: { agent: 'w', thread: 't', budgets: { tokens: 100 } } });
      const b = await agent({ store, config: { agent: 'w', thread: 't', budgets: { tokens: 100 } } });
      await a.ok('run_start', {});
      await b.ok('whoami');
      // b's write has looked at the thread's run (the old one) and waits at its transaction ...
      const transact = store.transact.bind(store);
      let release!: () => void;
      let waiting!: () => void;
      const atGate = new Promise<void>((r) => (waiting = r));
      const gate = new Promise<void>((r) => (release = r));
      store.transact = (async (...call: Parameters<typeof transact>) => {
        store.transact = transact;
        waiting();
        await gate;
        return transact(...call);
      }) as typeof transact;
      const pending = b.raw(tool, args);
      await atGate;
      // ... while a begins a new run and gives it its state and answer, and another call of b sees the new run
      const { run } = await a.ok('run_start', {});
      await a.ok('agent_state_set', { state: 'running' });
      await a.ok('final_answer_set', { content: 'the new run' });
      expect((await b.ok('whoami')).run).toBe(run);
      release();
      const reply = await pending;
      expect([tool, JSON.parse((reply.content[0] as { text: string }).text).error?.code]).toEqual([tool, 'RUN_FINISHED']);
      // nothing of it landed anywhere: the new run keeps what a gave it
      expect((await a.ok('final_answer_get', {})).answer.content).toBe('the new run');
      expect((await a.ok('agent_state_get', {})).state).toBe('running');
      expect((await a.ok('scratchpad_read', {})).observations).toEqual([]);
      expect((await a.ok('budget_status', {})).budgets[0]).toMatchObject({ name: 'tokens', current: 0 });
      expect((await a.ok('state_list', { scope: 'run' })).keys).toEqual([]);
    }
  });

  it('plan_create and plan_list in scope run use the current run', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'w', thread: 't' } });
    const b = await agent({ store, config: { agent: 'w', thread: 't' } });
    await b.ok('whoami');
    await a.ok('run_start', {});
    const { planId } = await b.ok('plan_create', { title: 'p', steps: ['x'], scope: 'run' });
    expect((await a.ok('plan_list', { scope: 'run' })).plans.map((p: { planId: string }) => p.planId)).toEqual([planId]);
  });

  it("follows the thread's new place in the tree: a parent given by run_start elsewhere charges its budgets", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'w', thread: 'lead', budgets: { tokens: 5 } } });
    await lead.ok('budget_step', { name: 'tokens', amount: 3 });
    const x = await agent({ store, config: { agent: 'w', thread: 'x', budgets: { tokens: 100 } } });
    await x.ok('whoami');
    await lead.ok('run_start', { thread: 'x', parentThread: 'lead' });
    expect((await x.err('budget_step', { name: 'tokens', amount: 10 })).code).toBe('LIMIT_REACHED');
    expect((await x.ok('whoami')).parentThread).toBe('lead');
  });
});

describe("a thread's parent, once set", () => {
  it('does not change when a later connection names another one', async () => {
    const store = memoryStore();
    for (const t of ['y', 'z']) await (await agent({ store, config: { agent: 'w', thread: t } })).ok('whoami');
    const first = await agent({ store, config: { agent: 'w', thread: 'x', parentThread: 'y' } });
    expect((await first.ok('whoami')).parentThread).toBe('y');
    const later = await agent({ store, config: { agent: 'w', thread: 'x', parentThread: 'z' } });
    expect((await later.ok('whoami')).parentThread).toBe('y');
    expect((await first.ok('whoami')).parentThread).toBe('y');
  });
});

describe("another agent's finished step", () => {
  it('is not reopened or re-owned by plan_update stepUpdates', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'ta', tools: ['all'] } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'tb', tools: ['all'] } });
    const { planId } = await alice.ok('plan_create', { title: 'p', steps: ['s'] });
    const { claim } = await alice.ok('plan_claim', { planId });
    await alice.ok('plan_step', { planId, stepId: 's1', status: 'completed', fence: claim.fence });
    for (const update of [
      { id: 's1', status: 'pending' },
      { id: 's1', owner: 'bob' },
    ]) {
      expect((await bob.err('plan_update', { planId, stepUpdates: [update] })).code).toBe('INVALID_TRANSITION');
    }
    const { plan } = await bob.ok('plan_get', { planId });
    expect(plan.steps[0]).toMatchObject({ id: 's1', status: 'completed', owner: 'alice' });
  });
});

describe("a run's plans", () => {
  it("follow the run rules: none made after the run finished, and a replaced run's plan no longer changes", async () => {
    const a = await agent({ config: { agent: 'w', thread: 't', tools: ['all'] } });
    const { planId } = await a.ok('plan_create', { title: 'p', steps: ['x'], scope: 'run' });
    await a.ok('run_end', { status: 'finished' });
    expect((await a.err('plan_create', { title: 'q', steps: ['y'], scope: 'run' })).code).toBe('RUN_FINISHED');
    expect((await a.err('plan_update', { planId, title: 'renamed' })).code).toBe('RUN_FINISHED');
    await a.ok('run_start', {});
    expect((await a.err('plan_update', { planId, title: 'renamed' })).code).toBe('RUN_FINISHED');
    // a plan of the new run is made and changed as usual
    const fresh = await a.ok('plan_create', { title: 'r', steps: ['z'], scope: 'run' });
    await a.ok('plan_update', { planId: fresh.planId, title: 'renamed' });
  });

  it('are judged by their own thread\'s run, whichever thread changes them (a thread id may hold ":")', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 't', tools: ['all'] } });
    const sub = await agent({ store, config: { agent: 'lead', thread: 't:sub', parentThread: 't', tools: ['all'] } });
    const elsewhere = await agent({ store, config: { agent: 'lead', thread: 'u', tools: ['all'] } });
    const { planId } = await sub.ok('plan_create', { title: 'p', steps: ['x'], scope: 'run' });
    // a live run's plan: its owner changes it from any thread, "t" included (not taken for one of t's own runs)
    await lead.ok('plan_update', { planId, title: 'from t' });
    await elsewhere.ok('plan_update', { planId, title: 'from u' });
    // its run finished: nobody changes it any more, from its thread or another
    await sub.ok('run_end', { status: 'finished' });
    for (const who of [sub, lead, elsewhere]) {
      expect((await who.err('plan_update', { planId, title: 'renamed' })).code).toBe('RUN_FINISHED');
      expect((await who.err('plan_delete', { planId })).code).toBe('RUN_FINISHED');
    }
    expect((await lead.ok('plan_get', { planId })).plan.title).toBe('from u');
  });

  it("of a replaced run take workers' reports until the plan TTL, then expire; the new run's plans do not", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 't', tools: ['all'], planTtlSeconds: 2 } });
    const worker = await agent({ store, config: { agent: 'w', thread: 'tw', tools: ['all'], planTtlSeconds: 2 } });
    const old = await lead.ok('plan_create', { title: 'old', steps: ['x', 'y'], scope: 'run' });
    const kept = await lead.ok('plan_create', { title: 'kept', steps: ['z'], scope: 'thread' });
    const { claim, step } = await worker.ok('plan_claim', { planId: old.planId });
    await lead.ok('run_start', {});
    const fresh = await lead.ok('plan_create', { title: 'fresh', steps: ['n'], scope: 'run' });
    // the worker still reports its step, and its write keeps the TTL the plan was given at run_start
    await worker.ok('plan_step', { planId: old.planId, stepId: step.id, status: 'completed', fence: claim.fence });
    // the plan's record and its index entry
    const { entries } = await store.list({ lo: '', hi: '\u{10ffff}', limit: 1000 });
    const expiry = (planId: string) => entries.filter(([key]) => key.endsWith(planId)).map(([, e]) => e.expiresAt !== undefined);
    expect(expiry(old.planId)).toEqual([true, true]);
    expect(expiry(fresh.planId)).toEqual([false, false]);
    await sleep(2100);
    expect((await worker.err('plan_get', { planId: old.planId })).code).toBe('NOT_FOUND');
    expect((await lead.ok('plan_get', { planId: fresh.planId })).plan.title).toBe('fresh');
    expect((await lead.ok('plan_get', { planId: kept.planId })).plan.title).toBe('kept');
    expect((await lead.ok('plan_list', { scope: 'run' })).plans.map((p: { title: string }) => p.title)).toEqual(['fresh']);
  });
});
