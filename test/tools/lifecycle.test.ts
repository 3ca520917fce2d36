import { describe, expect, it } from 'vitest';
import { TRANSITIONS, STATES } from '../../src/services/lifecycle.js';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

/** Drives a fresh run to `state` along legal transitions. */
async function reach(a: Awaited<ReturnType<typeof agent>>, state: string): Promise<void> {
  const path: Record<string, string[]> = {
    loading: [],
    running: ['running'],
    paused: ['running', 'paused'],
    awaiting_user_input: ['running', 'awaiting_user_input'],
    finished: ['running', 'finished'],
    error: ['running', 'error'],
    stopped: ['running', 'stopped'],
  };
  for (const s of path[state]) await a.ok('agent_state_set', { state: s });
}

describe('lifecycle tools', () => {
  it('a new run is loading, and every transition of the table is allowed exactly as documented', async () => {
    const a = await agent();
    expect(await a.ok('agent_state_get', {})).toMatchObject({ state: 'loading', allowed: ['running'] });
    for (const from of STATES) {
      for (const to of STATES) {
        await a.ok('run_start', {});
        await reach(a, from);
        const legal = TRANSITIONS[from].includes(to);
        if (legal) {
          const r = await a.ok('agent_state_set', { state: to, reason: `${from}->${to}` });
          expect(r, `${from}->${to}`).toMatchObject({ state: to, previous: from, reason: `${from}->${to}` });
        } else {
          const e = await a.err('agent_state_set', { state: to });
          expect(e.code, `${from}->${to}`).toBe('INVALID_TRANSITION');
          expect(e.details).toMatchObject({ from, to, allowed: [...TRANSITIONS[from]] });
          expect((await a.ok('agent_state_get', {})).state).toBe(from);
        }
      }
    }
  });

  it('the documented table itself', () => {
    expect(TRANSITIONS).toEqual({
      loading: ['running'],
      running: ['paused', 'awaiting_user_input', 'finished', 'error', 'stopped'],
      paused: ['running', 'stopped'],
      awaiting_user_input: ['running', 'stopped'],
      error: ['running', 'stopped'],
      finished: [],
      stopped: [],
    });
  });

  it("after finished the run's mutating tools fail with RUN_FINISHED until run_start", async () => {
    const a = await agent({ config: { maxIterations: 10 } });
    await a.ok('state_set', { key: 'k', value: 1, scope: 'run' });
    const { planId } = await a.ok('plan_create', { title: 'p', steps: ['x'], scope: 'run' });
    await reach(a, 'finished');
    const blocked: Array<[string, Record<string, unknown>]> = [
      ['state_set', { key: 'k', value: 2, scope: 'run' }],
      ['state_update', { key: 'k', op: 'increment', value: 1, scope: 'run' }],
      ['state_delete', { key: 'k', scope: 'run' }],
      ['state_batch', { ops: [{ op: 'set', key: 'x', value: 1, scope: 'run' }] }],
      ['scratchpad_write', { kind: 'variable', name: 'n', value: 1 }],
      ['scratchpad_write', { kind: 'observation', value: 'o' }],
      ['scratchpad_write', { kind: 'failed_approach', value: 'a' }],
      ['final_answer_set', { content: 'too late' }],
      ['budget_step', {}],
      // a plan of the run: none made in it, and its plans no longer change (as after run_end)
      ['plan_create', { title: 'late', steps: ['y'], scope: 'run' }],
      ['plan_update', { planId, title: 'renamed' }],
      ['agent_state_set', { state: 'running' }],
    ];
    for (const [tool, args] of blocked) {
      const code = (await a.err(tool, args)).code;
      expect(code, tool).toBe(tool === 'agent_state_set' ? 'INVALID_TRANSITION' : 'RUN_FINISHED');
    }
    // what to do is said also where run_start is not served (the agent profile), whose sentence then goes
    expect((await a.err('final_answer_set', { content: 'late' })).message).toMatch(
      /^This run has finished, so its state can no longer change: nothing was changed, and its work is over \(report what you have to whoever started it\)\. Begin a new run/,
    );
    // other scopes stay writable; reads work
    await a.ok('state_set', { key: 'k', value: 'thread is fine', scope: 'thread' });
    expect((await a.ok('state_get', { key: 'k', scope: 'run' })).value).toBe(1);
    await a.ok('run_start', {});
    expect((await a.ok('agent_state_get', {})).state).toBe('loading');
    await a.ok('state_set', { key: 'k', value: 2, scope: 'run' });
    await a.ok('final_answer_set', { content: 'new run' });
  });

  it("another thread's state is readable by id", async () => {
    const store = memoryStore();
    const child = await agent({ store, config: { thread: 'child-1' } });
    const parent = await agent({ store, config: { thread: 'parent-1' } });
    await child.ok('agent_state_set', { state: 'running' });
    await child.ok('agent_state_set', { state: 'awaiting_user_input', reason: 'need a password' });
    expect(await parent.ok('agent_state_get', { thread: 'child-1' })).toMatchObject({
      thread: 'child-1',
      state: 'awaiting_user_input',
      reason: 'need a password',
      allowed: ['running', 'stopped'],
    });
    expect((await parent.ok('agent_state_get', { thread: 'nobody' })).state).toBe('loading');
    expect((await parent.err('agent_state_get', { thread: 'bad id!' })).code).toBe('INVALID_ARGUMENT');
  });
});
