import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();

/** The owner of thread T, and two workers in their own threads, on one store. */
async function team() {
  const store = memoryStore();
  const owner = await agent({ store, config: { agent: 'owner', thread: 'T' } });
  const b = await agent({ store, config: { agent: 'b', thread: 'tb' } });
  const c = await agent({ store, config: { agent: 'c', thread: 'tc' } });
  return { owner, b, c };
}
const steps = async (who: Connected, planId: string) =>
  ((await who.ok('plan_get', { planId, detail: 'full' })).plan.steps as Array<Record<string, unknown>>).map(
    ({ id, content, status, owner, claim, blockedBy }) => ({
      id,
      content,
      status,
      owner,
      fence: (claim as { fence?: number })?.fence,
      blockedBy,
    }),
  );

describe('checkpoint_restore and the work in plans', () => {
  it("brings the plan's edits back but never takes back another agent's claimed or finished step; fences keep growing", async () => {
    const { owner, b, c } = await team();
    const { planId } = await owner.ok('plan_create', { title: 'ship it', steps: ['a', 'b', 'c'], scope: 'thread' });
    const { checkpointId } = await owner.ok('checkpoint_save', {});
    await b.ok('plan_claim', { planId, stepId: 's1' });
    await b.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    const held = (await b.ok('plan_claim', { planId, stepId: 's2' })).claim.fence;
    // the owner's own edits since the save: a title, a step's text and blockers, a new pending step
    const { version } = (await owner.ok('plan_get', { planId })).plan;
    await owner.ok('plan_update', {
      planId,
      ifVersion: version,
      title: 'ship it now',
      steps: [{ id: 's1', content: 'a' }, { id: 's2', content: 'b' }, { id: 's3', content: 'c, renamed', blockedBy: ['s1'] }, 'd'],
    });

    const restored = await owner.ok('checkpoint_restore', { checkpointId });
    expect(restored).toMatchObject({ budgetsKept: true });
    expect((await owner.ok('plan_get', { planId })).plan.title).toBe('ship it');
    expect(await steps(owner, planId)).toEqual([
      { id: 's1', content: 'a', status: 'completed', owner: 'b' },
      { id: 's2', content: 'b', status: 'in_progress', owner: 'b', fence: held },
      { id: 's3', content: 'c', status: 'pending' },
    ]);
    // the holder goes on with its grant; the next grant is above every earlier one
    const next = (await c.ok('plan_claim', { planId, stepId: 's3' })).claim.fence;
    expect(next).toBeGreaterThan(held);
    expect(await b.ok('plan_step', { planId, stepId: 's2', status: 'completed', fence: held })).toMatchObject({ done: 2, total: 3 });
  });

  it('an untouched plan restores exactly; a plan made since stays only if it has work in it, with its index entry', async () => {
    const { owner, b } = await team();
    const { planId: kept } = await owner.ok('plan_create', { title: 'before', steps: ['one'], scope: 'thread' });
    const before = (await owner.ok('plan_get', { planId: kept })).plan;
    const { checkpointId } = await owner.ok('checkpoint_save', {});
    const { planId: idle } = await owner.ok('plan_create', { title: 'idle since', steps: ['x'], scope: 'thread' });
    const { planId: busy } = await owner.ok('plan_create', { title: 'busy since', steps: ['x', 'y'], scope: 'thread' });
    await b.ok('plan_claim', { planId: busy, stepId: 's1' });

    await owner.ok('checkpoint_restore', { checkpointId });
    expect((await owner.ok('plan_get', { planId: kept })).plan).toEqual(before);
    expect((await owner.err('plan_get', { planId: idle })).code).toBe('NOT_FOUND');
    expect(await steps(owner, busy)).toEqual([
      { id: 's1', content: 'x', status: 'in_progress', owner: 'b', fence: 1 },
      { id: 's2', content: 'y', status: 'pending' },
    ]);
    const listed = (await owner.ok('plan_list', { scope: 'thread' })).plans.map((p: { planId: string }) => p.planId);
    expect(listed.sort()).toEqual([busy, kept].sort());
  });

  it('a claim held at the save is not brought back: a step given back since stays free, its old holder CLAIM_LOST after a new grant', async () => {
    const { owner, b, c } = await team();
    const { planId } = await owner.ok('plan_create', { title: 'p', steps: ['one', 'two'], scope: 'thread' });
    await b.ok('plan_claim', { planId, stepId: 's1' });
    const { checkpointId } = await owner.ok('checkpoint_save', {});
    await b.ok('plan_step', { planId, stepId: 's1', status: 'pending' });
    await owner.ok('checkpoint_restore', { checkpointId });
    expect((await steps(owner, planId))[0]).toEqual({ id: 's1', content: 'one', status: 'pending' });

    // deleted since the save: the plan comes back, its saved claims without their holders
    const fence = (await c.ok('plan_claim', { planId, stepId: 's1' })).claim.fence;
    const { checkpointId: second } = await owner.ok('checkpoint_save', {});
    await c.ok('plan_step', { planId, stepId: 's1', status: 'pending' });
    await owner.ok('plan_delete', { planId });
    await owner.ok('checkpoint_restore', { checkpointId: second });
    expect((await steps(owner, planId))[0]).toEqual({ id: 's1', content: 'one', status: 'pending' });
    await b.ok('plan_claim', { planId, stepId: 's1' });
    const lost = await c.err('plan_step', { planId, stepId: 's1', status: 'completed', fence });
    expect(lost).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: { agent: 'b', thread: 'tb' } } });
  });

  it('a restore that takes the thread back to an earlier run leaves the later run as run_start would: its plans kept for their work expire', async () => {
    const store = memoryStore();
    const owner = await agent({ store, config: { agent: 'owner', thread: 'T', planTtlSeconds: 1 } });
    const b = await agent({ store, config: { agent: 'b', thread: 'tb', planTtlSeconds: 1 } });
    const { checkpointId } = await owner.ok('checkpoint_save', {});
    await owner.ok('run_start', {});
    const { planId } = await owner.ok('plan_create', { title: 'later run', steps: ['x'], scope: 'run' });
    await b.ok('plan_claim', { planId }); // another agent's work keeps the plan through the restore
    await owner.ok('checkpoint_restore', { checkpointId });
    expect((await b.ok('plan_get', { planId })).plan.title).toBe('later run');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await b.err('plan_get', { planId })).code).toBe('NOT_FOUND');
  });
});
