// The library from code: an orchestrator makes a plan, starts two worker processes, and waits for the final answer.
// Every party is plain code over `openBlackboard` (no model, no MCP): the orchestrator creates a plan and follows the
// board's change feed; each worker process waits for the other (watch), claims the next free step (atomically: no
// step is done twice), writes its result, completes the step and gives its final answer; the orchestrator waits for
// both answers and gives its own. Run after `npm install`: node examples/orchestrator.mjs
// (BLACKBOARD_STORE=URL to use your own store: sqlite://, postgres:// or redis://).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBlackboard, BlackboardError } from 'mcp-blackboard';

const [role, ...args] = process.argv.slice(2);
if (role === 'worker') await worker(...args);
else await orchestrator();

async function orchestrator() {
  // A store of your own stays; otherwise a temporary SQLite file is made and removed at the end.
  const dir = process.env.BLACKBOARD_STORE ? undefined : mkdtempSync(join(tmpdir(), 'bb-orchestrator-'));
  const store = process.env.BLACKBOARD_STORE ?? `sqlite://${join(dir, 'board.db')}`;
  const bb = await openBlackboard({ store, agent: 'orchestrator', thread: `orchestrator-${process.pid}` });
  try {
    const { thread } = await bb.whoami();
    const cities = ['Lisbon', 'Oslo', 'Quito', 'Hanoi'];
    const { planId } = await bb.plans.create({ title: 'Describe four cities', steps: cities.map((c) => `describe ${c}`), scope: 'global' });
    console.log(`orchestrator: created ${planId} with ${cities.length} steps`);

    // Follow the board while the workers run: every result as it is written, from the revision we are at now.
    const following = new AbortController();
    const { revision } = await bb.kv.changes();
    const progress = (async () => {
      try {
        for await (const change of bb.changes(
          { afterRevision: revision, scope: 'global', prefix: 'result/' },
          { signal: following.signal },
        )) {
          console.error(`orchestrator: saw ${change.key} (revision ${change.revision})`);
        }
      } catch (error) {
        if (error.name !== 'AbortError') throw error;
      }
    })();

    const workers = ['worker-1', 'worker-2'].map((name) =>
      spawn(process.execPath, [import.meta.filename, 'worker', store, name, thread, planId], { stdio: ['ignore', 'inherit', 'inherit'] }),
    );
    // Each worker's thread is delegated from ours, so we can wait for its final answer.
    const answers = await Promise.all(
      ['worker-1', 'worker-2'].map(async (name) => {
        const { isSet, answer } = await bb.finalAnswer.get({ thread: name, waitMs: 60_000 });
        if (!isSet) throw new Error(`${name} gave no answer in time`);
        return answer.content;
      }),
    );
    await Promise.all(workers.map((w) => (w.exitCode !== null ? undefined : new Promise((done) => w.on('exit', done)))));
    following.abort();
    await progress;

    const { plan } = await bb.plans.get({ planId });
    const { entries } = await bb.kv.snapshot({ scope: 'global', prefix: 'result/' });
    console.log(`orchestrator: plan ${plan.done === plan.total ? 'completed' : 'NOT completed'}, ${Object.keys(entries).length} results`);
    for (const a of answers) console.log(`orchestrator: worker said "${a}"`);
    const { answer } = await bb.finalAnswer.set({ content: cities.map((c) => entries[`result/${c}`]).join(' ') });
    console.log(`orchestrator: final answer: ${answer.content}`);
  } finally {
    await bb.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

async function worker(store, name, parentThread, planId) {
  const bb = await openBlackboard({ store, agent: name, thread: name, parentThread });
  try {
    // Start together: count in, then wait (without polling) until both workers have.
    let { value: ready, version } = await bb.kv.update({ key: `ready/${planId}`, op: 'increment', value: 1, scope: 'global' });
    while (ready < 2) ({ value: ready, version } = await bb.kv.watch({ key: `ready/${planId}`, scope: 'global', afterVersion: version }));
    const done = [];
    for (;;) {
      const claim = await bb.plans.claim({ planId });
      if (!claim.claimed) break; // all done, or the rest is taken by the other worker
      const city = claim.step.content.replace('describe ', '');
      await new Promise((resolve) => setTimeout(resolve, 200)); // the work
      // ifVersion 0: the result is written once; a second writer would get VERSION_CONFLICT.
      await bb.kv.set({ key: `result/${city}`, value: `${city} (by ${name}).`, scope: 'global', ifVersion: 0 });
      await bb.plans.update({ planId, stepUpdates: [{ id: claim.step.id, status: 'completed' }] });
      done.push(city);
    }
    await bb.finalAnswer.set({ content: `${name} described ${done.length ? done.join(', ') : 'nothing'}` });
    try {
      await bb.finalAnswer.set({ content: 'a second answer' });
    } catch (error) {
      if (!(error instanceof BlackboardError) || error.code !== 'MULTIPLE_FINAL_ANSWERS') throw error;
    }
  } finally {
    await bb.close();
  }
}
