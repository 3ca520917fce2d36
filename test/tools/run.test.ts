import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('run tools', () => {
  it('whoami reports the identity from flags, the lifecycle state and the budgets, and nothing about the store', async () => {
    const a = await agent({ config: { namespace: 'ns1', agent: 'ada', agentType: 'coder', thread: 'T1', maxIterations: 5 } });
    await a.ok('budget_step', {});
    const me = await a.ok('whoami');
    expect(me).toEqual({
      namespace: 'ns1',
      agent: 'ada',
      agentType: 'coder',
      thread: 'T1',
      run: expect.any(String),
      parentThread: null,
      delegateLevel: 0,
      state: 'loading',
      budgets: [{ name: 'iterations', current: 1, max: 5, remaining: 4, reached: false }],
      unread: 0,
    });
    expect(JSON.stringify(me)).not.toMatch(/memory:|sqlite:|store/);
  });

  it('a child knows its parent and level; scope parent is shared down the tree', async () => {
    const store = memoryStore();
    await agent({ store, config: { thread: 'root' } });
    const child = await agent({ store, config: { thread: 'kid', parentThread: 'root' } });
    const grandchild = await agent({ store, config: { thread: 'grandkid', parentThread: 'kid' } });
    expect(await child.ok('whoami')).toMatchObject({ parentThread: 'root', delegateLevel: 1 });
    expect(await grandchild.ok('whoami')).toMatchObject({ parentThread: 'kid', delegateLevel: 2 });
  });

  it('run_start: new run id, run scope/scratchpad/final answer fresh, thread state kept, resumed', async () => {
    const a = await agent({ config: { thread: 'T' } });
    const first = (await a.ok('whoami')).run;
    await a.ok('state_set', { key: 'k', value: 'run data', scope: 'run' });
    await a.ok('state_set', { key: 'k', value: 'thread data', scope: 'thread' });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'seen' });
    await a.ok('final_answer_set', { content: 'done' });
    const started = await a.ok('run_start', {});
    expect(started).toEqual({ thread: 'T', run: expect.any(String), resumed: true });
    expect(started.run).not.toBe(first);
    expect((await a.ok('whoami')).run).toBe(started.run);
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).found).toBe(false);
    expect((await a.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('thread data');
    expect((await a.ok('scratchpad_read')).observations).toEqual([]);
    expect((await a.ok('final_answer_get', { waitMs: 0 })).isSet).toBe(false);
    // the old run's scope and scratchpad are deleted from the store, not just hidden
    const { entries } = await a.store.list({ lo: '', hi: '\u{10ffff}', limit: 1000 });
    expect(entries.map(([key]) => key).filter((key) => key.includes(first))).toEqual([]);
  });

  it('run_start can switch to a new thread (resumed: false) with a parent of its own tree and a type', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'boss' } });
    await a.ok('run_start', { thread: 'T' }); // a child of boss
    const r = await a.ok('run_start', { thread: 'fresh', parentThread: 'boss', agentType: 'critic' });
    expect(r).toMatchObject({ thread: 'fresh', resumed: false });
    expect(await a.ok('whoami')).toMatchObject({ thread: 'fresh', parentThread: 'boss', agentType: 'critic', delegateLevel: 1 });
    expect((await a.err('run_start', { thread: 'no spaces' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.ok('whoami')).thread).toBe('fresh');
  });

  it('run_start refuses a parent thread that does not exist (a made-up parent would escape the budgets of this tree)', async () => {
    const a = await agent({ config: { thread: 'T', budgets: { tokens: 10 } } });
    await a.ok('budget_step', { name: 'tokens', amount: 10 });
    for (const args of [{ parentThread: 'nowhere' }, { thread: 'child', parentThread: 'nowhere' }]) {
      const e = await a.err('run_start', args);
      expect(e.code).toBe('NOT_FOUND');
      expect(e.message).toContain('There is no thread "nowhere"');
    }
    expect(await a.ok('whoami')).toMatchObject({ thread: 'T', parentThread: null, delegateLevel: 0 });
    // a child entered without a parent still charges this thread's budgets
    await a.ok('run_start', { thread: 'child' });
    expect((await a.err('budget_step', { name: 'tokens', amount: 1 })).code).toBe('LIMIT_REACHED');
  });

  it('an idempotencyKey counts within a run: the same labelled write in the next run is applied there, a run_start retry starts nothing', async () => {
    const a = await agent({ config: { agent: 'w', thread: 'T' } });
    const write = { key: 'k', scope: 'run', value: 'v', idempotencyKey: 'step-1' };
    await a.ok('state_set', write);
    await a.ok('scratchpad_write', { kind: 'observation', value: 'o', idempotencyKey: 'note-1' });
    await a.ok('final_answer_set', { content: 'first run', idempotencyKey: 'answer' });
    const started = await a.ok('run_start', { idempotencyKey: 'next-run' });
    expect(await a.ok('run_start', { idempotencyKey: 'next-run' })).toEqual(started);
    expect((await a.ok('whoami')).run).toBe(started.run);
    await a.ok('state_set', write);
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).value).toBe('v');
    await a.ok('scratchpad_write', { kind: 'observation', value: 'o', idempotencyKey: 'note-1' });
    expect((await a.ok('scratchpad_read')).observations).toHaveLength(1);
    await a.ok('final_answer_set', { content: 'second run', idempotencyKey: 'answer' });
    expect((await a.ok('final_answer_get')).answer.content).toBe('second run');
  });

  it('a keyed write counts in the run it commits in: made while another connection moved the thread on, its retry applies nothing', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'w', thread: 'T' } });
    const b = await agent({ store, config: { agent: 'w', thread: 'T' } });
    await a.ok('whoami');
    const { run } = await b.ok('run_start', {});
    // a has not followed the new run yet when it writes; it has by the retry
    const increment = { key: 'n', op: 'increment', value: 1, idempotencyKey: 'U' };
    expect((await a.ok('state_update', increment)).value).toBe(1);
    const save = { label: 'once', idempotencyKey: 'S' };
    const saved = await a.ok('checkpoint_save', save);
    expect((await a.ok('whoami')).run).toBe(run);
    expect((await a.ok('state_update', increment)).value).toBe(1);
    expect((await a.ok('state_get', { key: 'n' })).value).toBe(1);
    expect(await a.ok('checkpoint_save', save)).toEqual(saved);
    expect((await a.ok('checkpoint_list')).checkpoints).toHaveLength(1);
  });

  it('run_start refuses a parent in another delegation tree: a spent budget is not left behind that way', async () => {
    const store = memoryStore();
    const other = await agent({ store, config: { agent: 'w', thread: 'other-root', budgets: { tokens: 100 } } });
    await other.ok('whoami');
    const a = await agent({ store, config: { agent: 'w', thread: 'T', budgets: { tokens: 10 } } });
    await a.ok('budget_step', { name: 'tokens', amount: 10 });
    const escaped = await a.err('run_start', { thread: 'escape-1', parentThread: 'other-root' });
    expect(escaped).toMatchObject({ code: 'FORBIDDEN', details: { parentThread: 'other-root', root: 'other-root' } });
    expect(await a.ok('whoami')).toMatchObject({ thread: 'T', parentThread: null });
    expect((await a.err('budget_step', { name: 'tokens', amount: 1 })).code).toBe('LIMIT_REACHED');
  });

  it('run_start keeps the delegation tree a tree: no thread its own parent, no new parent, no loop (each escaped a spent budget)', async () => {
    const a = await agent({ config: { thread: 'T', budgets: { tokens: 10 } } });
    await a.ok('budget_step', { name: 'tokens', amount: 10 });
    const own = await a.err('run_start', { thread: 'esc', parentThread: 'esc' });
    expect(own).toMatchObject({ code: 'INVALID_ARGUMENT', details: { thread: 'esc', parentThread: 'esc' } });
    expect(own.message).toMatch(/cannot be its own parent. Nothing was changed/);
    expect(await a.ok('whoami')).toMatchObject({ thread: 'T', parentThread: null });
    await a.ok('run_start', { thread: 'c1' }); // a child of T
    await a.ok('run_start', { thread: 'gc' }); // a child of c1
    const moved = await a.err('run_start', { thread: 'c1', parentThread: 'gc' });
    expect(moved).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(moved.message).toMatch(/child of T already; a thread's parent does not change/);
    const loop = await a.err('run_start', { thread: 'T', parentThread: 'gc' });
    expect(loop.message).toMatch(/gc is below T, so T cannot be its child/);
    expect(await a.ok('whoami')).toMatchObject({ thread: 'gc', parentThread: 'c1', delegateLevel: 2 });
    expect((await a.err('budget_step', { name: 'tokens', amount: 1 })).code).toBe('LIMIT_REACHED');
    // naming the parent a thread has is no change: it starts a new run there
    expect(await a.ok('run_start', { thread: 'c1', parentThread: 'T' })).toMatchObject({ thread: 'c1', resumed: true });
  });

  it('run_end records the end in lifecycle and history, from loading or running', async () => {
    const a = await agent();
    expect(await a.ok('run_end', { status: 'finished' })).toMatchObject({ state: 'finished' });
    expect((await a.ok('agent_state_get')).state).toBe('finished');
    const h = await a.ok('history_list', { kind: 'run_end' });
    expect(h.entries).toHaveLength(1);
    expect(h.entries[0]).toMatchObject({ kind: 'run_end', content: 'finished' });
    await a.ok('run_start', {});
    await a.ok('agent_state_set', { state: 'running' });
    await a.ok('agent_state_set', { state: 'paused' });
    expect((await a.err('run_end', { status: 'error' })).code).toBe('INVALID_TRANSITION');
    expect(await a.ok('run_end', { status: 'stopped', reason: 'user left' })).toMatchObject({ state: 'stopped' });
  });

  it('a run ends once: a second run_end changes nothing; a state reported before run_end is ended by it', async () => {
    const a = await agent();
    await a.ok('run_end', { status: 'finished', reason: 'done' });
    const { revision } = await a.ok('state_changes', { limit: 1 });
    for (const status of ['finished', 'error', 'stopped']) {
      const again = await a.err('run_end', { status, reason: 'another reason' });
      expect(again).toMatchObject({ code: 'INVALID_TRANSITION', details: { from: 'finished', to: status } });
      expect(again.message).toMatch(/already ended as finished.*Nothing was changed/);
    }
    expect((await a.ok('state_changes', { limit: 1 })).revision).toBe(revision);
    expect(await a.ok('agent_state_get')).toMatchObject({ state: 'finished', reason: 'done' });
    expect((await a.ok('checkpoint_list')).checkpoints).toHaveLength(1);
    expect((await a.ok('history_list', { kind: 'run_end' })).entries).toHaveLength(1);
    // an agent that reported its state first still ends the run with run_end, once; so does one that went on after
    await a.ok('run_start', {});
    await a.ok('agent_state_set', { state: 'running' });
    await a.ok('agent_state_set', { state: 'error', reason: 'tool crashed' });
    await a.ok('run_end', { status: 'error' });
    expect((await a.err('run_end', { status: 'error' })).code).toBe('INVALID_TRANSITION');
    await a.ok('agent_state_set', { state: 'running' });
    expect(await a.ok('run_end', { status: 'finished' })).toMatchObject({ state: 'finished' });
  });

  it("switching thread with run_start leaves the old thread's run alone (other connections may still serve it)", async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T1' } });
    const b = await agent({ store, config: { thread: 'T1' } });
    await a.ok('state_set', { key: 'k', value: 'T1 run data', scope: 'run' });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'T1 note' });
    await a.ok('run_start', { thread: 'T2' });
    expect((await b.ok('state_get', { key: 'k', scope: 'run' })).value).toBe('T1 run data');
    expect((await b.ok('scratchpad_read')).observations).toEqual(['T1 note']);
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).found).toBe(false);
  });

  it('run_start and run_end retried with the same idempotencyKey do it once', async () => {
    const a = await agent();
    const first = await a.ok('run_start', { idempotencyKey: 'start-1' });
    await a.ok('state_set', { key: 'k', value: 'kept', scope: 'run' });
    expect(await a.ok('run_start', { idempotencyKey: 'start-1' })).toEqual(first);
    expect((await a.ok('whoami')).run).toBe(first.run);
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).value).toBe('kept');
    const ended = await a.ok('run_end', { status: 'finished', idempotencyKey: 'end-1' });
    expect(await a.ok('run_end', { status: 'finished', idempotencyKey: 'end-1' })).toEqual(ended);
    expect((await a.ok('checkpoint_list')).checkpoints).toHaveLength(1);
    expect((await a.ok('history_list', { kind: 'run_end' })).entries).toHaveLength(1);
  });

  it('a run_start into another thread, retried from the thread it switched to, starts no second run', async () => {
    const a = await agent({ config: { thread: 'T' } });
    const first = await a.ok('run_start', { thread: 'T2', idempotencyKey: 'enter' });
    await a.ok('state_set', { key: 'k', value: 'kept', scope: 'run' });
    expect(await a.ok('run_start', { thread: 'T2', idempotencyKey: 'enter' })).toEqual(first);
    expect((await a.ok('whoami')).run).toBe(first.run);
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).value).toBe('kept');
    // naming the caller's own thread spells out the default: the same call
    const again = await a.ok('run_start', { idempotencyKey: 'next' });
    expect(await a.ok('run_start', { thread: 'T2', idempotencyKey: 'next' })).toEqual(again);
  });

  it('run_end says it saves a checkpoint only on a server whose run_end saves one', async () => {
    const description = async (a: Awaited<ReturnType<typeof agent>>) =>
      (await a.client.listTools()).tools.find((t) => t.name === 'run_end')?.description ?? '';
    const bare = await agent({ config: { tools: ['run'] } });
    expect(await description(bare)).not.toMatch(/saves|checkpoint_save/);
    expect(await bare.ok('run_end', { status: 'finished' })).not.toHaveProperty('checkpointId');
    const full = await agent({ config: { tools: ['all'] } });
    expect(await description(full)).toContain('checkpoint_save');
    expect(await full.ok('run_end', { status: 'finished' })).toHaveProperty('checkpointId');
  });
});
