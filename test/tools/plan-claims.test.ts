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

  it("a lapsed claim taken back keeps its fence: it is still the step's latest grant, and counts in every later call", async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    await planner.ok('plan_claim', { planId, stepId: 's2' }); // fence 1: another step's grant
    const { claim } = await a.ok('plan_claim', { planId, stepId: 's1' });
    expect(claim.fence).toBe(2);
    await sleep(1600);
    expect((await planner.ok('plan_get', { planId })).plan.steps[0]).toMatchObject({ status: 'pending', attempts: 1 });
    // back, with its fence: taking the step back with in_progress, then renewing, then finishing, all with fence 2
    for (const status of ['in_progress', 'in_progress', 'completed'] as const) {
      expect(await a.ok('plan_step', { planId, stepId: 's1', status, fence: 2 })).toMatchObject({ step: { status, owner: 'a' } });
    }
    // a grant after it goes on from the plan's fences
    await planner.ok('plan_update', { planId, stepUpdates: [{ id: 's2', status: 'pending' }] });
    expect((await a.ok('plan_claim', { planId })).claim.fence).toBe(3);
  });

  it('a lapsed claim given back with plan_step is over: taking the step again is a new grant, with a new fence', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    const lapsed = (await a.ok('plan_claim', { planId })).claim.fence;
    await sleep(1600); // the claim lapses; nobody takes the step
    await a.ok('plan_step', { planId, stepId: 's1', status: 'pending', fence: lapsed }); // given back
    const again = await a.ok('plan_step', { planId, stepId: 's1', status: 'in_progress' });
    expect(again.step.claim.fence).toBeGreaterThan(lapsed);
    // the given-back grant is not current any more
    expect(await a.err('plan_step', { planId, stepId: 's1', status: 'completed', fence: lapsed })).toMatchObject({ code: 'CLAIM_LOST' });
  });

  it('an older fence of a step held again stays stale once the newer claim lapsed: only the lapsed claim itself is taken back', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    const first = (await a.ok('plan_claim', { planId })).claim.fence;
    await a.ok('plan_step', { planId, stepId: 's1', status: 'pending' });
    const second = (await a.ok('plan_claim', { planId })).claim.fence;
    expect(second).toBeGreaterThan(first);
    await sleep(1600); // the second claim lapses; nobody takes the step
    const version = (await planner.ok('plan_get', { planId })).plan.version;
    for (const status of ['completed', 'in_progress'] as const) {
      const stale = await a.err('plan_step', { planId, stepId: 's1', status, fence: first });
      expect(stale).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: null, fence: null } });
      expect(stale.message).toContain(`fence ${second}`);
    }
    expect((await planner.ok('plan_get', { planId })).plan).toMatchObject({ version, steps: [{ status: 'pending', attempts: 1 }] });
    expect(await a.ok('plan_step', { planId, stepId: 's1', status: 'completed', fence: second })).toMatchObject({
      step: { status: 'completed', owner: 'a' },
    });
  });

  it("a claim lives the whole lease after the holder's last call, also one the renewal interval left unwritten", async () => {
    // a 2 s lease: signs of life are written at most every 500 ms, so a call 300 ms after the claim is not written
    const store = memoryStore();
    const [planner, a, b] = await Promise.all(
      ['planner', 'a', 'b'].map((name) => agent({ store, config: { agent: name, thread: `t${name}`, claimLeaseSeconds: 2 } })),
    );
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    await a.ok('plan_claim', { planId, stepId: 's1' });
    await sleep(300);
    await a.ok('state_get', { key: 'anything' });
    await sleep(1800); // 1.8 s after a's last call, 2.1 s after the last sign of life written
    expect(await b.ok('plan_claim', { planId, stepId: 's1' })).toMatchObject({ claimed: false });
    await sleep(700);
    expect(await b.ok('plan_claim', { planId, stepId: 's1' })).toMatchObject({ claimed: true, step: { attempts: 1 } });
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

  it('a holder that reassigns its own step gives it up: pending for the new owner (or nobody), who can take it', async () => {
    const { planner, a, b } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    await a.ok('plan_claim', { planId, stepId: 's1' });
    const moved = await a.ok('plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'b' }] });
    expect(moved.changed[0]).toEqual({ id: 's1', content: 'one', status: 'pending', owner: 'b' });
    expect(await b.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's1', owner: 'b' } });
    // given to nobody: free for anyone, not left in progress with a holder and no owner
    await a.ok('plan_claim', { planId, stepId: 's2' });
    await a.ok('plan_update', { planId, stepUpdates: [{ id: 's2', owner: '' }] });
    const { plan } = await planner.ok('plan_get', { planId, detail: 'full' });
    expect(plan.steps[1]).toEqual({ id: 's2', content: 'two', status: 'pending' });
    expect(await planner.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's2', owner: 'planner' } });
  });

  it("steal: a worker cannot take a held step from its holder by reassigning it in a plan it may not write, nor wipe another's report", async () => {
    const store = memoryStore();
    const [planner, a, b] = await Promise.all(
      (['planner', 'a', 'b'] as const).map((name) =>
        agent({ store, config: { agent: name, thread: `t${name === 'planner' ? 'p' : name}` } }),
      ),
    );
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'], scope: 'thread' });
    await a.ok('plan_claim', { planId, stepId: 's1' });
    await a.ok('plan_step', { planId, stepId: 's1', status: 'completed', note: 'result in key r1' });
    await a.ok('plan_claim', { planId, stepId: 's2' });
    const before = await version(planner, planId);
    for (const owner of ['b', '']) {
      const stolen = await b.err('plan_update', { planId, stepUpdates: [{ id: 's2', owner, status: 'in_progress' }] });
      expect(stolen).toMatchObject({ code: 'FORBIDDEN', details: { thread: 'tp', owner: 'planner' } });
    }
    expect((await b.err('plan_update', { planId, stepUpdates: [{ id: 's1', note: '' }] })).code).toBe('INVALID_TRANSITION');
    expect(await version(planner, planId)).toBe(before);
    expect((await b.ok('history_list', { thread: 'tb', kind: 'plan_reassign' })).entries).toEqual([]);
    expect((await planner.ok('plan_get', { planId, detail: 'full' })).plan.steps).toMatchObject([
      { id: 's1', status: 'completed', owner: 'a', note: 'result in key r1' },
      { id: 's2', status: 'in_progress', owner: 'a', claim: { thread: 'ta' } },
    ]);
    // the plan's planner still reassigns deliberately
    await planner.ok('plan_update', { planId, stepUpdates: [{ id: 's2', owner: 'b' }] });
    expect((await a.err('plan_step', { planId, stepId: 's2', status: 'completed' })).code).toBe('CLAIM_LOST');
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

  it('a replace answers with every step it changed, and cannot change the text of a step another agent holds', async () => {
    const { planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['alpha', 'beta', 'gamma'] });
    let v = await version(planner, planId);
    const edited = await planner.ok('plan_update', {
      planId,
      ifVersion: v,
      steps: [{ id: 's1', content: 'ALPHA' }, 'beta', { id: 's3', content: 'gamma', blockedBy: ['s2'] }],
    });
    expect(edited.changed.map((s: { id: string; content: string }) => `${s.id}:${s.content}`)).toEqual(['s1:ALPHA', 's3:gamma']);
    await a.ok('plan_claim', { planId, stepId: 's2' });
    v = await version(planner, planId);
    const held = await planner.err('plan_update', { planId, ifVersion: v, steps: ['ALPHA', { id: 's2', content: 'HIJACK' }, 'gamma'] });
    expect(held).toMatchObject({ code: 'FORBIDDEN', details: { stepId: 's2', holder: { agent: 'a', thread: 'ta' } } });
    expect(await version(planner, planId)).toBe(v);
    expect((await planner.ok('plan_get', { planId })).plan.steps[1].content).toBe('beta');
    // the holder itself may, and an unchanged held step does not stand in the way of the others' edits
    expect(
      (await a.ok('plan_update', { planId, ifVersion: v, steps: ['ALPHA', { id: 's2', content: 'beta, better' }, 'gamma'] })).changed,
    ).toMatchObject([{ id: 's2', content: 'beta, better' }]);
    v = await version(planner, planId);
    expect(
      (await planner.ok('plan_update', { planId, ifVersion: v, steps: ['ALPHA', 'beta, better', 'gamma', 'delta'] })).changed,
    ).toMatchObject([{ id: 's4', content: 'delta' }]);
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

describe('write replies stay small; claims end for the reason they say', () => {
  /** A tool's reply, and its size in bytes as a client receives it. */
  const sized = async (who: Connected, name: string, args: object) => {
    const result = await who.raw(name, args as never);
    const text = (result.content[0] as { text: string }).text;
    expect(result.isError, text).toBeFalsy();
    return { bytes: Buffer.byteLength(text), reply: JSON.parse(text) };
  };

  it('a one-step change that unblocks 199 steps answers under 1 KB: unblocked lists the first of them', async () => {
    const w = await agent({ config: { agent: 'w' } });
    const steps = ['first', ...Array.from({ length: 199 }, (_, i) => ({ content: `step ${i + 2}`, blockedBy: ['s1'] }))];
    const ids = Array.from({ length: 199 }, (_, i) => `s${i + 2}`);
    const { planId } = await w.ok('plan_create', { title: 'fan-out', steps });
    await w.ok('plan_claim', { planId });
    const completed = await sized(w, 'plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(completed.bytes).toBeLessThan(1024);
    expect(completed.reply).toMatchObject({ step: { id: 's1', status: 'completed' }, done: 1, total: 200 });
    expect(completed.reply.unblocked.length).toBeGreaterThanOrEqual(10);
    expect(completed.reply.unblocked).toEqual(ids.slice(0, completed.reply.unblocked.length));
    const other = await w.ok('plan_create', { title: 'fan-out', steps });
    const skipped = await sized(w, 'plan_update', { planId: other.planId, stepUpdates: [{ id: 's1', status: 'skipped' }] });
    expect(skipped.bytes).toBeLessThan(1024);
    expect(skipped.reply.unblocked).toEqual(ids.slice(0, skipped.reply.unblocked.length));
    expect(skipped.reply.unblocked.length).toBeGreaterThanOrEqual(10);
    // every unblocked step is there to take, listed or not
    const all = (await w.ok('plan_get', { planId: other.planId })).plan.steps;
    expect(all.filter((s: { status: string }) => s.status === 'pending')).toHaveLength(199);
  });

  it("write replies cut a step's content and note as the summary does; plan_get full has them whole", async () => {
    const w = await agent({ config: { agent: 'w' } });
    const long = (i: number) => `step ${i} `.padEnd(2000, 'x');
    const { planId } = await w.ok('plan_create', { title: 'long', steps: Array.from({ length: 200 }, (_, i) => long(i + 1)) });
    const claimed = await sized(w, 'plan_claim', { planId });
    expect(claimed.bytes).toBeLessThan(1024);
    expect(claimed.reply.step.content).toBe(`${long(1).slice(0, 200)}…`);
    expect((await sized(w, 'plan_claim', { planId, stepId: 's1' })).bytes).toBeLessThan(1024);
    const note = 'n'.repeat(2000);
    const completed = await sized(w, 'plan_step', { planId, stepId: 's1', status: 'completed', note });
    expect(completed.bytes).toBeLessThan(1024);
    expect(completed.reply.step).toMatchObject({ content: `${long(1).slice(0, 200)}…`, note: `${'n'.repeat(200)}…` });
    const updated = await sized(w, 'plan_update', { planId, stepUpdates: [{ id: 's2', note, content: long(2) }] });
    expect(updated.bytes).toBeLessThan(1024);
    expect(updated.reply.changed[0].content).toBe(`${long(2).slice(0, 200)}…`);
    const whole = (await w.ok('plan_get', { planId, detail: 'full' })).plan.steps[0];
    expect(whole).toMatchObject({ content: long(1), note });
    // texts that take more room as JSON (quotes, wide characters) are cut shorter still
    const { planId: wide } = await w.ok('plan_create', { title: 'wide', steps: ['"'.repeat(2000), '界'.repeat(2000)] });
    for (const stepId of ['s1', 's2']) {
      expect((await sized(w, 'plan_claim', { planId: wide, stepId })).bytes).toBeLessThan(1024);
      expect((await sized(w, 'plan_step', { planId: wide, stepId, status: 'completed', note: '界'.repeat(2000) })).bytes).toBeLessThan(
        1024,
      );
    }
  });

  it('a spent caller takes no new work through plan_step, plan_update or plan_create; it finishes what it holds', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'L' } });
    const w = await agent({ store, config: { agent: 'w', thread: 'W', maxIterations: 2, ...LEASE } });
    const { planId } = await lead.ok('plan_create', { title: 'T', steps: ['one', 'two', 'three', 'four'] });
    await w.ok('plan_claim', { planId, stepId: 's1' });
    await w.ok('plan_claim', { planId, stepId: 's4' });
    await w.ok('budget_step', {});
    await w.ok('budget_step', {});
    expect((await w.err('budget_step', {})).code).toBe('LIMIT_REACHED');
    const before = await version(lead, planId);
    for (const status of ['completed', 'skipped', 'in_progress']) {
      const refused = await w.err('plan_step', { planId, stepId: 's2', status });
      expect(refused).toMatchObject({ code: 'LIMIT_REACHED', details: { name: 'iterations', thread: 'W' } });
      expect(refused.message).toMatch(/no new step can be taken/);
    }
    for (const status of ['completed', 'in_progress']) {
      expect((await w.err('plan_update', { planId, stepUpdates: [{ id: 's3', status }] })).code).toBe('LIMIT_REACHED');
    }
    expect((await w.err('plan_create', { title: 'U', steps: [{ content: 'x', status: 'in_progress' }] })).code).toBe('LIMIT_REACHED');
    expect(await version(lead, planId)).toBe(before);
    expect((await lead.ok('plan_get', { planId })).plan.steps[1]).toEqual({ id: 's2', content: 'two', status: 'pending' });
    // giving work back, and finishing held work, stay allowed
    expect(await w.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({ step: { owner: 'w' }, done: 1 });
    expect(await w.ok('plan_update', { planId, stepUpdates: [{ id: 's3', note: 'later' }] })).toMatchObject({ done: 1 });
    // a held claim that lapsed and nobody took is still the caller's to finish
    await sleep(1300);
    expect(await w.ok('plan_step', { planId, stepId: 's4', status: 'completed' })).toMatchObject({ step: { owner: 'w' }, done: 2 });
    expect((await w.err('plan_claim', { planId })).code).toBe('LIMIT_REACHED');
  });

  it('a lapsed claim nobody took is re-taken with its fence; a fence older than the latest grant is CLAIM_LOST', async () => {
    const { planner, a, b } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    const first = (await a.ok('plan_claim', { planId, stepId: 's1' })).claim.fence;
    await sleep(1300); // a's claim lapses; nobody takes s1
    expect((await planner.ok('plan_get', { planId })).plan.steps[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await a.ok('plan_step', { planId, stepId: 's1', status: 'completed', fence: first })).toMatchObject({
      step: { id: 's1', status: 'completed', owner: 'a' },
      done: 1,
    });
    const second = (await a.ok('plan_claim', { planId, stepId: 's2' })).claim.fence;
    await sleep(1300); // lapses; b takes s2 and gives it back
    await b.ok('plan_claim', { planId, stepId: 's2' });
    await b.ok('plan_step', { planId, stepId: 's2', status: 'pending' });
    const v = await version(planner, planId);
    for (const fence of [second, undefined]) {
      const lost = await a.err('plan_step', { planId, stepId: 's2', status: 'completed', ...(fence ? { fence } : {}) });
      expect(lost).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's2', holder: null, fence: null } });
      expect(lost.message).toMatch(/lapsed.*granted again/);
    }
    expect(await version(planner, planId)).toBe(v);
    expect(await a.ok('plan_claim', { planId, stepId: 's2' })).toMatchObject({ claimed: true });
  });

  it('a superseded holder stays CLAIM_LOST however many grants follow; past 16 holders a step takes a claim to move', async () => {
    const { store, planner, a } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one'] });
    await a.ok('plan_claim', { planId, stepId: 's1' });
    await sleep(1300); // a's claim lapses
    /** `who` is granted s1, and the planner takes it back (a deliberate reassignment to nobody). */
    const grantAndRevoke = async (who: Connected) => {
      await who.ok('plan_claim', { planId, stepId: 's1' });
      await planner.ok('plan_update', { planId, stepUpdates: [{ id: 's1', owner: '' }] });
    };
    const others = await Promise.all(['w0', 'w1'].map((name) => agent({ store, config: { agent: name, thread: name, ...LEASE } })));
    for (let i = 0; i < 8; i++) await grantAndRevoke(others[i % 2]);
    const v = await version(planner, planId);
    const late = await a.err('plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(late).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: null } });
    expect(late.message).toMatch(/lapsed.*granted again/);
    expect(await version(planner, planId)).toBe(v);

    // 16 more holders: a is no longer named, and neither it nor anyone without a claim moves the step
    for (let i = 0; i < 16; i++) await grantAndRevoke(await agent({ store, config: { agent: `h${i}`, thread: `h${i}`, ...LEASE } }));
    const stranger = await agent({ store, config: { agent: 'new', thread: 'new', ...LEASE } });
    for (const who of [a, stranger]) {
      const refused = await who.err('plan_step', { planId, stepId: 's1', status: 'completed' });
      expect(refused).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: null } });
      expect(refused.message).toMatch(/lost by more holders than it remembers.*plan_claim/);
    }
    expect(await version(planner, planId)).toBe(v + 32);
    await stranger.ok('plan_claim', { planId, stepId: 's1' });
    expect(await stranger.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({ done: 1 });
  });

  it('CLAIM_LOST names its cause: a stale fence of a step you hold, a reassignment, or a lapse', async () => {
    const { planner, a, b } = await team();
    const { planId } = await planner.ok('plan_create', { title: 'T', steps: ['one', 'two'] });
    const old = (await a.ok('plan_claim', { planId, stepId: 's1' })).claim.fence;
    await a.ok('plan_step', { planId, stepId: 's1', status: 'pending' });
    const current = (await a.ok('plan_claim', { planId, stepId: 's1' })).claim.fence;
    const stale = await a.err('plan_step', { planId, stepId: 's1', status: 'completed', fence: old });
    expect(stale).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: { agent: 'a', thread: 'ta' }, fence: current } });
    expect(stale.message).toMatch(new RegExp(`fence ${old} is stale.*current one is fence ${current}, held by you`, 'i'));
    expect(stale.message).not.toMatch(/lapsed/);
    await planner.ok('plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'planner' }] });
    const moved = await a.err('plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(moved).toMatchObject({ code: 'CLAIM_LOST', details: { stepId: 's1', holder: null } });
    expect(moved.message).toMatch(/reassignment.*pending for planner/);
    expect(moved.message).not.toMatch(/lapsed/);
    await a.ok('plan_claim', { planId, stepId: 's2' });
    await sleep(1300);
    await b.ok('plan_claim', { planId, stepId: 's2' });
    const lapsed = await a.err('plan_step', { planId, stepId: 's2', status: 'completed' });
    expect(lapsed).toMatchObject({ code: 'CLAIM_LOST', details: { holder: { agent: 'b', thread: 'tb' } } });
    expect(lapsed.message).toMatch(/lapsed \(no call from you within the claim lease\) and it was given to agent "b"/);
  });
});
