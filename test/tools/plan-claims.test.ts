import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();
/** A lease of one second, so a silent holder lapses within a test. */
const LEASE = { claimLeaseSeconds: 1 };

async function team(store = memoryStore()) {
  const planner = await agent({ store, config: { agent: 'planner', thread: 'tp', ...LEASE } });
  const a = await agent({ store, config: { agent: 'a', thread: 'ta', ...LEASE } });
  const b = await agent({ store, config: { agent: 'b', thread: 'tb', ...LEASE } });
  return { store, planner, a, b };
}
const version = async (who: Connected, planId: string): Promise<number> => (await who.ok('plan_get', { planId })).plan.version;

describe('claims: leases, lapses and fences', () => {
  it('a silent holder lapses: the step is pending again with attempts +1, the next holder gets a higher fence, the old one CLAIM_LOST', async () => {
    const { planner, a, b } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    const first = await a.ok('plan_claim', { planId, stepId: 's1' });
    expect(first.claim.fence).toBe(1);
    await sleep(1300); // a makes no call for longer than the lease
    const seen = (await planner.ok('plan_get', { planId, detail: 'full' })).plan.steps[0];
    expect(seen).toEqual({ id: 's1', content: 'one', status: 'pending', attempts: 1 });
    expect((await planner.ok('plan_list', {})).plans[0]).toMatchObject({ planId, done: 0, total: 2 });
    const second = await b.ok('plan_claim', { planId });
    expect(second).toMatchObject({ claimed: true, step: { id: 's1', owner: 'b', attempts: 1 }, claim: { fence: 2 } });
    const before = await version(planner, planId);
    const lost = await a.err('plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(lost).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: { agent: 'b', thread: 'tb' }, fence: 2 } });
    expect(await version(planner, planId)).toBe(before);
    expect(await b.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({
      step: { status: 'completed', owner: 'b' },
      done: 1,
      total: 2,
    });
    // the late holder still cannot move it, and its next claim is a fresh one
    expect((await a.err('plan_step', { planId, stepId: 's1', status: 'completed' })).code).toBe('CLAIM_LOST');
    expect(await a.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's2' }, claim: { fence: 3 } });
  });

  it('any call by the holder renews its claim (reads too); a lapsed claim nobody took is simply re-taken', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    await a.ok('plan_claim', { planId });
    for (let i = 0; i < 6; i++) {
      await sleep(300);
      await a.ok('state_get', { key: 'anything' });
    }
    const held = (await planner.ok('plan_get', { planId, detail: 'full' })).plan.steps[0];
    expect(held).toMatchObject({ status: 'in_progress', owner: 'a', claim: { thread: 'ta', fence: 1 } });
    await sleep(1300);
    expect((await planner.ok('plan_get', { planId })).plan.steps[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await a.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({
      step: { status: 'completed', owner: 'a' },
      done: 1,
    });
  });

  it('fence makes a call strict; clones of one agent in other threads are other holders', async () => {
    const store = memoryStore();
    const { planner, a } = await team(store);
    const clone = await agent({ store, config: { agent: 'a', thread: 'ta-2', ...LEASE } });
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    const { claim } = await a.ok('plan_claim', { planId });
    expect(await clone.ok('plan_claim', { planId, stepId: 's1' })).toMatchObject({ claimed: false, reason: 'taken' });
    expect((await clone.err('plan_step', { planId, stepId: 's1', status: 'completed' })).code).toBe('FORBIDDEN');
    expect((await a.err('plan_step', { planId, stepId: 's1', status: 'completed', fence: claim.fence + 1 })).code).toBe('CLAIM_LOST');
    expect(await a.ok('plan_step', { planId, stepId: 's1', status: 'in_progress', fence: claim.fence })).toMatchObject({
      step: { claim: { fence: 1 } },
    });
    expect(await a.ok('plan_step', { planId, stepId: 's1', status: 'pending' })).toMatchObject({ step: { status: 'pending' }, done: 0 });
    expect((await planner.ok('plan_get', { planId })).plan.steps[0].owner).toBeUndefined();
  });

  it('a one-step change on a 200-step plan answers in under 1 KB; plan_get stays under 16 KiB', async () => {
    const a = await agent({ config: { agent: 'w' } });
    const steps = Array.from({ length: 200 }, (_, i) => `step ${i} `.padEnd(300, 'x'));
    const { planId } = await a.ok('plan_create', { title: 'big', steps });
    const size = async (name: string, args: object): Promise<number> =>
      ((await a.raw(name, args as never)).content[0] as { text: string }).text.length;
    expect(await size('plan_claim', { planId })).toBeLessThan(1024);
    expect(await size('plan_step', { planId, stepId: 's1', status: 'completed' })).toBeLessThan(1024);
    expect(await size('plan_update', { planId, stepUpdates: [{ id: 's2', note: 'n' }] })).toBeLessThan(1024);
    expect(await size('plan_get', { planId })).toBeLessThan(16 * 1024);
  });
});

describe('the holder decides; plans cannot be wiped', () => {
  it('steal: another agent cannot move a held step; an explicit reassignment can, and is in history', async () => {
    const { planner, a, b } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    await a.ok('plan_claim', { planId });
    const before = await version(planner, planId);
    const stolen = await b.err('plan_update', { planId, stepUpdates: [{ id: 's1', status: 'completed' }] });
    expect(stolen).toMatchObject({ code: 'FORBIDDEN', details: { stepId: 's1', holder: { agent: 'a', thread: 'ta' } } });
    expect(stolen.message).toMatch(/agent "a"/);
    expect((await b.err('plan_step', { planId, stepId: 's1', status: 'completed' })).code).toBe('FORBIDDEN');
    expect(await version(planner, planId)).toBe(before);
    const moved = await planner.ok('plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'b' }] });
    expect(moved.changed[0]).toMatchObject({ id: 's1', status: 'pending', owner: 'b' });
    expect((await a.err('plan_step', { planId, stepId: 's1', status: 'completed' })).code).toBe('CLAIM_LOST');
    expect(await b.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's1', owner: 'b' } });
    const history = (await planner.ok('history_list', { kind: 'plan_reassign' })).entries;
    expect(history[0]).toMatchObject({
      kind: 'plan_reassign',
      content: expect.stringContaining('s1'),
      data: { planId, stepId: 's1', to: 'b' },
    });
  });

  it('wipe: a replace needs ifVersion, keeps matched steps, and never drops work in progress or done', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['collect', 'analyze', 'write'] });
    await a.ok('plan_claim', { planId });
    await a.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    await a.ok('plan_claim', { planId });
    const v = await version(planner, planId);
    const todo = ['collect', 'analyze', 'write', 'review'];
    expect((await planner.err('plan_update', { planId, steps: todo })).code).toBe('INVALID_ARGUMENT');
    const dropping = await planner.err('plan_update', { planId, ifVersion: v, steps: ['gather', 'review'] });
    expect(dropping).toMatchObject({ code: 'INVALID_ARGUMENT', details: { steps: ['s1', 's2'] } });
    expect(dropping.message).toMatch(/skipped/);
    expect(await version(planner, planId)).toBe(v);
    const kept = await planner.ok('plan_update', { planId, ifVersion: v, steps: todo });
    expect(kept).toMatchObject({ changed: [{ id: 's4', content: 'review', status: 'pending' }], done: 1, total: 4 });
    const steps = (await planner.ok('plan_get', { planId })).plan.steps;
    expect(steps.map((s: { id: string; status: string; owner?: string }) => `${s.id}:${s.status}:${s.owner ?? ''}`)).toEqual([
      's1:completed:a',
      's2:in_progress:a',
      's3:pending:',
      's4:pending:',
    ]);
    expect(await a.ok('plan_step', { planId, stepId: 's2', status: 'completed' })).toMatchObject({ done: 2, total: 4 });
  });

  it("TodoWrite-shaped steps are accepted: status at creation, in_progress ones are the creator's claims", async () => {
    const { planner, a } = await team();
    const created = await planner.ok('plan_create', {
      title: 'todo',
      steps: [
        { content: 'Read the code', status: 'completed', activeForm: 'Reading the code' },
        { content: 'Fix the bug', status: 'in_progress', activeForm: 'Fixing the bug' },
        { content: 'Run the tests', status: 'pending', activeForm: 'Running the tests' },
      ],
    });
    expect(created).toMatchObject({ stepIds: ['s1', 's2', 's3'], done: 1, total: 3 });
    const steps = (await planner.ok('plan_get', { planId: created.planId, detail: 'full' })).plan.steps;
    expect(steps[1]).toMatchObject({ status: 'in_progress', owner: 'planner', claim: { thread: 'tp', fence: 1 } });
    expect((await a.err('plan_step', { planId: created.planId, stepId: 's2', status: 'completed' })).code).toBe('FORBIDDEN');
    expect(await a.ok('plan_claim', { planId: created.planId })).toMatchObject({ step: { id: 's3' }, claim: { fence: 2 } });
  });

  it("a child finds its parent's plans with plan_list {}; an empty list says where plans live", async () => {
    const store = memoryStore();
    const parent = await agent({ store, config: { agent: 'lead', thread: 'P' } });
    const child = await agent({ store, config: { agent: 'kid', thread: 'C', parentThread: 'P' } });
    const stranger = await agent({ store, config: { agent: 'x', thread: 'X' } });
    expect((await child.ok('plan_list', {})).hint).toMatch(/global.*thread:C/);
    const shared = await parent.ok('plan_create', { title: 'shared', steps: ['a'] });
    const own = await parent.ok('plan_create', { title: 'parent thread', steps: ['a'], scope: 'thread' });
    const listed = await child.ok('plan_list', {});
    expect(listed.plans.map((p: { planId: string }) => p.planId)).toEqual([own.planId, shared.planId]);
    expect(listed.hint).toBeUndefined();
    expect((await stranger.ok('plan_list', {})).plans.map((p: { planId: string }) => p.planId)).toEqual([shared.planId]);
  });

  it('swallow: a reused idempotencyKey with other arguments is refused on plan tools too', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'], idempotencyKey: 'k' });
    expect((await planner.err('plan_create', { title: 'Other', steps: ['x'], idempotencyKey: 'k' })).code).toBe('INVALID_ARGUMENT');
    const claim = await a.ok('plan_claim', { planId, stepId: 's1', idempotencyKey: 'c' });
    expect(await a.ok('plan_claim', { planId, stepId: 's1', idempotencyKey: 'c' })).toEqual(claim);
    const v = await version(planner, planId);
    expect((await a.err('plan_claim', { planId, stepId: 's2', idempotencyKey: 'c' })).code).toBe('INVALID_ARGUMENT');
    expect(await version(planner, planId)).toBe(v);
    expect((await planner.ok('plan_list', {})).plans).toHaveLength(1);
  });
});
