import { afterEach, describe, expect, it } from 'vitest';
import { sleep, spawnAgent } from '../helpers.js';
import { sharedStores } from '../stores.js';

// The toolbox keeps the store's guarantees across processes: where only one may win, exactly one does.
type Spawned = Awaited<ReturnType<typeof spawnAgent>>;
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
});
async function start(url: string, ...flags: string[]): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, ...flags]);
  running.push(a);
  return a;
}

describe.each(sharedStores())('toolbox across processes on one store ($name)', (store) => {
  it('two processes racing final_answer_set on one run: exactly one wins', async () => {
    const db = store.fresh();
    // Two processes serving the same thread share its current run.
    const [first, second] = await Promise.all([start(db, '--thread', 'T'), start(db, '--thread', 'T')]);
    expect((await first.ok('whoami')).run).toBe((await second.ok('whoami')).run);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        [first, second].flatMap((p, i) => Array.from({ length: 4 }, (_, j) => p.raw('final_answer_set', { content: `p${i}-${j}` }))),
      );
      const winners = results.filter((r) => !r.isError);
      expect(winners).toHaveLength(1);
      const first_ = (winners[0].structuredContent as { answer: { content: string } }).answer;
      for (const loser of results.filter((r) => r.isError)) {
        const error = JSON.parse((loser.content[0] as { text: string }).text).error;
        expect(error.code).toBe('MULTIPLE_FINAL_ANSWERS');
        expect(error.details.answer.content).toBe(first_.content);
      }
      // a new run (started by either process) takes a new answer, and both processes follow it
      await (round % 2 ? first : second).ok('run_start', {});
    }
  });

  it("a parent process waits on a child process's final answer", async () => {
    const db = store.fresh();
    const [parent, child] = await Promise.all([
      start(db, '--thread', 'parent'),
      start(db, '--thread', 'child', '--parent-thread', 'parent'),
    ]);
    const started = Date.now();
    const waiting = parent.ok('final_answer_get', { thread: 'child', waitMs: 20_000 });
    await sleep(300);
    await child.ok('final_answer_set', { content: 'from the child process' });
    expect(await waiting).toMatchObject({ isSet: true, answer: { content: 'from the child process', thread: 'child' } });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('K processes stepping one budget never pass the max; successes equal the final count', async () => {
    const db = store.fresh();
    const MAX = 37;
    const agents = await Promise.all(Array.from({ length: 4 }, () => start(db, '--thread', 'shared', '--max-iterations', String(MAX))));
    const results = await Promise.all(agents.flatMap((a) => Array.from({ length: 15 }, () => a.raw('budget_step', {}))));
    const ok = results.filter((r) => !r.isError);
    expect(ok).toHaveLength(MAX);
    for (const r of results.filter((x) => x.isError)) {
      expect(JSON.parse((r.content[0] as { text: string }).text).error.code).toBe('LIMIT_REACHED');
    }
    expect((await agents[0].ok('budget_status')).budgets[0]).toMatchObject({ current: MAX, reached: true });
  });

  it("a child process's steps show in the parent's budget_status", async () => {
    const db = store.fresh();
    const [parent, child] = await Promise.all([
      start(db, '--thread', 'boss', '--max-iterations', '10'),
      start(db, '--thread', 'worker', '--parent-thread', 'boss', '--max-iterations', '10'),
    ]);
    await Promise.all(Array.from({ length: 4 }, () => child.ok('budget_step', {})));
    await parent.ok('budget_step', {});
    expect((await parent.ok('budget_status')).budgets[0]).toMatchObject({ name: 'iterations', current: 5, remaining: 5 });
    expect((await child.ok('budget_status')).budgets[0]).toMatchObject({ current: 4 });
  });
});
