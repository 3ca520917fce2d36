import { afterEach, describe, expect, it } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { sharedStores } from '../stores.js';

// Claims across server processes on every shareable backend: contended claims, a paused holder, a killed holder.
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close().catch(() => {})));
  running = [];
});
async function start(store: string, agent: string, ...flags: string[]): Promise<Spawned> {
  const a = await spawnAgent(['--store', store, '--agent', agent, '--thread', `t-${agent}`, ...flags]);
  running.push(a);
  return a;
}

describe.each(sharedStores())('claims across processes on $name', ({ fresh }) => {
  it('8 worker processes × 60 contended claims on one plan: every step completed exactly once, never two holders', async () => {
    const store = fresh();
    // every process starts at once (the closer finishes what the workers leave, after them)
    const [planner, last, ...workers] = await Promise.all(
      ['planner', 'closer', ...Array.from({ length: 8 }, (_, i) => `w${i}`)].map((name) => start(store, name)),
    );
    const { planId, stepIds } = await planner.ok('plan_create', {
      title: 'contended',
      steps: Array.from({ length: 100 }, (_, i) => `step ${i}`),
    });
    type Grant = { step: string; fence: number; worker: number };
    const grants: Grant[] = [];
    const completed: Array<{ step: string; worker: number }> = [];
    await Promise.all(
      workers.map(async (worker, w) => {
        // Four claims in five are given back, so each step is claimed by several workers in turn before one finishes it.
        for (let round = 0; round < 60; ) {
          const claim = await worker.ok('plan_claim', { planId });
          if (!claim.claimed) {
            if (claim.reason === 'all_done') return;
            expect(claim.reason).toBe('all_taken'); // the last free steps are someone else's for a moment
            await sleep(20);
            continue;
          }
          round++;
          grants.push({ step: claim.step.id, fence: claim.claim.fence, worker: w });
          const status = round % 5 === 0 ? 'completed' : 'pending';
          const moved = await worker.ok('plan_step', { planId, stepId: claim.step.id, status, fence: claim.claim.fence });
          expect(moved.step.status).toBe(status);
          if (status === 'completed') completed.push({ step: claim.step.id, worker: w });
        }
      }),
    );
    // Whatever is left (workers stop after 60 claims) is finished by one more worker.
    for (;;) {
      const claim = await last.ok('plan_claim', { planId });
      if (!claim.claimed) break;
      grants.push({ step: claim.step.id, fence: claim.claim.fence, worker: 8 });
      await last.ok('plan_step', { planId, stepId: claim.step.id, status: 'completed', fence: claim.claim.fence });
      completed.push({ step: claim.step.id, worker: 8 });
    }
    console.log(`${grants.length} claims granted, ${completed.length} steps completed`);
    expect(grants.length).toBeGreaterThanOrEqual(450);
    // fences are unique and every strict plan_step succeeded: each move came from the one current holder
    expect(new Set(grants.map((g) => g.fence)).size).toBe(grants.length);
    expect(completed.map((c) => c.step).sort()).toEqual([...stepIds].sort());
    const plan = (await planner.ok('plan_get', { planId, detail: 'full' })).plan;
    expect(plan.done).toBe(100);
    for (const step of plan.steps) {
      expect(step.attempts, `${step.id} never lapsed`).toBeUndefined();
      const finisher = completed.find((c) => c.step === step.id)!;
      expect(step.owner).toBe(finisher.worker === 8 ? 'closer' : `w${finisher.worker}`);
    }
  }, 600_000);

  it("a holder paused past its lease gets CLAIM_LOST when it resumes; the new holder's completion stands", async () => {
    const store = fresh();
    const [planner, paused, other] = await Promise.all([
      start(store, 'planner'),
      start(store, 'sleeper', '--claim-lease', '2'),
      start(store, 'other', '--claim-lease', '2'),
    ]);
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    const first = await paused.ok('plan_claim', { planId });
    process.kill(paused.pid!, 'SIGSTOP');
    try {
      // the step is taken once the lease lapses: the lease and at most one renewal interval (500 ms) after the
      // sleeper's last sign of life
      const stoppedAt = Date.now();
      let taken: Record<string, unknown>;
      do {
        taken = await other.ok('plan_claim', { planId });
        if (!taken.claimed) await sleep(50);
      } while (!taken.claimed && Date.now() - stoppedAt < 10_000);
      expect(Date.now() - stoppedAt, 'not before the lease lapsed').toBeGreaterThanOrEqual(1500);
      expect(taken).toMatchObject({ claimed: true, step: { id: 's1', attempts: 1 }, claim: { fence: first.claim.fence + 1 } });
    } finally {
      process.kill(paused.pid!, 'SIGCONT');
    }
    const lost = await paused.err('plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(lost).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: { agent: 'other' }, fence: first.claim.fence + 1 } });
    await other.ok('plan_step', { planId, stepId: 's1', status: 'completed', note: 'done by other' });
    expect((await paused.err('plan_step', { planId, stepId: 's1', status: 'completed' })).code).toBe('CLAIM_LOST');
    const step = (await planner.ok('plan_get', { planId, detail: 'full' })).plan.steps[0];
    expect(step).toMatchObject({ status: 'completed', owner: 'other', note: 'done by other', attempts: 1 });
  }, 60_000);

  it('a holder killed with kill -9: its step is claimable again within lease + 1 s', async () => {
    const store = fresh();
    const [planner, doomed, heir] = await Promise.all([
      start(store, 'planner'),
      start(store, 'doomed', '--claim-lease', '2'),
      start(store, 'heir', '--claim-lease', '2'),
    ]);
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    await doomed.ok('plan_claim', { planId });
    doomed.kill();
    const killedAt = Date.now();
    let claim: Record<string, unknown>;
    do {
      claim = await heir.ok('plan_claim', { planId, stepId: 's1' });
      if (!claim.claimed) await sleep(50);
    } while (!claim.claimed && Date.now() - killedAt < 10_000);
    const after = Date.now() - killedAt;
    expect(claim.claimed).toBe(true);
    expect(after).toBeLessThanOrEqual(3000);
    expect(after).toBeGreaterThanOrEqual(1500);
  }, 60_000);
});
