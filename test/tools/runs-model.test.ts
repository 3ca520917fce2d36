// A model-based test of budgets, the run lifecycle and the final answer across processes: seeded random spends (alone
// and in concurrent bursts), admin changes of maxes, lifecycle moves, final answers (some set at once by two
// processes), run starts and ends, checkpoint saves and restores, and idempotent retries (from the other process too),
// by three clients — two serving thread T (one in this process, one a child process started with larger flags) and
// one serving T's child thread C — on every shareable backend. After every call: the reply says exactly what the model
// says happened (a burst's replies are those of some order of its calls), the stored totals are the model's, no
// budget ever passes its max, and a refusal changes nothing.
import { describe, expect, it } from 'vitest';
import { TRANSITIONS, STATES, type AgentState } from '../../src/services/lifecycle.js';
import { openBackend } from '../../src/store/open.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, spawnAgent, type Agent, type Spawned, type ToolError } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const connect = agentsClosedAfterEach();
const closing = closedAfterEachTest();

// `BLACKBOARD_RUNS_MODEL=full`: 5 seeds of 300 steps per backend; by default 2 of 120
const FULL = process.env.BLACKBOARD_RUNS_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [1, 2];
const OPS = FULL ? 300 : 120;

// biome-ignore lint/suspicious/noExplicitAny: replies read field by field
type Ok = Record<string, any>;
type Reply = { ok: Ok } | { err: ToolError };

async function call(agent: Agent, name: string, args: Record<string, unknown> = {}): Promise<Reply> {
  const result = await agent.raw(name, args);
  const text = (result.content[0] as { text: string }).text;
  if (result.isError) return { err: (JSON.parse(text) as { error: ToolError }).error };
  expect(JSON.parse(text)).toEqual(result.structuredContent);
  return { ok: result.structuredContent as Record<string, unknown> };
}

const NAMES = ['iterations', 'cost'] as const;
type Budgets = Record<string, Record<string, { current: number; max: number }>>;
type Answer = { content: string; run: string };
type Saved = { run: string; state: AgentState; ended: boolean; answer?: Answer };
/** A spend: who (the thread it is charged in), and its arguments. */
type Spend = { who: 'A' | 'B' | 'D'; name: string; amount: number; key?: string };

/** The budget view a step or a status reply gives. */
const view = (name: string, current: number, max: number) => ({
  name,
  current,
  max,
  remaining: Math.max(0, max - current),
  reached: current >= max,
});

describe.each(sharedStores().map((s) => [s.name, s] as const))('budgets, lifecycle and answers against a model on %s', (_name, shared) => {
  it.each(SEEDS)('seed %i: every reply says what happened, and nothing passes a limit', async (seed) => {
    const r = rng(seed);
    const int = (n: number) => Math.floor(r() * n);
    const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
    const chance = (p: number) => r() < p;
    const url = shared.fresh();
    const log: string[] = [];
    const note = (line: string) => {
      log.push(line);
      if (log.length > 40) log.shift();
    };

    const inProcess = async (thread: string, budgets: Record<string, number>, maxIterations: number, parentThread?: string) => {
      const store = new VersionedStore(await openBackend(url), { sweepIntervalMs: 0 });
      closing.push(() => store.close());
      return connect({
        store,
        config: { agent: 'a', thread, budgets, maxIterations, allowBudgetAdmin: true, keepCheckpoints: 1000 },
        identity: parentThread ? { thread, parentThread } : undefined,
      });
    };
    // A fixes T's maxes (the first to serve it); B, a child process with larger flags, is judged by them
    const A = await inProcess('T', { cost: 12 }, 8);
    const B: Spawned = await spawnAgent([
      ...['--store', url, '--agent', 'a', '--thread', 'T', '--budget', 'cost=1000', '--max-iterations', '1000'],
      ...['--allow-budget-admin', '--keep-checkpoints', '1000'],
    ]);
    closing.push(() => B.close());
    // D serves C, a child of T: its steps charge C and T
    const D = await inProcess('C', { cost: 7 }, 1000, 'T');
    const agents = { A, B, D } as const;
    const chainOf = (who: Spend['who']) => (who === 'D' ? ['C', 'T'] : ['T']);

    // the model
    const budgets: Budgets = {
      T: { iterations: { current: 0, max: 8 }, cost: { current: 0, max: 12 } },
      C: { iterations: { current: 0, max: 1000 }, cost: { current: 0, max: 7 } },
    };
    let run = (await A.ok('whoami')).run as string;
    expect((await B.ok('whoami')).run).toBe(run);
    let state: AgentState = 'loading';
    let ended = false;
    let answer: Answer | undefined;
    const saved = new Map<string, Saved>();
    /** the last spend with an idempotency key, and its reply, while a retry would replay it */
    let last: { spend: Spend; reply: Reply } | undefined;

    const check = async (what: string) => {
      const T = pick([A, B]);
      const me = await T.ok('whoami');
      expect({ run: me.run, state: me.state }, `${what}: T's run and state`).toEqual({ run, state });
      const asBudgets = (b: Budgets[string]) =>
        NAMES.map((n) => view(n, b[n].current, b[n].max)).sort((x, y) => (x.name < y.name ? -1 : 1));
      expect(me.budgets, `${what}: T's budgets`).toEqual(asBudgets(budgets.T));
      expect((await D.ok('budget_status')).budgets, `${what}: C's budgets`).toEqual(asBudgets(budgets.C));
      const got = await T.ok('final_answer_get', { waitMs: 0 });
      const mine = answer?.run === run ? answer : undefined;
      expect(got.isSet, `${what}: T's answer set`).toBe(mine !== undefined);
      if (mine) expect({ content: got.answer.content, run: got.answer.run }).toEqual(mine);
      // another thread reads T's latest answer, whatever its run
      const seen = await D.ok('final_answer_get', { thread: 'T', waitMs: 0 });
      expect(seen.isSet, `${what}: T's answer as C sees it`).toBe(answer !== undefined);
      if (answer) expect({ content: seen.answer.content, run: seen.answer.run }).toEqual(answer);
    };

    /** What a spend does to `b` (changed in place) and the reply it gets, in the model. */
    const predictSpend = (b: Budgets, s: Spend): Reply => {
      if (s.who !== 'D' && state === 'finished') return { err: { code: 'RUN_FINISHED', message: '' } };
      const chain = chainOf(s.who);
      if (b[chain[0]][s.name] === undefined) return { err: { code: 'NOT_FOUND', message: '' } };
      for (const thread of chain) {
        const { current, max } = b[thread][s.name];
        if (current + s.amount > max) {
          return {
            err: {
              code: 'LIMIT_REACHED',
              message: '',
              details: { name: s.name, thread, current, max, requested: s.amount, remaining: Math.max(0, max - current) },
            },
          };
        }
      }
      for (const thread of chain) b[thread][s.name].current += s.amount;
      const own = b[chain[0]][s.name];
      return { ok: view(s.name, own.current, own.max) };
    };
    const same = (got: Reply, want: Reply): boolean => {
      if ('ok' in want) return 'ok' in got && JSON.stringify(got.ok) === JSON.stringify(want.ok);
      if (!('err' in got) || got.err.code !== want.err.code) return false;
      return want.err.details === undefined || JSON.stringify(got.err.details) === JSON.stringify(want.err.details);
    };

    const newSpend = (who: Spend['who']): Spend => {
      const name = chance(0.05) ? 'nope' : pick(NAMES);
      const amount = name === 'iterations' ? 1 + int(2) : 1 + int(4);
      return { who, name, amount, ...(chance(0.3) ? { key: `k${log.length}-${int(1e6)}` } : {}) };
    };
    const spendArgs = (s: Spend) => ({
      ...(s.name !== 'iterations' || chance(0.5) ? { name: s.name } : {}),
      amount: s.amount,
      ...(s.key ? { idempotencyKey: s.key } : {}),
    });

    /** Spends at once from several clients: the replies must be those of one order of the spends. */
    const burst = async (spends: Spend[]) => {
      note(`burst ${spends.map((s) => `${s.who}:${s.name}+${s.amount}`).join(' ')}`);
      const replies = await Promise.all(spends.map((s) => call(agents[s.who], 'budget_step', spendArgs(s))));
      const orders = permutations(spends.map((_, i) => i));
      let found: Budgets | undefined;
      for (const order of orders) {
        const b = structuredClone(budgets);
        if (order.every((i) => same(replies[i], predictSpend(b, spends[i])))) {
          found = b;
          break;
        }
      }
      expect(
        found,
        `the replies ${JSON.stringify(replies)} are those of some order of ${JSON.stringify(spends)} from ${JSON.stringify(budgets)}`,
      ).toBeDefined();
      // a spend that went through never takes a budget past its max
      for (const [thread, names] of Object.entries(found!))
        for (const [name, b] of Object.entries(names))
          if (b.current > budgets[thread][name].current) expect(b.current, `${thread}/${name}`).toBeLessThanOrEqual(b.max);
      Object.assign(budgets, found);
      for (const [i, reply] of replies.entries()) {
        if ('err' in reply && reply.err.code === 'LIMIT_REACHED') expect(reply.err.message).toContain(`asked for ${spends[i].amount}`);
      }
      const keyed = spends.findIndex((s) => s.key !== undefined);
      last = keyed >= 0 && 'ok' in replies[keyed] ? { spend: spends[keyed], reply: replies[keyed] } : last;
    };

    const adjust = async () => {
      const who = pick([A, B]);
      const thread = pick(['T', 'C']);
      const name = pick(NAMES);
      const args = { name, ...(thread === 'T' && chance(0.5) ? {} : { thread }) };
      const b = budgets[thread][name];
      if (chance(0.4)) {
        const max = b.current + int(6) - 1;
        note(`configure ${thread}/${name} max ${max}`);
        const got = await call(who, 'budget_configure', { ...args, max: Math.max(0, max) });
        b.max = Math.max(0, max);
        expect(got).toEqual({ ok: view(name, b.current, b.max) });
      } else {
        const amount = 1 + int(10);
        note(`increase ${thread}/${name} by ${amount}`);
        const got = await call(who, 'budget_increase', { ...args, amount });
        b.max += amount;
        expect(got).toEqual({ ok: view(name, b.current, b.max) });
      }
    };

    const move = async (target?: AgentState) => {
      const to = target ?? (TRANSITIONS[state].length > 0 && chance(0.6) ? pick(TRANSITIONS[state]) : pick(STATES));
      note(`state ${state} -> ${to}`);
      const got = await call(pick([A, B]), 'agent_state_set', { state: to });
      if (TRANSITIONS[state].includes(to)) {
        expect(got, `${state} -> ${to}`).toMatchObject({
          ok: { state: to, previous: state, run, thread: 'T', allowed: [...TRANSITIONS[to]] },
        });
        state = to;
        ended = false;
      } else {
        expect(got, `${state} -> ${to}`).toMatchObject({
          err: { code: 'INVALID_TRANSITION', details: { from: state, to, allowed: [...TRANSITIONS[state]] } },
        });
      }
    };

    const answerOnce = async () => {
      const who = chance(0.5) ? [A, B] : [pick([A, B])];
      const contents = who.map((_, i) => `answer ${log.length}.${i}`);
      note(`final_answer_set x${who.length}`);
      const replies = await Promise.all(who.map((w, i) => call(w, 'final_answer_set', { content: contents[i] })));
      if (state === 'finished') {
        for (const got of replies) expect(got).toMatchObject({ err: { code: 'RUN_FINISHED' } });
        return;
      }
      const first = answer?.run === run ? answer : undefined;
      const won = replies.findIndex((got) => 'ok' in got);
      if (first) expect(won, 'a run answers once').toBe(-1);
      else {
        expect(won).toBeGreaterThanOrEqual(0);
        expect(
          replies.filter((got) => 'ok' in got),
          'exactly one answer wins',
        ).toHaveLength(1);
        answer = { content: contents[won], run };
        expect((replies[won] as { ok: Ok }).ok.answer).toMatchObject(answer);
      }
      for (const got of replies) {
        if ('ok' in got) continue;
        expect(got).toMatchObject({ err: { code: 'MULTIPLE_FINAL_ANSWERS', details: { answer: { content: answer!.content, run } } } });
      }
    };

    const start = async () => {
      note('run_start');
      const got = await call(pick([A, B]), 'run_start', {});
      expect(got).toMatchObject({ ok: { thread: 'T', resumed: true } });
      run = (got as { ok: Ok }).ok.run;
      state = 'loading';
      ended = false;
      last = undefined;
    };

    const end = async () => {
      const status = pick(['finished', 'error', 'stopped'] as const);
      note(`run_end ${status} from ${state}${ended ? ' (ended)' : ''}`);
      const got = await call(pick([A, B]), 'run_end', { status });
      const from = state === 'loading' ? 'running' : state;
      if (ended || (from !== status && !TRANSITIONS[from].includes(status))) {
        expect(got).toMatchObject({ err: { code: 'INVALID_TRANSITION' } });
        return;
      }
      expect(got).toMatchObject({ ok: { thread: 'T', run, state: status } });
      state = status;
      ended = true;
      const id = (got as { ok: Ok }).ok.checkpointId as string;
      saved.set(id, { run, state, ended, ...(answer ? { answer } : {}) });
    };

    const save = async (): Promise<void> => {
      const got = await call(pick([A, B]), 'checkpoint_save', {});
      expect(got).toMatchObject({ ok: { thread: 'T', run } });
      const id = (got as { ok: Ok }).ok.checkpointId as string;
      note(`save ${id} in ${state}`);
      saved.set(id, { run, state, ended, ...(answer ? { answer } : {}) });
    };

    const restore = async (latest = false) => {
      // often one of this run's own checkpoints: the way back within a run
      const own = [...saved].filter(([, at]) => at.run === run);
      const [id, at] = latest ? own.at(-1)! : pick(own.length > 0 && chance(0.7) ? own : [...saved]);
      note(`restore ${id} (run ${at.run} ${at.state}${at.ended ? ' ended' : ''}) from ${state}${ended ? ' (ended)' : ''}`);
      const got = await call(pick([A, B]), 'checkpoint_restore', { checkpointId: id });
      // a run that ended (run_end) or finished is not reopened while it is the thread's run
      if (at.run === run && (ended || state === 'finished')) {
        expect(got, 'an ended or finished run is not reopened').toMatchObject({ err: { code: 'RUN_FINISHED' } });
        return;
      }
      expect(got).toMatchObject({ ok: { checkpointId: id, thread: 'T', run: at.run, budgetsKept: true } });
      const answerStays = answer !== undefined && !(at.answer?.run === at.run && answer.run !== at.run);
      if (!answerStays) answer = at.answer;
      run = at.run;
      state = at.state;
      ended = at.ended;
      last = undefined;
    };

    const retry = async () => {
      if (!last) return;
      const { spend, reply } = last;
      const who = spend.who === 'D' ? 'D' : pick(['A', 'B'] as const);
      note(`retry ${spend.key} by ${who}`);
      // the retry of a spend replays its reply and spends nothing more, from either process serving the thread
      expect(await call(agents[who], 'budget_step', spendArgs(spend))).toEqual(reply);
    };

    try {
      await check('at the start');
      for (let step = 0; step < OPS; step++) {
        // a run that can go nowhere is mostly left for a new one
        const x = TRANSITIONS[state].length === 0 && chance(0.15) ? 72 : int(100);
        if (x < 18) {
          const s = newSpend(pick(['A', 'B', 'D'] as const));
          note(`spend ${s.who}:${s.name}+${s.amount}`);
          await burst([s]);
        } else if (x < 36) {
          await burst(Array.from({ length: 2 + int(3) }, () => newSpend(pick(['A', 'B', 'D'] as const))));
        } else if (x < 48) await adjust();
        else if (x < 62) await move();
        else if (x < 70) await answerOnce();
        else if (x < 75) await start();
        else if (x < 80) await end();
        else if (x < 86) await save();
        else if (x < 92 && saved.size > 0) await restore();
        else if (x < 95 && (state === 'running' || TRANSITIONS[state].includes('running'))) {
          if (state !== 'running') await move('running');
          await save();
          await check('saved before finishing');
          await move('finished');
          await check('finished');
          await restore(true);
        } else await retry();
        await check(log.at(-1) ?? '');
      }
    } catch (error) {
      console.error(`runs model: seed ${seed} failed on ${shared.name}; the last steps:\n  ${log.join('\n  ')}`);
      throw error;
    }
  });
});

function permutations(xs: number[]): number[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}
