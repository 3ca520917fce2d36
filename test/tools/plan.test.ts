import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('plan tools', () => {
  it('creates a plan with stable step ids, reads, lists and deletes it', async () => {
    const a = await agent({ config: { agent: 'lead' } });
    const created = await a.ok('plan_create', {
      title: 'Ship v1',
      steps: ['write code', { content: 'test it', owner: 'qa', blockedBy: ['s1'] }],
    });
    const { planId } = created;
    expect(created).toEqual({ planId, version: 1, scope: 'global', stepIds: ['s1', 's2'], done: 0, total: 2 });
    expect(planId).toMatch(/^plan-[0-9a-f]{12}$/);
    const { plan } = await a.ok('plan_get', { planId, detail: 'full' });
    expect(plan).toMatchObject({
      planId,
      title: 'Ship v1',
      status: 'active',
      version: 1,
      updatedBy: 'lead',
      steps: [
        { id: 's1', content: 'write code', status: 'pending' },
        { id: 's2', content: 'test it', status: 'pending', owner: 'qa', blockedBy: ['s1'] },
      ],
    });
    expect((await a.ok('plan_get', { planId })).plan).toEqual(plan); // short steps: the summary is the whole plan
    const listed = await a.ok('plan_list', {});
    expect(listed.plans).toHaveLength(1);
    expect(listed.plans[0]).toMatchObject({ planId, total: 2, done: 0 });
    expect(listed.plans[0].steps).toBeUndefined();
    expect(await a.ok('plan_delete', { planId })).toEqual({ deleted: true });
    expect((await a.err('plan_get', { planId })).code).toBe('NOT_FOUND');
    expect((await a.err('plan_delete', { planId })).code).toBe('NOT_FOUND');
    const empty = await a.ok('plan_list', {});
    expect(empty.plans).toEqual([]);
    expect(empty.hint).toMatch(/scope "thread:ID"/);
  });

  it('stepUpdates edit single steps; steps replaces the list keeping ids; ifVersion guards concurrent edits', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', 'b'] });
    const v2 = await a.ok('plan_update', { planId, ifVersion: 1, stepUpdates: [{ id: 's1', status: 'completed', note: 'done fast' }] });
    expect(v2).toEqual({
      planId,
      version: 2,
      status: 'active',
      changed: [{ id: 's1', content: 'a', status: 'completed' }],
      done: 1,
      total: 2,
      unblocked: [],
    });
    expect((await a.ok('plan_get', { planId, detail: 'full' })).plan.steps[0]).toMatchObject({ note: 'done fast' });
    const stale = await a.err('plan_update', { planId, ifVersion: 1, title: 'lost edit' });
    expect(stale).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentVersion: 2 } });
    // the conflict carries the plan as plan_get shows it, not the stored record
    expect(stale.details.current).toEqual((await a.ok('plan_get', { planId })).plan);
    expect(stale.message).toMatch(/^Expected plan \S+ at version 1 but it is at version 2\. Read it with plan_get/);
    expect((await a.err('plan_update', { planId, steps: ['x'] })).details).toMatchObject({ path: 'ifVersion' });
    // s1 is completed: a replace cannot drop it
    const drop = await a.err('plan_update', { planId, ifVersion: 2, steps: [{ id: 's2', content: 'b (renamed)' }, 'c'] });
    expect(drop).toMatchObject({ code: 'INVALID_ARGUMENT', details: { steps: ['s1'] } });
    const v3 = await a.ok('plan_update', { planId, ifVersion: 2, steps: ['a', { id: 's2', content: 'b (renamed)' }, 'c'] });
    expect(v3).toMatchObject({
      version: 3,
      changed: [
        { id: 's2', content: 'b (renamed)', status: 'pending' },
        { id: 's3', content: 'c', status: 'pending' },
      ],
      done: 1,
      total: 3,
    });
    const steps = (await a.ok('plan_get', { planId })).plan.steps;
    expect(steps.map((s: { id: string; status: string }) => `${s.id}:${s.status}`)).toEqual(['s1:completed', 's2:pending', 's3:pending']);
    const cleared = await a.ok('plan_update', { planId, stepUpdates: [{ id: 's3', owner: 'me' }] });
    expect(cleared.changed[0].owner).toBe('me');
    const again = await a.ok('plan_update', { planId, stepUpdates: [{ id: 's3', owner: '' }] });
    expect(again.changed[0].owner).toBeUndefined();
  });

  it('an update that changes nothing writes nothing: the version stays, so the next ifVersion still holds', async () => {
    const a = await agent({ config: { tools: ['all'] } });
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', { content: 'b', blockedBy: ['s1'] }] });
    const before = (await a.ok('state_changes', { waitMs: 0 })).revision;
    for (const args of [
      { title: 'T' },
      { status: 'active' },
      { stepUpdates: [{ id: 's1', status: 'pending', content: 'a' }] },
      { ifVersion: 1, steps: ['a', { content: 'b', blockedBy: ['s1'] }] },
    ]) {
      const reply = await a.ok('plan_update', { planId, ...args });
      expect(reply, JSON.stringify(args)).toMatchObject({ version: 1, done: 0, total: 2 });
    }
    expect((await a.ok('state_changes', { waitMs: 0 })).revision).toBe(before);
    expect((await a.err('plan_update', { planId, ifVersion: 2, title: 'T' })).code).toBe('VERSION_CONFLICT');
    expect((await a.ok('plan_update', { planId, ifVersion: 1, title: 'T2' })).version).toBe(2);
  });

  it('a step owner is a name a claimant can have: "" is none, anything else is refused, and nothing is made', async () => {
    const a = await agent({ config: { agent: 'lead', tools: ['all'] } });
    const { planId } = await a.ok('plan_create', { title: 'p', steps: [{ content: 'x', owner: '' }] });
    expect((await a.ok('plan_get', { planId })).plan.steps[0].owner).toBeUndefined();
    expect((await a.ok('plan_claim', { planId })).claimed).toBe(true);
    const bad = await a.err('plan_create', { title: 'q', steps: [{ content: 'y', owner: 'Bob Smith (reviewer)' }] });
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'steps[0].owner' } });
    expect((await a.ok('plan_list', {})).plans.map((p: { title: string }) => p.title)).toEqual(['p']);
    const update = await a.err('plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'no spaces please' }] });
    expect(update).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'stepUpdates[0].owner' } });
  });

  it('a held step reassigned in progress is never left held by nobody: the reassigning caller holds it, and it lapses', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'ta', tools: ['all'] } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'tb', tools: ['all'], claimLeaseSeconds: 1 } });
    const { planId } = await alice.ok('plan_create', { title: 'p', steps: ['a', 'b'] });
    await alice.ok('plan_claim', { planId, stepId: 's1' });
    await bob.ok('plan_update', { planId, stepUpdates: [{ id: 's1', owner: 'ghost', status: 'in_progress' }] });
    const { plan } = await bob.ok('plan_get', { planId, detail: 'full' });
    expect(plan.steps[0]).toMatchObject({ status: 'in_progress', owner: 'ghost' });
    expect(plan.steps[0].claim).toBeDefined();
    // bob goes quiet: its claim lapses and the step can be claimed again
    await sleep(2600);
    const carol = await agent({ store, config: { agent: 'carol', thread: 'tc', tools: ['all'], claimLeaseSeconds: 1 } });
    expect((await carol.ok('plan_claim', { planId, stepId: 's1' })).claimed).toBe(true);
  });

  it('reports bad plan edits with documented codes and changes nothing', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a'] });
    expect((await a.err('plan_update', { planId, stepUpdates: [{ id: 's9', status: 'completed' }] })).code).toBe('NOT_FOUND');
    expect((await a.err('plan_update', { planId, steps: [{ id: 's1', content: 'x', blockedBy: ['s1'] }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_update', { planId, steps: [{ id: 's1', content: 'x', blockedBy: ['nope'] }] })).code).toBe(
      'INVALID_ARGUMENT',
    );
    expect((await a.err('plan_update', { planId, steps: [{ id: 's7', content: 'x' }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_create', { title: '', steps: [] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_get', { planId: 'not-a-plan' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_get', { planId: 'plan-000000000000' })).code).toBe('NOT_FOUND');
    expect((await a.ok('plan_get', { planId })).plan.version).toBe(1);
  });

  it("plan_delete never drops other agents' work, held or done, abandoned or not; the planner's own work it may", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', tools: ['all'] } });
    const worker = await agent({ store, config: { agent: 'worker' } });
    const { planId } = await lead.ok('plan_create', { title: 'P', steps: ['a', 'b', 'c'] });
    await worker.ok('plan_claim', { planId, stepId: 's1' });
    await worker.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    await worker.ok('plan_claim', { planId, stepId: 's2' });
    const refused = await lead.err('plan_delete', { planId });
    expect(refused).toMatchObject({ code: 'INVALID_TRANSITION', details: { steps: ['s1', 's2'] } });
    expect(refused.message).toContain('s1: done by worker');
    expect(refused.message).toContain('Mark the plan abandoned');
    await lead.ok('plan_update', { planId, status: 'abandoned' });
    expect((await lead.err('plan_delete', { planId })).details).toMatchObject({ steps: ['s1', 's2'] });
    expect((await lead.ok('plan_get', { planId })).plan.steps[0]).toMatchObject({ status: 'completed', owner: 'worker' });
    // a plan holding only the planner's own work goes
    const own = await lead.ok('plan_create', { title: 'mine', steps: ['x', 'y'] });
    await lead.ok('plan_claim', { planId: own.planId });
    await lead.ok('plan_step', { planId: own.planId, stepId: 's1', status: 'completed' });
    await lead.ok('plan_claim', { planId: own.planId });
    expect(await lead.ok('plan_delete', { planId: own.planId })).toEqual({ deleted: true });
  });

  it("a plan in another agent's profile is FORBIDDEN to create or change; a stale ifVersion on delete conflicts", async () => {
    const a = await agent({ config: { agent: 'alice' } });
    expect((await a.err('plan_create', { title: 't', steps: [], scope: 'profile:bob' })).code).toBe('FORBIDDEN');
    const { planId } = await a.ok('plan_create', { title: 'mine', steps: [], scope: 'profile' });
    expect((await a.err('plan_delete', { planId, ifVersion: 5 })).code).toBe('VERSION_CONFLICT');
    const bob = await agent({ store: a.store, config: { agent: 'bob' } });
    expect((await bob.err('plan_update', { planId, title: 'taken over' })).code).toBe('FORBIDDEN');
    expect((await bob.err('plan_delete', { planId })).code).toBe('FORBIDDEN');
    expect((await bob.ok('plan_get', { planId })).plan.title).toBe('mine');
  });

  it('plans default to global scope; a plan id is readable from anywhere in the namespace', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'A' } });
    const b = await agent({ store, config: { thread: 'B' } });
    const { planId } = await a.ok('plan_create', { title: 'mine', steps: [], scope: 'thread' });
    await a.ok('plan_create', { title: 'team', steps: [], scope: 'group:team' });
    const open = await a.ok('plan_create', { title: 'open', steps: [] });
    expect((await b.ok('plan_list', {})).plans.map((p: { planId: string }) => p.planId)).toEqual([open.planId]);
    expect((await b.ok('plan_list', { scope: 'thread:A' })).plans.map((p: { title: string }) => p.title)).toEqual(['mine']);
    expect((await b.ok('plan_list', { scope: 'group:team' })).plans.map((p: { title: string }) => p.title)).toEqual(['team']);
    expect((await b.ok('plan_get', { planId })).plan.title).toBe('mine');
  });

  it('filters by status, and completed plans expire after the plan TTL', async () => {
    const a = await agent({ config: { planTtlSeconds: 1 } });
    const done = await a.ok('plan_create', { title: 'done', steps: [] });
    await a.ok('plan_create', { title: 'open', steps: [] });
    await a.ok('plan_update', { planId: done.planId, status: 'completed' });
    expect((await a.ok('plan_list', { status: 'completed' })).plans.map((p: { title: string }) => p.title)).toEqual(['done']);
    expect((await a.ok('plan_list', { status: 'active' })).plans.map((p: { title: string }) => p.title)).toEqual(['open']);
    await sleep(1100);
    expect((await a.err('plan_get', { planId: done.planId })).code).toBe('NOT_FOUND');
    expect((await a.ok('plan_list', {})).plans.map((p: { title: string }) => p.title)).toEqual(['open']);
  });

  it('a plan can be watched like a key: watch {key: planId, scope: "plan"}', async () => {
    const store = memoryStore();
    const lead = await agent({ store });
    const worker = await agent({ store, config: { agent: 'worker' } });
    const { planId } = await lead.ok('plan_create', { title: 'T', steps: ['a'] });
    const waiting = lead.ok('watch', { key: planId, scope: 'plan', afterVersion: 1, waitMs: 10_000 });
    await sleep(30);
    await worker.ok('plan_update', { planId, stepUpdates: [{ id: 's1', status: 'in_progress', owner: 'worker' }] });
    const woke = await waiting;
    expect(woke).toMatchObject({ found: true, version: 2, timedOut: false });
    expect(woke.value.steps[0]).toMatchObject({ status: 'in_progress', owner: 'worker' });
  });

  it('blockedBy must name steps of the same plan and never form a cycle', async () => {
    const a = await agent();
    const cycle = await a.err('plan_create', {
      title: 'T',
      steps: [
        { content: 'a', blockedBy: ['s2'] },
        { content: 'b', blockedBy: ['s1'] },
      ],
    });
    expect(cycle).toMatchObject({ code: 'INVALID_ARGUMENT', details: { cycle: ['s1', 's2', 's1'] } });
    const { planId } = await a.ok('plan_create', {
      title: 'T',
      steps: ['a', { content: 'b', blockedBy: ['s1'] }, { content: 'c', blockedBy: ['s2'] }],
    });
    const longer = await a.err('plan_update', { planId, stepUpdates: [{ id: 's1', blockedBy: ['s3'] }] });
    expect(longer).toMatchObject({ code: 'INVALID_ARGUMENT', details: { cycle: ['s1', 's3', 's2', 's1'] } });
    expect((await a.err('plan_update', { planId, stepUpdates: [{ id: 's1', blockedBy: ['s9'] }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.ok('plan_get', { planId })).plan.version).toBe(1);
  });

  it('a step cannot start or complete while a blocker is neither completed nor skipped', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', 'b', { content: 'c', blockedBy: ['s1', 's2'] }] });
    for (const status of ['in_progress', 'completed']) {
      const refused = await a.err('plan_update', { planId, stepUpdates: [{ id: 's3', status }] });
      expect(refused).toMatchObject({ code: 'INVALID_TRANSITION', details: { stepId: 's3', blockedBy: ['s1', 's2'] } });
      expect(refused.message).toMatch(/plan_claim/);
    }
    await a.ok('plan_update', { planId, stepUpdates: [{ id: 's1', status: 'completed' }] });
    expect((await a.err('plan_update', { planId, stepUpdates: [{ id: 's3', status: 'completed' }] })).details).toMatchObject({
      blockedBy: ['s2'],
    });
    // finishing the blocker and the blocked step in one update is fine; so is a skipped blocker
    await a.ok('plan_update', {
      planId,
      stepUpdates: [
        { id: 's2', status: 'skipped' },
        { id: 's3', status: 'completed' },
      ],
    });
    const other = await a.ok('plan_create', { title: 'T', steps: ['a'] });
    const replaced = await a.err('plan_update', {
      planId: other.planId,
      ifVersion: 1,
      steps: [
        { id: 's1', content: 'a' },
        { content: 'y', status: 'in_progress', blockedBy: ['s1'] },
      ],
    });
    expect(replaced).toMatchObject({ code: 'INVALID_TRANSITION', details: { stepId: 's2', blockedBy: ['s1'] } });
  });

  it('plan_claim takes the next free step with a fence and a lease, then reports why nothing is left', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'ta' } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'tb' } });
    const carol = await agent({ store, config: { agent: 'carol', thread: 'tc' } });
    const { planId } = await alice.ok('plan_create', {
      title: 'T',
      steps: ['a', { content: 'b', blockedBy: ['s1'] }, { content: 'c', owner: 'carol' }],
    });
    const first = await alice.ok('plan_claim', { planId });
    expect(first).toMatchObject({
      claimed: true,
      step: { id: 's1', content: 'a', status: 'in_progress', owner: 'alice', claim: { thread: 'ta', fence: 1 } },
      claim: { fence: 1 },
    });
    const lease = Date.parse(first.claim.leaseUntil) - Date.now();
    expect(lease).toBeGreaterThan(590_000);
    expect(lease).toBeLessThanOrEqual(600_000);
    // s2 waits on s1, s3 belongs to carol
    expect(await bob.ok('plan_claim', { planId })).toEqual({ claimed: false, reason: 'all_blocked' });
    expect(await bob.ok('plan_claim', { planId, stepId: 's1' })).toMatchObject({
      claimed: false,
      reason: 'taken',
      step: { owner: 'alice' },
    });
    expect(await alice.ok('plan_claim', { planId, stepId: 's1' })).toMatchObject({
      claimed: true,
      step: { id: 's1' },
      claim: { fence: 1 },
    });
    const blocked = await bob.err('plan_claim', { planId, stepId: 's2' });
    expect(blocked).toMatchObject({ code: 'INVALID_TRANSITION', details: { stepId: 's2', blockedBy: ['s1'] } });
    expect(await alice.ok('plan_step', { planId, stepId: 's1', status: 'completed' })).toMatchObject({
      step: { id: 's1', status: 'completed' },
      done: 1,
      total: 3,
      unblocked: ['s2'],
    });
    expect(await bob.ok('plan_claim', { planId })).toMatchObject({
      claimed: true,
      step: { id: 's2', owner: 'bob', status: 'in_progress' },
      claim: { fence: 2 },
    });
    expect(await alice.ok('plan_claim', { planId })).toEqual({ claimed: false, reason: 'all_taken' });
    expect(await carol.ok('plan_claim', { planId })).toMatchObject({
      claimed: true,
      step: { id: 's3', owner: 'carol' },
      claim: { fence: 3 },
    });
    await bob.ok('plan_step', { planId, stepId: 's2', status: 'completed' });
    await carol.ok('plan_step', { planId, stepId: 's3', status: 'completed', note: 'fine' });
    expect(await bob.ok('plan_claim', { planId })).toEqual({ claimed: false, reason: 'all_done' });
    expect((await bob.err('plan_claim', { planId, stepId: 's3' })).code).toBe('INVALID_TRANSITION');
    expect((await bob.err('plan_claim', { planId, stepId: 's9' })).code).toBe('NOT_FOUND');
    expect((await bob.ok('plan_get', { planId })).plan.steps.map((s: { owner: string }) => s.owner)).toEqual(['alice', 'bob', 'carol']);
  });

  it('unblocked lists every step the change unblocked, also one waiting for the owner it was given', async () => {
    const store = memoryStore();
    const alice = await agent({ store, config: { agent: 'alice', thread: 'ta' } });
    const bob = await agent({ store, config: { agent: 'bob', thread: 'tb' } });
    const { planId } = await alice.ok('plan_create', {
      title: 'T',
      steps: ['a', { content: 'b', blockedBy: ['s1'], owner: 'bob' }, { content: 'c', blockedBy: ['s1'] }],
    });
    await alice.ok('plan_claim', { planId, stepId: 's1' });
    const done = await alice.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    expect(done.unblocked).toEqual(['s2', 's3']);
    expect(await bob.ok('plan_claim', { planId })).toMatchObject({ claimed: true, step: { id: 's2', owner: 'bob' } });
  });

  it('plan_claim is atomic: many claims at once never share a step', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead' } });
    const { planId } = await lead.ok('plan_create', { title: 'T', steps: ['a', 'b', 'c'] });
    const workers = await Promise.all([1, 2, 3, 4, 5].map((i) => agent({ store, config: { agent: `w${i}` } })));
    const results = await Promise.all(workers.map((w) => w.ok('plan_claim', { planId })));
    const claimed = results.filter((r) => r.claimed).map((r) => r.step.id);
    expect(claimed.sort()).toEqual(['s1', 's2', 's3']);
    expect(results.filter((r) => !r.claimed).map((r) => r.reason)).toEqual(['all_taken', 'all_taken']);
  });

  it('plan_list bounds its default result: newest first, 20 a page with nextCursor, titles cut short', async () => {
    const a = await agent();
    for (let i = 0; i < 25; i++) await a.ok('plan_create', { title: `${i} `.padEnd(1000, 'x'), steps: ['a'] });
    const listed = await a.raw('plan_list', {});
    const text = (listed.content[0] as { text: string }).text;
    expect(text.length).toBeLessThan(16 * 1024);
    const { plans, nextCursor } = JSON.parse(text);
    expect(plans).toHaveLength(20);
    expect(plans[0].title.startsWith('24 ')).toBe(true);
    expect(plans[0].title.length).toBeLessThanOrEqual(201);
    const rest = await a.ok('plan_list', { cursor: nextCursor });
    expect(rest.nextCursor).toBeUndefined();
    expect(rest.plans.map((p: { title: string }) => p.title.split(' ')[0])).toEqual(['4', '3', '2', '1', '0']);
    expect((await a.ok('plan_list', { limit: 100 })).plans).toHaveLength(25);
    expect((await a.err('plan_list', { cursor: nextCursor, status: 'active' })).code).toBe('INVALID_ARGUMENT');
  });
});

describe('plan_get summary', () => {
  const bytes = (reply: unknown): number => Buffer.byteLength(JSON.stringify(reply));
  const owner = (i: number): string => `worker-${i}-${'o'.repeat(140)}`;
  for (const [shape, blockedBy] of [
    ['a chain (each step blocked by the one before)', (i: number) => (i > 0 ? [`s${i}`] : undefined)],
    ['each step blocked by every step before it', (i: number) => (i > 0 ? Array.from({ length: i }, (_, j) => `s${j + 1}`) : undefined)],
  ] as const) {
    it(`stays under 16 KiB on a 200-step plan with long titles and owners, ${shape}: pages with nextCursor`, async () => {
      const a = await agent();
      const steps = Array.from({ length: 200 }, (_, i) => ({
        content: `step ${i} ${'c'.repeat(300)}`,
        owner: owner(i),
        blockedBy: blockedBy(i),
      }));
      const { planId } = await a.ok('plan_create', { title: `T ${'t'.repeat(3990)}`, steps });
      const full = (await a.ok('plan_get', { planId, detail: 'full' })).plan;
      expect(full.steps).toHaveLength(200);
      expect(full).not.toHaveProperty('nextCursor');
      expect(full.title).toHaveLength(3992);
      const seen: Array<{ id: string; owner?: string; blockedBy?: string[] }> = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const reply = await a.raw('plan_get', cursor === undefined ? { planId } : { planId, cursor });
        expect(reply.isError).toBeFalsy();
        expect(Buffer.byteLength((reply.content[0] as { text: string }).text)).toBeLessThanOrEqual(16 * 1024);
        const page = reply.structuredContent as {
          plan: { title: string; total: number; steps: typeof seen };
          nextCursor?: string;
          hint?: string;
        };
        expect(bytes(page)).toBeLessThanOrEqual(16 * 1024);
        expect(page.plan.title.length).toBeLessThanOrEqual(201);
        expect(page.plan.total).toBe(200);
        expect(page.plan.steps.length).toBeGreaterThan(0);
        seen.push(...page.plan.steps);
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== undefined && pages < 100);
      expect(pages).toBeGreaterThan(1);
      // every step once, in order, with its owner and blockers whole
      expect(seen.map((s) => s.id)).toEqual(full.steps.map((s: { id: string }) => s.id));
      expect(seen.map((s) => [s.owner, s.blockedBy])).toEqual(
        full.steps.map((s: { owner: string; blockedBy?: string[] }) => [s.owner, s.blockedBy]),
      );
    });
  }

  it('a cursor starts at its step, also with detail full; a step no longer in the plan is INVALID_ARGUMENT', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', 'b', 'c'] });
    expect((await a.ok('plan_get', { planId, cursor: 's2' })).plan.steps.map((s: { id: string }) => s.id)).toEqual(['s2', 's3']);
    expect((await a.ok('plan_get', { planId, cursor: 's3', detail: 'full' })).plan.steps.map((s: { id: string }) => s.id)).toEqual(['s3']);
    const error = await a.err('plan_get', { planId, cursor: 's9' });
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'cursor' } });
    expect(error.message).toContain('without cursor');
  });
});

describe('plan_list hint', () => {
  it('names tools as registered (namespace prefix), and leaves out a sentence about a tool the server lacks', async () => {
    const prefixed = await agent({ config: { namespace: 'bb' } });
    const hint = (await prefixed.ok('plan_list', {})).hint;
    expect(hint).toMatch(/bb_plan_create/);
    expect(hint).toMatch(/bb_plan_list with scope "thread:ID"/);
    expect(hint).not.toMatch(/\{tool:/);
    const reader = await agent({ config: { readOnly: true } });
    const names = ((await reader.client.listTools()).tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toContain('plan_list');
    expect(names).not.toContain('plan_create');
    const partial = (await reader.ok('plan_list', {})).hint;
    expect(partial).toMatch(/^No plans in global/);
    expect(partial).toMatch(/plan_list with scope "thread:ID"/);
    expect(partial).not.toMatch(/plan_create|\{tool:/);
  });
});
