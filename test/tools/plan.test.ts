import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('plan tools', () => {
  it('creates a plan with stable step ids, reads, lists and deletes it', async () => {
    const a = await agent({ config: { agent: 'lead' } });
    const { planId, plan } = await a.ok('plan_create', {
      title: 'Ship v1',
      steps: ['write code', { content: 'test it', owner: 'qa', blockedBy: ['s1'] }],
    });
    expect(planId).toMatch(/^plan-[0-9a-f]{12}$/);
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
    expect((await a.ok('plan_get', { planId })).plan).toEqual(plan);
    const listed = await a.ok('plan_list', {});
    expect(listed.plans).toHaveLength(1);
    expect(listed.plans[0]).toMatchObject({ planId, stepCount: 2, doneCount: 0 });
    expect(listed.plans[0].steps).toBeUndefined();
    expect(await a.ok('plan_delete', { planId })).toEqual({ deleted: true });
    expect((await a.err('plan_get', { planId })).code).toBe('NOT_FOUND');
    expect((await a.err('plan_delete', { planId })).code).toBe('NOT_FOUND');
    expect((await a.ok('plan_list', {})).plans).toEqual([]);
  });

  it('stepUpdates edit single steps; steps replaces the list keeping ids; ifVersion guards concurrent edits', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', 'b'] });
    const v2 = await a.ok('plan_update', { planId, ifVersion: 1, stepUpdates: [{ id: 's1', status: 'completed', note: 'done fast' }] });
    expect(v2.plan.steps[0]).toEqual({ id: 's1', content: 'a', status: 'completed', note: 'done fast' });
    expect(v2.plan.version).toBe(2);
    const stale = await a.err('plan_update', { planId, ifVersion: 1, title: 'lost edit' });
    expect(stale).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentVersion: 2 } });
    const v3 = await a.ok('plan_update', { planId, steps: [{ id: 's2', content: 'b (renamed)' }, 'c'] });
    expect(v3.plan.steps.map((s: { id: string }) => s.id)).toEqual(['s2', 's3']);
    const cleared = await a.ok('plan_update', { planId, stepUpdates: [{ id: 's3', owner: 'me' }] });
    expect(cleared.plan.steps[1].owner).toBe('me');
    const again = await a.ok('plan_update', { planId, stepUpdates: [{ id: 's3', owner: null }] });
    expect(again.plan.steps[1].owner).toBeUndefined();
  });

  it('reports bad plan edits with SPEC codes and changes nothing', async () => {
    const a = await agent();
    const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a'] });
    expect((await a.err('plan_update', { planId, stepUpdates: [{ id: 's9', status: 'completed' }] })).code).toBe('NOT_FOUND');
    expect((await a.err('plan_update', { planId, steps: [{ id: 's1', content: 'x', blockedBy: ['s1'] }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_update', { planId, steps: [{ id: 's1', content: 'x', blockedBy: ['nope'] }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_update', { planId, steps: [{ id: 's7', content: 'x' }] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_create', { title: '', steps: [] })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_get', { planId: 'not-a-plan' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('plan_get', { planId: 'plan-000000000000' })).code).toBe('NOT_FOUND');
    expect((await a.ok('plan_get', { planId })).plan.version).toBe(1);
  });

  it('a plan in another agent\'s profile is FORBIDDEN to create or change; a stale ifVersion on delete conflicts', async () => {
    const a = await agent({ config: { agent: 'alice' } });
    expect((await a.err('plan_create', { title: 't', steps: [], scope: 'profile:bob' })).code).toBe('FORBIDDEN');
    const { planId } = await a.ok('plan_create', { title: 'mine', steps: [], scope: 'profile' });
    expect((await a.err('plan_delete', { planId, ifVersion: 5 })).code).toBe('VERSION_CONFLICT');
    const bob = await agent({ store: a.store, config: { agent: 'bob' } });
    expect((await bob.err('plan_update', { planId, title: 'taken over' })).code).toBe('FORBIDDEN');
    expect((await bob.err('plan_delete', { planId })).code).toBe('FORBIDDEN');
    expect((await bob.ok('plan_get', { planId })).plan.title).toBe('mine');
  });

  it('plans default to thread scope; a plan id is readable from anywhere in the namespace', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'A' } });
    const b = await agent({ store, config: { thread: 'B' } });
    const { planId } = await a.ok('plan_create', { title: 'mine', steps: [] });
    await a.ok('plan_create', { title: 'team', steps: [], scope: 'group:team' });
    expect((await b.ok('plan_list', {})).plans).toEqual([]);
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
    const worker = await agent({ store });
    const { planId } = await lead.ok('plan_create', { title: 'T', steps: ['a'] });
    const waiting = lead.ok('watch', { key: planId, scope: 'plan', afterVersion: 1, timeoutMs: 10_000 });
    await sleep(30);
    await worker.ok('plan_update', { planId, stepUpdates: [{ id: 's1', status: 'in_progress', owner: 'worker' }] });
    const woke = await waiting;
    expect(woke).toMatchObject({ found: true, version: 2, timedOut: false });
    expect(woke.value.steps[0]).toMatchObject({ status: 'in_progress', owner: 'worker' });
  });
});
