import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { spawnAgent } from '../helpers.js';

// Shared work and shared limits across server processes on one SQLite file.
type Spawned = Awaited<ReturnType<typeof spawnAgent>>;
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
});
async function start(db: string, ...flags: string[]): Promise<Spawned> {
  const a = await spawnAgent(['--store', `sqlite://${db}`, ...flags]);
  running.push(a);
  return a;
}

describe('plans across processes', () => {
  it('three worker processes claiming one plan never take the same step and never start a blocked one', async () => {
    const db = join(tempDir(), 'claims.db');
    const planner = await start(db, '--agent', 'planner');
    // s1..s4 free; s5 after s1,s2; s6 after s3; s7 after s5,s6; s8 after s7; s9, s10 free
    const steps = [
      'a',
      'b',
      'c',
      'd',
      { content: 'e', blockedBy: ['s1', 's2'] },
      { content: 'f', blockedBy: ['s3'] },
      { content: 'g', blockedBy: ['s5', 's6'] },
      { content: 'h', blockedBy: ['s7'] },
      'i',
      'j',
    ];
    const { planId } = await planner.ok('plan_create', { title: 'shared', steps, scope: 'global' });
    const { plan } = await planner.ok('plan_get', { planId, detail: 'full' });
    const blockers = Object.fromEntries(plan.steps.map((s: { id: string; blockedBy?: string[] }) => [s.id, s.blockedBy ?? []]));
    const workers = await Promise.all(['w1', 'w2', 'w3'].map((name) => start(db, '--agent', name)));
    await Promise.all(
      workers.map(async (worker, i) => {
        for (let round = 0; round < 200; round++) {
          const claim = await worker.ok('plan_claim', { planId });
          if (!claim.claimed) {
            if (claim.reason === 'all_done') return;
            expect(['all_blocked', 'all_taken']).toContain(claim.reason);
            // wait for the plan to change rather than spin
            const { version } = (await worker.ok('plan_get', { planId })).plan;
            await worker.ok('watch', { key: planId, scope: 'plan', afterVersion: version, waitMs: 2_000 });
            continue;
          }
          // Logged after the claim; a step's "done" is logged before it is marked completed. So a blocker's "done"
          // precedes every legitimate claim of a step it blocks.
          await worker.ok('state_update', { key: 'log', op: 'append', value: `claim:${claim.step.id}:w${i + 1}` });
          await worker.ok('state_update', { key: 'log', op: 'append', value: `done:${claim.step.id}` });
          await worker.ok('plan_update', { planId, stepUpdates: [{ id: claim.step.id, status: 'completed' }] });
        }
        throw new Error('worker did not finish');
      }),
    );
    const log: string[] = (await planner.ok('state_get', { key: 'log' })).value;
    const claims = log.filter((e) => e.startsWith('claim:')).map((e) => e.split(':')[1]);
    expect([...claims].sort()).toEqual(plan.steps.map((s: { id: string }) => s.id).sort());
    for (const [index, entry] of log.entries()) {
      if (!entry.startsWith('claim:')) continue;
      const step = entry.split(':')[1];
      for (const blocker of blockers[step])
        expect(log.indexOf(`done:${blocker}`), `${blocker} done before ${step} claimed`).toBeLessThan(index);
    }
    const final = (await planner.ok('plan_get', { planId })).plan;
    expect(final.steps.every((s: { status: string }) => s.status === 'completed')).toBe(true);
    const owners = new Set(final.steps.map((s: { owner: string }) => s.owner));
    expect([...owners].every((o) => ['w1', 'w2', 'w3'].includes(o as string))).toBe(true);
  });
});

describe('budgets across processes', () => {
  it('a child process started with --budget cost=100 cannot overspend a parent started with cost=10', async () => {
    const db = join(tempDir(), 'budgets.db');
    const parent = await start(db, '--thread', 'parent', '--budget', 'cost=10');
    const child = await start(db, '--thread', 'child', '--parent-thread', 'parent', '--budget', 'cost=100');
    expect(await child.ok('budget_step', { name: 'cost', amount: 7 })).toMatchObject({ current: 7, max: 100 });
    expect(await parent.ok('budget_step', { name: 'cost', amount: 2 })).toMatchObject({ current: 9, max: 10 });
    const refused = await child.err('budget_step', { name: 'cost', amount: 2 });
    expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { thread: 'parent', current: 9, max: 10 } });
    expect(await child.ok('budget_step', { name: 'cost', amount: 1 })).toMatchObject({ current: 8 });
    // a later server with larger flags on the parent's thread keeps the stored max
    const restarted = await start(db, '--thread', 'parent', '--budget', 'cost=1000');
    expect((await restarted.ok('budget_status')).budgets).toEqual([{ name: 'cost', current: 10, max: 10, remaining: 0, reached: true }]);
  });
});
