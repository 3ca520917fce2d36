import type { CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Spawned, spawnAgent, type ToolError } from '../helpers.js';
import { sharedStores } from '../stores.js';

// A thread's current run is thread state: two server processes serving one thread on one store follow each other's
// run_start and run_end. A write of a run another process has replaced or ended either goes to the thread's current
// run or is refused (RUN_FINISHED, nothing changed); an acknowledged write never lands in a run nobody reads again.

/** The error of a failed call, or undefined when it succeeded. */
function errorOf(result: CallToolResult): ToolError | undefined {
  if (!result.isError) return undefined;
  return (JSON.parse((result.content[0] as { text: string }).text) as { error: ToolError }).error;
}

const BIG = 1_000_000;

describe.each(sharedStores())('runs across processes on one store ($name)', (store) => {
  // A and B: two processes serving thread T. Each test begins a run of its own with A's run_start.
  let a: Spawned;
  let b: Spawned;
  beforeAll(async () => {
    const db = store.fresh();
    const flags = ['--store', db, '--thread', 'T', '--max-iterations', '100000', '--keep-checkpoints', '1000'];
    [a, b] = await Promise.all([spawnAgent(flags), spawnAgent(flags)]);
  });
  afterAll(async () => {
    await Promise.all([a, b].filter(Boolean).map((p) => p.close()));
  });

  it("after another process's run_start, a process's next writes go to the new run, and the new run reads them", async () => {
    const { run: old } = await a.ok('run_start', {});
    await b.ok('scratchpad_write', { kind: 'observation', value: 'in the old run' });
    expect((await b.ok('whoami')).run).toBe(old);
    const { run } = await a.ok('run_start', {});
    const spent = (await a.ok('budget_status')).budgets[0].current;

    await b.ok('scratchpad_write', { kind: 'observation', value: 'in the new run' });
    expect((await b.ok('final_answer_set', { content: 'from B' })).answer).toMatchObject({ content: 'from B', run });
    expect(await b.ok('agent_state_set', { state: 'running' })).toMatchObject({ run, state: 'running', previous: 'loading' });
    expect(await b.ok('budget_step', {})).toMatchObject({ current: spent + 1 });

    expect((await a.ok('scratchpad_read', {})).observations).toEqual(['in the new run']);
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toMatchObject({ isSet: true, answer: { content: 'from B', run } });
    expect(await a.ok('agent_state_get', {})).toMatchObject({ run, state: 'running' });
    expect((await a.ok('budget_status')).budgets[0].current).toBe(spent + 1);
    expect((await b.ok('whoami')).run).toBe(run);
  });

  /** B's calls in a race: each write's tool, its unique value, and what it answered. */
  type Call = { tool: string; value: string; result: CallToolResult };
  /** What A read of one run once it had ended (or, for the last run, once B had stopped). */
  type RunRead = {
    run: string;
    notes?: string[];
    plans?: string[];
    keys?: string[];
    answer?: { content: string; run: string };
    /** A's own final_answer_set in the run */
    mine?: CallToolResult;
  };

  /**
   * B writes from several calls at once, taking `writes` in turn, each with a value of its own. A, round after round,
   * answers (with `answer`), ends the run with run_end (a finished run no longer changes), reads what the run holds
   * with `read`, and begins the next run. Before each of these steps A lets B start a few more writes, which race
   * that step; so B is writing whenever A ends or replaces a run, and no more than a few writes contend with each of
   * A's transactions (run_end's checkpoint reads the whole run: an optimistic store would retry it for as long as B
   * went on writing unchecked). Returns B's calls and A's reads of every run, the last one read after B stopped.
   */
  async function race(
    writes: Array<(value: string) => [string, Record<string, unknown>]>,
    read: () => Promise<Omit<RunRead, 'run'>>,
    answer: boolean,
    /** how many runs A ends and replaces, and how many writes B may start before each of A's steps */
    { ROUNDS, EACH }: { ROUNDS: number; EACH: number },
  ): Promise<{ calls: Call[]; runs: RunRead[] }> {
    const STREAMS = 4;
    await a.ok('run_start', {});
    const calls: Call[] = [];
    let stopped = false;
    let allowed = 0;
    let started = 0;
    let waiting: Array<() => void> = [];
    const wakeAll = (): void => {
      for (const resume of waiting) resume();
      waiting = [];
    };
    const stream = async (s: number): Promise<void> => {
      for (let i = 0; !stopped; ) {
        if (allowed === 0) {
          await new Promise<void>((resume) => waiting.push(resume));
          continue;
        }
        allowed--;
        started++;
        const value = `b${s}-${i}`;
        const [tool, args] = writes[(i + s) % writes.length](value);
        i++;
        calls.push({ tool, value, result: await b.raw(tool, args) });
        wakeAll();
      }
    };
    /** Lets B start `n` more writes; resolves once B has answered `settled` calls in all. */
    const letB = async (n: number, settled = 0): Promise<void> => {
      allowed += n;
      wakeAll();
      while (calls.length < settled) await new Promise<void>((resume) => waiting.push(resume));
    };
    const runs: RunRead[] = [];
    const streams = Array.from({ length: STREAMS }, (_, s) => stream(s));
    try {
      for (let round = 0; round < ROUNDS; round++) {
        // B writes in the new run (half of these answered first), then races A's answer, run_end and run_start
        await letB(EACH, calls.length + EACH / 2);
        await letB(EACH);
        const mine = answer ? await a.raw('final_answer_set', { content: `a-${round}` }) : undefined;
        await letB(EACH);
        const { run } = await a.ok('run_end', { status: 'finished' });
        runs.push({ run, ...(await read()), ...(mine ? { mine } : {}) });
        await letB(EACH);
        await a.ok('run_start', {});
      }
      await letB(0, started + allowed); // the last run: every write B was let start, answered
    } finally {
      stopped = true;
      wakeAll();
      await Promise.all(streams);
    }
    runs.push({ run: (await a.ok('whoami')).run, ...(await read()) });
    expect(new Set(runs.map((r) => r.run)).size).toBe(ROUNDS + 1);
    return { calls, runs };
  }

  /** Where each value of `pick` is found: the runs whose read holds it. */
  function found(runs: RunRead[], pick: (r: RunRead) => string[] | undefined): Map<string, string[]> {
    const where = new Map<string, string[]>();
    for (const r of runs) for (const value of pick(r) ?? []) where.set(value, [...(where.get(value) ?? []), r.run]);
    return where;
  }

  /**
   * B's writes of `tool` that were acknowledged but are not in exactly one run (`lost`), and those refused with another
   * code than RUN_FINISHED or found in a run all the same (`refusedButFound`).
   */
  function misplaced(calls: Call[], tool: string, where: Map<string, string[]>): { lost: string[]; refusedButFound: string[] } {
    const mine = calls.filter((c) => c.tool === tool);
    return {
      lost: mine.filter((c) => !c.result.isError && where.get(c.value)?.length !== 1).map((c) => c.value),
      refusedButFound: mine
        .filter((c) => c.result.isError && (errorOf(c.result)?.code !== 'RUN_FINISHED' || where.has(c.value)))
        .map((c) => `${c.value}: ${errorOf(c.result)?.code} ${where.get(c.value) ?? ''}`),
    };
  }

  it('notes and run plans racing run_end and run_start in another process: each acknowledged one is in exactly one run', async () => {
    const { calls, runs } = await race(
      [
        (value) => ['scratchpad_write', { kind: 'observation', value }],
        (value) => ['plan_create', { title: value, steps: ['x'], scope: 'run' }],
      ],
      async () => {
        const { observations } = await a.ok('scratchpad_read', { maxBytes: BIG });
        const listed = await a.ok('plan_list', { scope: 'run', limit: 100 });
        expect(listed.nextCursor).toBeUndefined();
        return { notes: observations, plans: listed.plans.map((p: { title: string }) => p.title) };
      },
      false,
      { ROUNDS: 10, EACH: 6 },
    );
    const notes = found(runs, (r) => r.notes);
    const plans = found(runs, (r) => r.plans);
    // a plan acknowledged as made in run R is listed in run R
    const planElsewhere = calls
      .filter((c) => c.tool === 'plan_create' && !c.result.isError)
      .filter((c) => `run:T:${plans.get(c.value)?.[0]}` !== (c.result.structuredContent as { scope: string }).scope)
      .map((c) => c.value);
    const acked = (tool: string) => calls.filter((c) => c.tool === tool && !c.result.isError).length;
    expect({
      notes: misplaced(calls, 'scratchpad_write', notes),
      plans: misplaced(calls, 'plan_create', plans),
      planElsewhere,
      found: [notes.size, plans.size],
    }).toEqual({
      notes: { lost: [], refusedButFound: [] },
      plans: { lost: [], refusedButFound: [] },
      planElsewhere: [],
      found: [acked('scratchpad_write'), acked('plan_create')],
    });
  });

  // The calls of one connection share its session, and one call's look at the thread can move it to the new run while
  // another call of the same connection is between its own look at the run and its transaction: each write checks,
  // inside its transaction, the run it writes to, so B's acknowledged state, answer or run key is in the run it was
  // given to, and the current run's lifecycle and answer are never overwritten with an old run's.
  it('lifecycle, final answers and run keys racing run_end and run_start in another process land in the run they were given to', async () => {
    const { calls, runs } = await race(
      [
        (value) => ['agent_state_set', { state: 'running', reason: value }],
        (value) => ['final_answer_set', { content: value }],
        (value) => ['state_set', { key: value, scope: 'run', value: 1 }],
      ],
      async () => {
        const { answer } = await a.ok('final_answer_get', { waitMs: 0 });
        const listed = await a.ok('state_list', { scope: 'run', limit: 1000 });
        expect(listed.nextCursor).toBeUndefined();
        return { answer, keys: listed.keys.map((k: { key: string }) => k.key) };
      },
      true,
      { ROUNDS: 15, EACH: 8 },
    );
    const byRun = new Map(runs.map((r) => [r.run, r]));
    // lifecycle: a run goes from loading to running once
    const started = new Map<string, string[]>();
    const badState: string[] = [];
    for (const c of calls.filter((x) => x.tool === 'agent_state_set')) {
      const error = errorOf(c.result);
      if (error !== undefined) {
        if (!['INVALID_TRANSITION', 'RUN_FINISHED'].includes(error.code)) badState.push(`${c.value}: ${error.code}`);
        continue;
      }
      const { run, previous } = c.result.structuredContent as { run: string; previous: string };
      if (!byRun.has(run) || previous !== 'loading') badState.push(`${c.value}: ${previous} in ${run}`);
      started.set(run, [...(started.get(run) ?? []), c.value]);
    }
    const startedTwice = [...started].filter(([, values]) => values.length > 1).map(([run, values]) => `${run}: ${values}`);
    // final answers: each acknowledged one is the answer its run ended with, a run answers once, a refusal names the answer
    type Answer = { content: string; run: string };
    const given = new Map<string, string[]>();
    const badAnswer: string[] = [];
    const answers = [...calls.filter((c) => c.tool === 'final_answer_set').map((c) => c.result), ...runs.flatMap((r) => r.mine ?? [])];
    for (const result of answers) {
      const error = errorOf(result);
      if (error !== undefined && error.code !== 'MULTIPLE_FINAL_ANSWERS') {
        if (error.code !== 'RUN_FINISHED') badAnswer.push(error.code);
        continue;
      }
      const said = (error ? (error.details as { answer: Answer }) : (result.structuredContent as { answer: Answer })).answer;
      const ended = byRun.get(said.run)?.answer;
      if (ended?.content !== said.content)
        badAnswer.push(`${error ? 'refused naming' : 'acknowledged'} ${said.content} in ${said.run}, which has ${ended?.content}`);
      if (!error) given.set(said.run, [...(given.get(said.run) ?? []), said.content]);
    }
    const answeredTwice = [...given].filter(([, values]) => values.length > 1).map(([run, values]) => `${run}: ${values}`);
    const keys = found(runs, (r) => r.keys);
    expect({ badState, startedTwice, badAnswer, answeredTwice, keys: misplaced(calls, 'state_set', keys) }).toEqual({
      badState: [],
      startedTwice: [],
      badAnswer: [],
      answeredTwice: [],
      keys: { lost: [], refusedButFound: [] },
    });
  });

  it('a run another process ended is not reopened, and takes no second answer or other write', async () => {
    const { run } = await a.ok('run_start', {});
    await a.ok('agent_state_set', { state: 'running' });
    await a.ok('final_answer_set', { content: 'the answer' });
    await a.ok('run_end', { status: 'finished' });

    for (const state of ['running', 'paused', 'stopped'] as const) {
      const refused = await b.err('agent_state_set', { state });
      expect([state, refused.code, refused.details]).toEqual([state, 'INVALID_TRANSITION', expect.objectContaining({ from: 'finished' })]);
    }
    expect((await b.err('run_end', { status: 'error' })).code).toBe('INVALID_TRANSITION');
    for (const [tool, args] of [
      ['final_answer_set', { content: 'a second answer' }],
      ['scratchpad_write', { kind: 'observation', value: 'after the end' }],
      ['state_set', { key: 'k', scope: 'run', value: 1 }],
      ['budget_step', {}],
      ['plan_create', { title: 'late plan', steps: ['x'], scope: 'run' }],
    ] as const) {
      expect([tool, (await b.err(tool, args)).code]).toEqual([tool, 'RUN_FINISHED']);
    }

    expect(await a.ok('agent_state_get', {})).toMatchObject({ run, state: 'finished' });
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toMatchObject({ isSet: true, answer: { content: 'the answer', run } });
    expect((await a.ok('scratchpad_read', {})).observations).toEqual([]);
    expect((await a.ok('plan_list', { scope: 'run' })).plans).toEqual([]);
    expect((await b.ok('whoami')).run).toBe(run);

    // a run ended without an answer does not take one afterwards either
    const { run: unanswered } = await a.ok('run_start', {});
    await a.ok('run_end', { status: 'finished' });
    expect((await b.err('final_answer_set', { content: 'too late' })).code).toBe('RUN_FINISHED');
    expect((await a.ok('final_answer_get', { waitMs: 0 })).isSet).toBe(false);
    expect((await a.ok('agent_state_get', {})).run).toBe(unanswered);
  });

  it('a run plan stops changing once another process begins a new run; the next run plan is made in the new run', async () => {
    const { run: old } = await a.ok('run_start', {});
    const made = await b.ok('plan_create', { title: 'run plan', steps: ['x', 'y'], scope: 'run' });
    expect(made.scope).toBe(`run:T:${old}`);
    const { planId } = made;
    expect((await b.ok('plan_claim', { planId, stepId: 's1' })).claimed).toBe(true);
    const { run } = await a.ok('run_start', {});

    // B's first call after A's run_start: the new run plan goes to the new run
    const next = await b.ok('plan_create', { title: 'next run plan', steps: ['z'], scope: 'run' });
    expect(next.scope).toBe(`run:T:${run}`);
    expect((await a.ok('plan_list', { scope: 'run' })).plans.map((p: { planId: string }) => p.planId)).toEqual([next.planId]);

    // the replaced run's plan is not changed or deleted
    const { version } = (await b.ok('plan_get', { planId })).plan;
    for (const change of [{ title: 'renamed' }, { status: 'abandoned' }, { steps: ['only'], ifVersion: version }]) {
      const refused = await b.err('plan_update', { planId, ...change });
      expect([change, refused.code]).toEqual([change, 'RUN_FINISHED']);
    }
    expect((await b.err('plan_delete', { planId })).code).toBe('RUN_FINISHED');
    expect((await a.ok('plan_get', { planId })).plan).toMatchObject({ title: 'run plan', status: 'active', version });
    // ... while the worker holding one of its steps still reports it
    expect((await b.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).step).toMatchObject({ id: 's1', status: 'completed' });
    // and the new run's plan changes as usual
    await a.ok('plan_update', { planId: next.planId, title: 'renamed' });
  });

  it('checkpoint_restore of a checkpoint of the run another process ended: RUN_FINISHED, the answer and the end stay', async () => {
    const { run } = await a.ok('run_start', {});
    await a.ok('agent_state_set', { state: 'running' });
    const { checkpointId } = await b.ok('checkpoint_save', {});
    await a.ok('final_answer_set', { content: 'answered once' });
    await a.ok('run_end', { status: 'finished' });

    const refused = await b.err('checkpoint_restore', { checkpointId });
    expect(refused).toMatchObject({ code: 'RUN_FINISHED', details: { run } });
    expect(await a.ok('agent_state_get', {})).toMatchObject({ run, state: 'finished' });
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toMatchObject({ isSet: true, answer: { content: 'answered once', run } });
    expect((await b.err('final_answer_set', { content: 'a second answer' })).code).toBe('RUN_FINISHED');
    expect((await b.err('agent_state_set', { state: 'running' })).code).toBe('INVALID_TRANSITION');
  });

  it("checkpoint_restore from a later run back to an ended run's checkpoint keeps the answer that run gave", async () => {
    const { run } = await a.ok('run_start', {});
    await a.ok('agent_state_set', { state: 'running' });
    const { checkpointId } = await b.ok('checkpoint_save', {});
    await a.ok('final_answer_set', { content: 'answered once' });
    await a.ok('run_end', { status: 'finished' });
    await a.ok('run_start', {});

    expect(await b.ok('checkpoint_restore', { checkpointId })).toMatchObject({ checkpointId, run });
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toMatchObject({ isSet: true, answer: { content: 'answered once', run } });
    const second = await b.err('final_answer_set', { content: 'a second answer' });
    expect(second).toMatchObject({ code: 'MULTIPLE_FINAL_ANSWERS', details: { answer: { content: 'answered once', run } } });
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toMatchObject({ answer: { content: 'answered once', run } });
  });
});
