import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDocument } from '../../src/services/checkpoint.js';
import { prefixEnd } from '../../src/store/keys.js';
import { agentsClosedAfterEach, memoryStore, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();
const FIXTURES = join(import.meta.dirname, '..', 'fixtures');

/** Everything a thread's checkpoint covers, read through the tools. */
async function threadState(a: Connected) {
  const plans = (await a.ok('plan_list', { scope: 'thread' })).plans;
  return {
    thread: (await a.ok('state_snapshot', { scope: 'thread' })).entries,
    run: (await a.ok('state_snapshot', { scope: 'run' })).entries,
    runId: (await a.ok('whoami')).run,
    plans: await Promise.all(plans.map((p: { planId: string }) => a.ok('plan_get', { planId: p.planId }))),
    scratchpad: await a.ok('scratchpad_read'),
    final: await a.ok('final_answer_get', { waitMs: 0 }),
    lifecycle: await a.ok('agent_state_get'),
    history: await a.ok('history_list', { limit: 500 }),
  };
}

async function fillEveryFamily(a: Connected, tag: string): Promise<void> {
  await a.ok('state_set', { key: 'k', value: `thread-${tag}`, scope: 'thread' });
  await a.ok('state_set', { key: `only-${tag}`, value: 1, scope: 'thread' });
  await a.ok('state_set', { key: 'k', value: `run-${tag}`, scope: 'run' });
  await a.ok('plan_create', { title: `plan ${tag}`, steps: ['a', 'b'], scope: 'thread' });
  await a.ok('scratchpad_write', { kind: 'observation', value: `obs ${tag}` });
  await a.ok('budget_step', {});
  await a.ok('history_append', { kind: 'note', content: tag });
}

describe('checkpoint tools', () => {
  it('save → change every family → restore brings every family back exactly; other scopes and threads untouched', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T', maxIterations: 10 } });
    const other = await agent({ store, config: { thread: 'U' } });
    await a.ok('agent_state_set', { state: 'running' });
    await fillEveryFamily(a, 'before');
    const saved = await threadState(a);
    const cp = await a.ok('checkpoint_save', { label: 'good point' });
    expect(cp).toMatchObject({
      checkpointId: expect.stringMatching(/^cp-/),
      thread: 'T',
      label: 'good point',
      records: expect.any(Number),
    });

    await fillEveryFamily(a, 'after');
    await a.ok('state_delete', { key: 'only-before', scope: 'thread' });
    await a.ok('final_answer_set', { content: 'answer after' });
    await a.ok('agent_state_set', { state: 'paused' });
    await a.ok('state_set', { key: 'g', value: 'global after save' });
    await other.ok('state_set', { key: 'k', value: 'other thread', scope: 'thread' });
    expect(await threadState(a)).not.toEqual(saved);

    const spent = (await a.ok('budget_status')).budgets;
    expect(spent).toEqual([{ name: 'iterations', current: 2, max: 10, remaining: 8, reached: false }]);
    const answered = await a.ok('final_answer_get');
    const restored = await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    expect(restored).toMatchObject({ thread: 'T', records: cp.records, budgetsKept: true });
    // every family as saved, but the final answer given since: a run answers once, and a restore does not take it back
    expect(await threadState(a)).toEqual({ ...saved, final: answered });
    expect((await a.err('final_answer_set', { content: 'a second answer' })).code).toBe('MULTIPLE_FINAL_ANSWERS');
    // spending is never undone: the budgets are as they were before the restore
    expect((await a.ok('budget_status')).budgets).toEqual(spent);
    expect((await a.ok('state_get', { key: 'g' })).value).toBe('global after save');
    expect((await other.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('other thread');
  });

  it('a run that ended stays ended: its checkpoints do not reopen it, and a restore in a later run keeps the answer given', async () => {
    const a = await agent({ config: { agent: 'w', thread: 'T' } });
    await a.ok('agent_state_set', { state: 'running' });
    const { checkpointId } = await a.ok('checkpoint_save', {});
    await a.ok('final_answer_set', { content: 'A' });
    await a.ok('run_end', { status: 'finished' });
    const refused = await a.err('checkpoint_restore', { checkpointId });
    expect(refused.code).toBe('RUN_FINISHED');
    expect((await a.ok('agent_state_get')).state).toBe('finished');
    expect((await a.ok('final_answer_get')).answer.content).toBe('A');
    // from a new run, going back to a checkpoint of the ended one keeps its answer: it cannot answer again
    await a.ok('run_start', {});
    await a.ok('checkpoint_restore', { checkpointId });
    expect((await a.ok('final_answer_get')).answer.content).toBe('A');
    expect((await a.err('final_answer_set', { content: 'B' })).code).toBe('MULTIPLE_FINAL_ANSWERS');
  });

  it('a run moved to finished stays finished: a checkpoint of its own does not reopen it to spend, answer or write', async () => {
    const a = await agent({ config: { agent: 'w', thread: 'T', maxIterations: 5 } });
    await a.ok('agent_state_set', { state: 'running' });
    const { checkpointId } = await a.ok('checkpoint_save', {});
    await a.ok('agent_state_set', { state: 'finished' });
    const refused = await a.err('checkpoint_restore', { checkpointId });
    expect(refused).toMatchObject({ code: 'RUN_FINISHED', details: { state: 'finished' } });
    expect((await a.ok('agent_state_get')).state).toBe('finished');
    for (const [tool, args] of [
      ['final_answer_set', { content: 'late' }],
      ['budget_step', {}],
      ['state_set', { key: 'k', value: 1, scope: 'run' }],
    ] as const)
      expect((await a.err(tool, args)).code, tool).toBe('RUN_FINISHED');
    expect((await a.ok('budget_status')).budgets[0].current).toBe(0);
    // from a new run, the finished run's checkpoint goes back to it as saved (as for a run that ended)
    await a.ok('run_start', {});
    expect((await a.ok('checkpoint_restore', { checkpointId })).run).toBeDefined();
  });

  it("a restore into a run that had answered brings its answer back when a later run's answer replaced it: the run cannot answer twice", async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'w', thread: 'T' } });
    const other = await agent({ store, config: { agent: 'w', thread: 'T' } }); // another connection on the thread
    await a.ok('final_answer_set', { content: 'one' });
    const { checkpointId, run } = await a.ok('checkpoint_save', {});
    await a.ok('run_start', {});
    await other.ok('final_answer_set', { content: 'two' });
    expect((await a.ok('checkpoint_restore', { checkpointId })).run).toBe(run);
    for (const who of [a, other]) expect((await who.ok('final_answer_get', { waitMs: 0 })).answer).toMatchObject({ content: 'one', run });
    expect((await other.err('final_answer_set', { content: 'three' })).code).toBe('MULTIPLE_FINAL_ANSWERS');
    expect((await a.ok('final_answer_get', { waitMs: 0, thread: 'T' })).answer.content).toBe('one');
  });

  it('lists newest first and keeps only the newest N per thread', async () => {
    const a = await agent({ config: { keepCheckpoints: 3 } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      await a.ok('state_set', { key: 'i', value: i, scope: 'thread' });
      ids.push((await a.ok('checkpoint_save', { label: `#${i}` })).checkpointId);
    }
    const { checkpoints } = await a.ok('checkpoint_list', {});
    expect(checkpoints.map((c: { label: string }) => c.label)).toEqual(['#4', '#3', '#2']);
    expect((await a.err('checkpoint_restore', { checkpointId: ids[0] })).code).toBe('NOT_FOUND');
    await a.ok('checkpoint_restore', { checkpointId: ids[2] });
    expect((await a.ok('state_get', { key: 'i', scope: 'thread' })).value).toBe(2);
  });

  it('deletes; unknown ids are NOT_FOUND and malformed ones INVALID_ARGUMENT', async () => {
    const a = await agent();
    const { checkpointId } = await a.ok('checkpoint_save', {});
    expect(await a.ok('checkpoint_delete', { checkpointId })).toEqual({ deleted: true });
    expect((await a.err('checkpoint_delete', { checkpointId })).code).toBe('NOT_FOUND');
    expect((await a.err('checkpoint_restore', { checkpointId: 'cp-000000000-00000000' })).code).toBe('NOT_FOUND');
    expect((await a.err('checkpoint_restore', { checkpointId: 'nope' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.ok('checkpoint_list', {})).checkpoints).toEqual([]);
  });

  it('a restore that raced a newer write is refused with ifRevision', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: 1, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    const { revision } = await a.ok('state_set', { key: 'k', value: 2, scope: 'thread' });
    const conflict = await a.err('checkpoint_restore', { checkpointId: cp.checkpointId, ifRevision: cp.revision });
    expect(conflict).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentRevision: revision } });
    expect((await a.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe(2);
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId, ifRevision: revision });
    expect((await a.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe(1);
  });

  it("a restore retried with its idempotencyKey from the checkpoint's run it moved to applies nothing again", async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: 1, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    await a.ok('run_start', {});
    const restored = await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId, idempotencyKey: 'back' });
    expect((await a.ok('whoami')).run).toBe(cp.run);
    await a.ok('state_set', { key: 'k', value: 'written after the restore', scope: 'thread' });
    expect(await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId, idempotencyKey: 'back' })).toEqual(restored);
    expect((await a.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('written after the restore');
  });

  it('a damaged checkpoint fails with CHECKPOINT_CORRUPT and changes nothing', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: { big: 'saved value' }, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    await a.ok('state_set', { key: 'k', value: 'current', scope: 'thread' });
    // damage every stored checkpoint blob directly in the store
    const { entries } = await a.store.list({ lo: '', hi: prefixEnd(''), limit: 10_000 });
    const blobs = entries.filter(([key]) => key.includes('~cp-blob:'));
    expect(blobs.length).toBeGreaterThan(0);
    await a.store.transact(async (tx) => {
      for (const [key, entry] of blobs) await tx.putEntry(key, { ...entry, value: 'tampered' });
      return {};
    });
    const before = await a.store.revision();
    const error = await a.err('checkpoint_restore', { checkpointId: cp.checkpointId });
    expect(error.code).toBe('CHECKPOINT_CORRUPT');
    expect(await a.store.revision()).toBe(before);
    expect((await a.ok('state_get', { key: 'k', scope: 'thread' })).value).toBe('current');
    expect(await a.ok('checkpoint_delete', { checkpointId: cp.checkpointId })).toEqual({ deleted: true });
  });

  it('stores each distinct value once: unchanged state costs no new blobs', async () => {
    const a = await agent();
    for (let i = 0; i < 50; i++) await a.ok('state_set', { key: `k${i}`, value: 'x'.repeat(1000) + i, scope: 'thread' });
    const blobs = async () =>
      (await a.store.list({ lo: '', hi: prefixEnd(''), limit: 10_000 })).entries.filter(([key]) => key.includes('~cp-blob:')).length;
    await a.ok('checkpoint_save', {});
    const once = await blobs();
    for (let i = 0; i < 5; i++) await a.ok('checkpoint_save', {});
    expect(await blobs()).toBe(once);
    await a.ok('state_set', { key: 'k0', value: 'changed', scope: 'thread' });
    await a.ok('checkpoint_save', {});
    expect(await blobs()).toBe(once + 1);
    // deleting every checkpoint frees every blob
    for (const c of (await a.ok('checkpoint_list', {})).checkpoints) await a.ok('checkpoint_delete', { checkpointId: c.checkpointId });
    expect(await blobs()).toBe(0);
  });

  it('run_end saves a checkpoint of the thread', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'k', value: 'end state', scope: 'thread' });
    const ended = await a.ok('run_end', { status: 'finished' });
    expect(ended.checkpointId).toMatch(/^cp-/);
    const { checkpoints } = await a.ok('checkpoint_list', {});
    expect(checkpoints[0]).toMatchObject({ checkpointId: ended.checkpointId, label: 'run_end: finished' });
  });

  it('checkpoints are per thread and readable by thread id', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'A' } });
    const b = await agent({ store, config: { thread: 'B' } });
    await a.ok('checkpoint_save', { label: 'a1' });
    expect((await b.ok('checkpoint_list', {})).checkpoints).toEqual([]);
    expect((await b.ok('checkpoint_list', { thread: 'A' })).checkpoints.map((c: { label: string }) => c.label)).toEqual(['a1']);
  });
});

describe('checkpoint restore is atomic', () => {
  it('a concurrent reader on another connection sees the state before or after a restore, never half', async () => {
    const { SqliteBackend } = await import('../../src/store/sqlite/backend.js');
    const { VersionedStore } = await import('../../src/store/versioned-store.js');
    const { tempDir } = await import('../contract/backends.js');
    const path = join(tempDir(), 'atomic.db');
    const store = new VersionedStore(await SqliteBackend.open(path), { sweepIntervalMs: 0 });
    const readerStore = new VersionedStore(await SqliteBackend.open(path), { sweepIntervalMs: 0 });
    const a = await agent({ store, config: { thread: 'T' } });
    const reader = await agent({ store: readerStore, config: { thread: 'R' } });
    try {
      const ops = (tag: string, from: number) =>
        Array.from({ length: 50 }, (_, i) => ({ op: 'set', key: `k${String(from + i).padStart(3, '0')}`, value: tag, scope: 'thread' }));
      await a.ok('state_batch', { ops: ops('old', 0) });
      const cp = await a.ok('checkpoint_save', {});
      const before = JSON.stringify((await reader.ok('state_snapshot', { scope: 'thread:T' })).entries);
      // one atomic batch: new values for the saved keys, and keys the checkpoint does not have
      const change = () => a.ok('state_batch', { ops: [...ops('new', 0), ...ops('extra', 50)] });
      await change();
      const after = JSON.stringify((await reader.ok('state_snapshot', { scope: 'thread:T' })).entries);
      const seen: string[] = [];
      let restoring = true;
      const reading = (async () => {
        while (restoring) {
          seen.push(JSON.stringify((await reader.ok('state_snapshot', { scope: 'thread:T' })).entries));
          // A real client's next request comes through I/O; an in-memory loop of synchronous SQLite reads must yield
          // the event loop too, or the writer's commit (started on the next turn, to group concurrent writes) never runs.
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      for (let i = 0; i < 5; i++) {
        await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
        await change();
      }
      restoring = false;
      await reading;
      expect(seen.length).toBeGreaterThan(0);
      // every read is one of the two whole states; anything else would be half a restore (or half a batch)
      const halves = seen.filter((x) => x !== before && x !== after);
      expect(halves).toEqual([]);
    } finally {
      await reader.close();
      await a.close();
      await readerStore.close();
      await store.close();
    }
  });
});

describe('checkpoint documents', () => {
  it('loads the format-1 fixture by migrating it, and restores it', async () => {
    const text = readFileSync(join(FIXTURES, 'checkpoint-format1.json'), 'utf8');
    const doc = loadDocument(text);
    expect(doc).toMatchObject({ format: 2, kind: 'thread', thread: 'legacy-thread', run: 'legacy-run' });
    const a = await agent({ config: { thread: 'legacy-thread' } });
    await a.bb.services.bundles.import(doc);
    await a.bb.session.refresh();
    expect(await a.ok('state_get', { key: 'goal', scope: 'thread' })).toMatchObject({
      value: { text: 'migrated from format 1' },
      version: 3,
      updatedBy: 'old-agent',
      updatedAt: '2026-01-02T03:04:05.000Z',
    });
    expect((await a.ok('state_get', { key: 'step', scope: 'run' })).value).toBe(7);
    expect(await a.ok('agent_state_get')).toMatchObject({ state: 'paused', reason: 'waiting for review', run: 'legacy-run' });
  });

  it('refuses corrupt and truncated documents with CHECKPOINT_CORRUPT', () => {
    const good = readFileSync(join(FIXTURES, 'checkpoint-format1.json'), 'utf8');
    for (const bad of [
      good.slice(0, good.length / 2),
      '',
      '[]',
      '{"format": 9}',
      '{"format": 2, "kind": "thread", "thread": "t", "run": "r", "records": {"x": {"v": 1}}}',
      '{"format": 2, "kind": "thread", "thread": "bad id", "run": "r", "records": {}}',
    ]) {
      expect(() => loadDocument(bad), bad.slice(0, 40)).toThrow(expect.objectContaining({ code: 'CHECKPOINT_CORRUPT' }));
    }
  });
});
