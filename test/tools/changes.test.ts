import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../src/store/memory/backend.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('state_changes', () => {
  it('without afterRevision returns a starting point; then every change after it, in order, once', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'before', value: 0 });
    const start = await a.ok('state_changes', {});
    expect(start.changes).toEqual([]);
    const s1 = await a.ok('state_set', { key: 'x', value: 1 });
    const u = await a.ok('state_update', { key: 'n', op: 'increment', value: 2 });
    const d = await a.ok('state_delete', { key: 'x' });
    const b = await a.ok('state_batch', {
      ops: [
        { op: 'set', key: 'y', value: 1, scope: 'thread' },
        { op: 'set', key: 'z', value: 2 },
      ],
    });
    const first = await a.ok('state_changes', { afterRevision: start.revision });
    const thread = (await a.ok('whoami')).thread;
    expect(first.changes).toEqual([
      { scope: 'global', key: 'x', version: 1, revision: s1.revision, deleted: false },
      { scope: 'global', key: 'n', version: 1, revision: u.revision, deleted: false },
      { scope: 'global', key: 'x', version: 1, revision: d.revision, deleted: true },
      { scope: 'global', key: 'z', version: 1, revision: b.revision, deleted: false },
      { scope: `thread:${thread}`, key: 'y', version: 1, revision: b.revision, deleted: false },
    ]);
    expect(first.revision).toBe(b.revision);
    // nothing new: nothing again, and a wait of 0 that ended with nothing says so, as watch does
    expect(await a.ok('state_changes', { afterRevision: first.revision, waitMs: 0 })).toEqual({
      changes: [],
      revision: first.revision,
      timedOut: true,
    });
    expect(await a.ok('watch', { key: 'never', waitMs: 0 })).toEqual({ found: false, timedOut: true });
    // a wait of 0 that found changes is no time-out
    expect(await a.ok('state_changes', { afterRevision: start.revision, waitMs: 0 })).not.toHaveProperty('timedOut');
  });

  it('filters by scope and key prefix, and shows plans as scope "plan" but never internal records', async () => {
    const a = await agent();
    const { revision } = await a.ok('state_changes', {});
    await a.ok('state_set', { key: 'task/1', value: 1 });
    await a.ok('state_set', { key: 'note', value: 1 });
    await a.ok('state_set', { key: 'task/2', value: 1, scope: 'thread' });
    const { planId } = await a.ok('plan_create', { title: 'p', steps: ['a'] });
    await a.ok('history_append', { kind: 'note', content: 'internal' });
    await a.ok('state_set', { key: 'idem', value: 1, idempotencyKey: 'once' });
    const all = await a.ok('state_changes', { afterRevision: revision });
    expect(all.changes.map((c: { scope: string; key: string }) => `${c.scope.split(':')[0]}/${c.key}`)).toEqual([
      'global/task/1',
      'global/note',
      'thread/task/2',
      `plan/${planId}`,
      'global/idem',
    ]);
    const global = await a.ok('state_changes', { afterRevision: revision, scope: 'global', prefix: 'task/' });
    expect(global.changes.map((c: { key: string }) => c.key)).toEqual(['task/1']);
    const anyScope = await a.ok('state_changes', { afterRevision: revision, prefix: 'task/' });
    expect(anyScope.changes.map((c: { key: string }) => c.key)).toEqual(['task/1', 'task/2']);
    const plans = await a.ok('state_changes', { afterRevision: revision, scope: 'plan' });
    expect(plans.changes).toMatchObject([{ scope: 'plan', key: planId, version: 1, deleted: false }]);
  });

  it("names the caller's own run and parent scopes as the state tools take them; another thread's run stays its label", async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'a-thread' } });
    const b = await agent({ store, config: { thread: 'b-thread' } });
    const { revision } = await a.ok('state_changes', {});
    await a.ok('state_set', { key: 'draft', value: 1, scope: 'run' });
    await a.ok('state_set', { key: 'shared', value: 2, scope: 'parent' });
    const mine = await a.ok('state_changes', { afterRevision: revision });
    expect(mine.changes.map((c: { scope: string; key: string }) => [c.scope, c.key])).toEqual([
      ['run', 'draft'],
      ['parent', 'shared'],
    ]);
    // each is read back with the scope the change names
    for (const c of mine.changes) expect((await a.ok('state_get', { key: c.key, scope: c.scope })).found).toBe(true);
    const filtered = await a.ok('state_changes', { afterRevision: revision, scope: 'run' });
    expect(filtered.changes.map((c: { scope: string }) => c.scope)).toEqual(['run']);
    const theirs = await b.ok('state_changes', { afterRevision: revision });
    expect(theirs.changes.map((c: { scope: string }) => c.scope)).toEqual([
      `run:a-thread:${(await a.ok('whoami')).run}`,
      'parent:a-thread',
    ]);
  });

  it('pages by limit without splitting a revision, and the pages join up exactly', async () => {
    const a = await agent();
    const { revision } = await a.ok('state_changes', {});
    for (let i = 0; i < 7; i++) await a.ok('state_set', { key: `k${i}`, value: i });
    await a.ok('state_batch', { ops: [0, 1, 2, 3].map((i) => ({ op: 'set', key: `b${i}`, value: i })) });
    const seen: string[] = [];
    let after = revision;
    for (let pages = 0; pages < 20; pages++) {
      const page = await a.ok('state_changes', { afterRevision: after, limit: 3, waitMs: 0 });
      if (page.changes.length === 0) break;
      const revisions = new Set(page.changes.map((c: { revision: number }) => c.revision));
      expect(page.changes.length <= 3 || revisions.size === 1).toBe(true);
      seen.push(...page.changes.map((c: { key: string }) => c.key));
      after = page.revision;
    }
    expect(seen).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'b0', 'b1', 'b2', 'b3']);
  });

  it('waitMs blocks until a matching change and returns it promptly; unrelated writes do not end the wait', async () => {
    const store = memoryStore();
    const follower = await agent({ store });
    const writer = await agent({ store });
    const { revision } = await follower.ok('state_changes', {});
    const started = Date.now();
    const waiting = follower.ok('state_changes', { afterRevision: revision, scope: 'global', prefix: 'job/', waitMs: 10_000 });
    await sleep(50);
    await writer.ok('state_set', { key: 'other', value: 1 });
    await sleep(50);
    const write = await writer.ok('state_set', { key: 'job/1', value: 'go' });
    const result = await waiting;
    expect(result.changes).toEqual([{ scope: 'global', key: 'job/1', version: 1, revision: write.revision, deleted: false }]);
    expect(Date.now() - started).toBeLessThan(5_000);
    const idle = await follower.ok('state_changes', { afterRevision: result.revision, waitMs: 100 });
    expect(idle).toEqual({ changes: [], revision: result.revision, timedOut: true });
  });

  it('an afterRevision older than the retention fails with REVISION_COMPACTED and the oldest usable revision', async () => {
    const store = new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, changeRetentionMs: 50 });
    const a = await agent({ store });
    const { revision } = await a.ok('state_changes', {});
    await a.ok('state_set', { key: 'old', value: 1 });
    await sleep(80);
    await store.sweep();
    const fresh = await a.ok('state_set', { key: 'new', value: 1 });
    const error = await a.err('state_changes', { afterRevision: revision });
    expect(error.code).toBe('REVISION_COMPACTED');
    expect(error.details).toEqual({ oldestRevision: fresh.revision - 1 });
    expect(error.message).toMatch(/state_snapshot/);
    const resumed = await a.ok('state_changes', { afterRevision: error.details!.oldestRevision });
    expect(resumed.changes.map((c: { key: string }) => c.key)).toEqual(['new']);
  });

  it('refuses bad arguments with INVALID_ARGUMENT and a revision from the future', async () => {
    const a = await agent();
    for (const args of [{ scope: 'nope' }, { afterRevision: 999 }, { prefix: 'bad\u0001' }]) {
      expect((await a.err('state_changes', args)).code, JSON.stringify(args)).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('versions never repeat (watch and ifVersion across delete and re-create)', () => {
  it('a watch with an afterVersion from before a delete-and-recreate returns at once', async () => {
    const store = memoryStore();
    const a = await agent({ store });
    const b = await agent({ store });
    for (let i = 0; i < 5; i++) await a.ok('state_set', { key: 'k', value: i });
    await b.ok('state_delete', { key: 'k' });
    const recreated = await b.ok('state_set', { key: 'k', value: 'again' });
    expect(recreated.version).toBe(6);
    const started = Date.now();
    expect(await a.ok('watch', { key: 'k', afterVersion: 5, waitMs: 10_000 })).toMatchObject({
      found: true,
      value: 'again',
      version: 6,
      timedOut: false,
    });
    // also when the version given is above the current one (a revision passed by mistake)
    expect(await a.ok('watch', { key: 'k', afterVersion: recreated.revision + 100, waitMs: 10_000 })).toMatchObject({
      version: 6,
      timedOut: false,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('a stale ifVersion never matches a re-created key', async () => {
    const a = await agent();
    for (let i = 0; i < 3; i++) await a.ok('state_set', { key: 'k', value: i });
    await a.ok('state_delete', { key: 'k' });
    for (let i = 0; i < 3; i++) await a.ok('state_set', { key: 'k', value: `new ${i}` });
    const error = await a.err('state_set', { key: 'k', value: 'stale write', ifVersion: 3 });
    expect(error).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentVersion: 6 } });
    expect((await a.ok('state_get', { key: 'k' })).value).toBe('new 2');
  });

  it('a key re-created after its tombstone was swept still starts above every version it had', async () => {
    const store = new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, changeRetentionMs: 20 });
    const a = await agent({ store });
    for (let i = 0; i < 4; i++) await a.ok('state_set', { key: 'k', value: i });
    await a.ok('state_delete', { key: 'k' });
    await sleep(40);
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
    expect((await a.ok('state_set', { key: 'k', value: 'back' })).version).toBeGreaterThan(4);
  });
});
