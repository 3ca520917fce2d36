import { afterEach, describe, expect, it } from 'vitest';
import { openBackend } from '../../src/store/open.js';
import { prefixEnd } from '../../src/store/keys.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, memoryStore, type Connected } from '../helpers.js';
import { sharedStores } from '../stores.js';

const agent = agentsClosedAfterEach();
const stores: VersionedStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

const message = (i: number) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}: ${'words of a conversation '.repeat(30)}` });

/** What a checkpoint of the thread holds, read through the tools; versions left out (a restore continues above them). */
async function threadState(a: Connected) {
  const plans = (await a.ok('plan_list', { scope: 'thread' })).plans as Array<{ planId: string }>;
  const state = {
    messages: (await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value,
    scratchpad: await a.ok('scratchpad_read'),
    plans: await Promise.all(
      plans
        .map((p) => p.planId)
        .sort()
        .map((planId) => a.ok('plan_get', { planId })),
    ),
  };
  return JSON.parse(JSON.stringify(state, (key, value) => (key === 'version' ? undefined : value)));
}

/** A server of thread T (every checkpoint kept; or another agent and thread) on its own connection to the store at `url`. */
async function serverOn(url: string, config: Record<string, unknown> = { thread: 'T' }): Promise<Connected> {
  const store = new VersionedStore(await openBackend(url), { sweepIntervalMs: 0 });
  stores.push(store);
  return agent({ store, config: { keepCheckpoints: 1000, ...config } });
}

describe.each(sharedStores().map((s) => [s.name, s] as const))('checkpoints on %s', (_name, shared) => {
  it('two servers saving one growing thread in turn: every checkpoint restores exactly, deleting them all frees every blob', async () => {
    const url = shared.fresh();
    const [a, b] = [await serverOn(url), await serverOn(url)];
    const saved: Array<{ id: string; state: unknown }> = [];
    for (let i = 0; i < 12; i++) {
      // a saves twice in a row, then b once: each server's guess of the newest checkpoint is sometimes stale
      const who = i % 3 === 2 ? b : a;
      await who.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      if (i % 4 === 1) await who.ok('plan_create', { title: `plan ${i}`, steps: ['a', 'b'], scope: 'thread' });
      if (i % 4 === 3) await who.ok('scratchpad_write', { kind: 'observation', value: `obs ${i}` });
      if (i === 7) {
        // rewritten, not appended to: longer than before, its first element changed but as long as it was
        const value = (await who.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value;
        value[0] = { ...value[0], content: value[0].content.toUpperCase() };
        await who.ok('state_set', { key: 'messages', value: [...value, message(50), message(51)], scope: 'thread' });
      }
      const { checkpointId } = await who.ok('checkpoint_save', {});
      saved.push({ id: checkpointId, state: await threadState(who) });
    }
    for (const [at, { id, state }] of saved.entries()) {
      const restorer = at % 2 ? a : b;
      await restorer.ok('checkpoint_restore', { checkpointId: id });
      expect(await threadState(a)).toEqual(state);
    }
    for (const { id } of saved) await a.ok('checkpoint_delete', { checkpointId: id });
    const { entries } = await a.store.list({ lo: '', hi: prefixEnd(''), limit: 100_000 });
    expect(entries.filter(([key]) => key.includes('~cp-blob:') || key.includes('~cp-ref:'))).toEqual([]);
  });
});

describe.each(sharedStores().map((s) => [s.name, s] as const))('checkpoint_restore and plan work on %s', (_name, shared) => {
  it('a restore on one server never takes back the steps a worker on another server claimed or finished', async () => {
    const url = shared.fresh();
    const owner = await serverOn(url, { agent: 'owner', thread: 'T' });
    const worker = await serverOn(url, { agent: 'w', thread: 'tw' });
    const { planId } = await owner.ok('plan_create', { title: 'ship it', steps: ['a', 'b', 'c'], scope: 'thread' });
    const { checkpointId } = await owner.ok('checkpoint_save', {});
    await worker.ok('plan_claim', { planId, stepId: 's1' });
    await worker.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    const held = (await worker.ok('plan_claim', { planId, stepId: 's2' })).claim.fence;
    await owner.ok('plan_update', { planId, title: 'renamed since' });

    await owner.ok('checkpoint_restore', { checkpointId });
    const plan = (await worker.ok('plan_get', { planId, detail: 'full' })).plan;
    expect(plan.title).toBe('ship it');
    expect(plan.steps.map((s: { id: string; status: string; owner?: string }) => [s.id, s.status, s.owner])).toEqual([
      ['s1', 'completed', 'w'],
      ['s2', 'in_progress', 'w'],
      ['s3', 'pending', undefined],
    ]);
    // the worker goes on with its grant, and the next grant is above it
    expect(await worker.ok('plan_step', { planId, stepId: 's2', status: 'completed', fence: held })).toMatchObject({ done: 2 });
    expect((await worker.ok('plan_claim', { planId, stepId: 's3' })).claim.fence).toBeGreaterThan(held);
  });
});

describe.each(sharedStores().map((s) => [s.name, s] as const))('checkpoint listing on %s', (_name, shared) => {
  it('a server that saved once lists the newest checkpoints another server saved since, and pages back to its own', async () => {
    const url = shared.fresh();
    const [a, b] = [await serverOn(url), await serverOn(url)];
    const first = (await a.ok('checkpoint_save', { label: 'a' })).checkpointId as string;
    const theirs: string[] = [];
    for (let i = 0; i < 40; i++) {
      await b.ok('state_set', { key: `k${i}`, value: i, scope: 'thread' }); // revisions between the saves
      theirs.push((await b.ok('checkpoint_save', {})).checkpointId);
    }
    const ids = (page: { checkpoints: Array<{ checkpointId: string }> }) => page.checkpoints.map((c) => c.checkpointId);
    expect(ids(await a.ok('checkpoint_list', { limit: 10 }))).toEqual(theirs.slice(-10).reverse());
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await a.ok('checkpoint_list', { limit: 7, ...(cursor ? { cursor } : {}) });
      seen.push(...ids(page));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...theirs].reverse().concat(first));
  });
});

describe.each(sharedStores().map((s) => [s.name, s] as const))('checkpoint retention on %s', (_name, shared) => {
  it('keeps the newest 3 of a growing thread: each restores exactly, and deleting them frees every blob', async () => {
    const store = new VersionedStore(await openBackend(shared.fresh()), { sweepIntervalMs: 0 });
    stores.push(store);
    const a = await agent({ store, config: { thread: 'T', keepCheckpoints: 3 } });
    const saved: Array<{ id: string; messages: unknown }> = [];
    for (let i = 0; i < 8; i++) {
      await a.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      const { checkpointId } = await a.ok('checkpoint_save', {});
      saved.push({ id: checkpointId, messages: (await threadState(a)).messages });
    }
    const kept = saved.slice(-3);
    expect((await a.ok('checkpoint_list', {})).checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual(
      kept.map((c) => c.id).reverse(),
    );
    for (const { id, messages } of kept) {
      await a.ok('checkpoint_restore', { checkpointId: id });
      expect((await threadState(a)).messages).toEqual(messages);
    }
    for (const { id } of kept) await a.ok('checkpoint_delete', { checkpointId: id });
    const { entries } = await a.store.list({ lo: '', hi: prefixEnd(''), limit: 100_000 });
    expect(entries.filter(([key]) => key.includes('~cp-blob:') || key.includes('~cp-ref:'))).toEqual([]);
  });
});

describe('checkpoint_save after a run_start on another connection', () => {
  it('saves the thread at the run the other connection started, with the records of that run', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T' } });
    const b = await agent({ store, config: { thread: 'T' } });
    const { run } = await b.ok('run_start', {});
    await b.ok('state_set', { key: 'k', value: 'in the new run', scope: 'run' });
    const saved = await a.ok('checkpoint_save', {});
    expect(saved.run).toBe(run);
    await b.ok('state_set', { key: 'k', value: 'changed', scope: 'run' });
    await a.ok('checkpoint_restore', { checkpointId: saved.checkpointId });
    expect((await b.ok('state_get', { key: 'k', scope: 'run' })).value).toBe('in the new run');
  });
});
