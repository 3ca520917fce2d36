import { describe, expect, it } from 'vitest';
import { canonicalHashOf } from '../../src/services/checkpoint-digest.js';
import { prefixEnd } from '../../src/store/keys.js';
import { agentsClosedAfterEach, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();

/** Every stored checkpoint blob: key, author and the JSON size of what it holds. */
async function blobs(a: Connected) {
  const { entries } = await a.store.list({ lo: '', hi: prefixEnd(''), limit: 100_000 });
  return entries
    .filter(([key]) => key.includes('~cp-blob:'))
    .map(([key, e]) => ({ key, by: e.updatedBy, bytes: JSON.stringify(e.value).length }));
}

const message = (i: number) => ({
  role: i % 2 ? 'assistant' : 'user',
  content: `message ${i}: ${'some words of a conversation '.repeat(9)}`,
});

describe('checkpoint storage', () => {
  it('a value that grew by an append stores only the appended part; every checkpoint restores exactly', async () => {
    const a = await agent({ config: { keepCheckpoints: 1000 } });
    const ids: string[] = [];
    await a.ok('state_set', { key: 'log', value: '', scope: 'thread' });
    for (let i = 0; i < 80; i++) {
      await a.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      await a.ok('state_update', { key: 'log', op: 'append', value: `line ${i}\n`, scope: 'thread' });
      ids.push((await a.ok('checkpoint_save', {})).checkpointId);
    }
    const full = JSON.stringify(message(0)).length * 80;
    const stored = (await blobs(a)).reduce((sum, b) => sum + b.bytes, 0);
    // whole copies each time would be 40 times the final state; parts (with a whole copy every 32 appends) are a few
    expect(stored).toBeLessThan(full * 4);
    expect((await blobs(a)).some((b) => b.by === 'checkpoint-pack')).toBe(true);
    for (const at of [0, 31, 32, 33, 57, 79]) {
      await a.ok('checkpoint_restore', { checkpointId: ids[at] });
      const value = (await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value;
      expect(value).toEqual(Array.from({ length: at + 1 }, (_, i) => message(i)));
      expect((await a.ok('state_get', { key: 'log', scope: 'thread', maxBytes: 1048576 })).value).toBe(
        Array.from({ length: at + 1 }, (_, i) => `line ${i}\n`).join(''),
      );
    }
  });

  it('deleting the checkpoints an appended part builds on keeps the later ones whole; deleting all frees every blob', async () => {
    const a = await agent({ config: { keepCheckpoints: 1000 } });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      await a.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      ids.push((await a.ok('checkpoint_save', {})).checkpointId);
    }
    for (const id of ids.slice(0, 9)) await a.ok('checkpoint_delete', { checkpointId: id });
    await a.ok('state_set', { key: 'messages', value: [], scope: 'thread' });
    await a.ok('checkpoint_restore', { checkpointId: ids[9] });
    expect((await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value).toHaveLength(10);
    await a.ok('checkpoint_delete', { checkpointId: ids[9] });
    expect(await blobs(a)).toEqual([]);
  });

  it('keeps the newest N when retention prunes checkpoints with appended parts', async () => {
    const a = await agent({ config: { keepCheckpoints: 3 } });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      await a.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      ids.push((await a.ok('checkpoint_save', {})).checkpointId);
    }
    expect((await a.ok('checkpoint_list', {})).checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual(
      ids.slice(5).reverse(),
    );
    await a.ok('checkpoint_restore', { checkpointId: ids[5] });
    expect((await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value).toHaveLength(6);
  });

  it('a large value is stored compressed and comes back exactly', async () => {
    const a = await agent();
    const doc = { text: 'the same paragraph again and again. '.repeat(2000) };
    await a.ok('state_set', { key: 'doc', value: doc, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    const [blob] = await blobs(a);
    expect(blob.by).toBe('checkpoint-pack');
    expect(blob.bytes).toBeLessThan(JSON.stringify(doc).length / 5);
    expect(cp.bytes).toBe(JSON.stringify(doc).length);
    await a.ok('state_set', { key: 'doc', value: 'gone', scope: 'thread' });
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    expect((await a.ok('state_get', { key: 'doc', scope: 'thread', maxBytes: 1048576 })).value).toEqual(doc);
  });

  it('a compressed value comes back with its members in their order; unchanged since the save, it keeps its version', async () => {
    const a = await agent();
    // members out of alphabetical order, as most messages are ({role, content})
    const messages = Array.from({ length: 20 }, (_, i) => message(i));
    const { version } = await a.ok('state_set', { key: 'messages', value: messages, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    expect((await blobs(a)).map((b) => b.by)).toEqual(['checkpoint-pack']);
    const whole = await a.bb.services.checkpoints.get({ checkpointId: cp.checkpointId });
    expect(JSON.stringify(Object.values(whole.state.records).find((r) => Array.isArray(r.v))?.v)).toBe(JSON.stringify(messages));
    // restored while unchanged: nothing to write, the version stays
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    let now = await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 });
    expect(now.version).toBe(version);
    expect(JSON.stringify(now.value)).toBe(JSON.stringify(messages));
    // restored after a change: the same text as saved
    await a.ok('state_set', { key: 'messages', value: 'changed', scope: 'thread' });
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    now = await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 });
    expect(JSON.stringify(now.value)).toBe(JSON.stringify(messages));
  });

  it("values equal but for their members' order are stored apart: each comes back as it was", async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'x', value: { a: 1, b: 2 }, scope: 'thread' });
    const { version } = await a.ok('state_set', { key: 'y', value: { b: 2, a: 1 }, scope: 'thread' });
    const cp = await a.ok('checkpoint_save', {});
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    let y = await a.ok('state_get', { key: 'y', scope: 'thread' });
    expect([JSON.stringify(y.value), y.version]).toEqual(['{"b":2,"a":1}', version]);
    await a.ok('state_set', { key: 'y', value: 0, scope: 'thread' });
    await a.ok('checkpoint_restore', { checkpointId: cp.checkpointId });
    y = await a.ok('state_get', { key: 'y', scope: 'thread' });
    expect(JSON.stringify(y.value)).toBe('{"b":2,"a":1}');
  });

  it('a damaged part of a chain makes the checkpoints built on it CHECKPOINT_CORRUPT, changing nothing', async () => {
    const a = await agent({ config: { keepCheckpoints: 1000 } });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      await a.ok('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      ids.push((await a.ok('checkpoint_save', {})).checkpointId);
    }
    const parts = (await a.store.list({ lo: '', hi: prefixEnd(''), limit: 10_000 })).entries.filter(
      ([key, e]) => key.includes('~cp-blob:') && e.updatedBy === 'checkpoint-pack',
    );
    const [key, entry] = parts[0];
    await a.store.transact(async (tx) => {
      await tx.putEntry(key, { ...entry, value: { ...(entry.value as object), tail: [{ role: 'user', content: 'forged' }] } });
      return {};
    });
    const before = await a.store.revision();
    expect((await a.err('checkpoint_restore', { checkpointId: ids[3] })).code).toBe('CHECKPOINT_CORRUPT');
    expect((await a.err('checkpoint_list', { checkpointId: ids[3] })).code).toBe('CHECKPOINT_CORRUPT');
    expect(await a.store.revision()).toBe(before);
    await a.ok('checkpoint_restore', { checkpointId: ids[0] });
  });
});

describe('checkpoint listing and reading', () => {
  it('pages newest first with limit and cursor, and reads one checkpoint without changing anything', async () => {
    const a = await agent({ config: { keepCheckpoints: 1000 } });
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      await a.ok('state_set', { key: 'i', value: i, scope: 'thread' });
      // other writes in between, so ids are spread over the revisions
      for (let j = 0; j < i % 5; j++) await a.ok('state_set', { key: 'g', value: j });
      ids.push((await a.ok('checkpoint_save', { label: `#${i}` })).checkpointId);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await a.ok('checkpoint_list', { limit: 5, ...(cursor ? { cursor } : {}) });
      expect(page.checkpoints.length).toBeLessThanOrEqual(5);
      seen.push(...page.checkpoints.map((c: { checkpointId: string }) => c.checkpointId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const last = await a.ok('checkpoint_list', { limit: 1 });
    expect(last.checkpoints[0]).toMatchObject({ checkpointId: ids[22], label: '#22', records: 1 });
    expect((await a.err('checkpoint_list', { limit: 0 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('checkpoint_list', { cursor: 'nope' })).code).toBe('INVALID_ARGUMENT');
    // a cursor pages the thread it came from: given with another thread, it is refused, not read as a place in that one
    const ours = (await a.ok('checkpoint_list', { limit: 5 })).nextCursor;
    const foreign = await a.err('checkpoint_list', { thread: 'someone-else', cursor: ours });
    expect(foreign).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'cursor' } });
    expect(foreign.message).toMatch(/cursor belongs to a different listing \(thread changed\)/);

    const revision = await a.store.revision();
    const one = await a.ok('checkpoint_list', { checkpointId: ids[4] });
    expect(one.checkpoints).toEqual([expect.objectContaining({ checkpointId: ids[4], label: '#4' })]);
    expect(one.state).toMatchObject({ format: 2, kind: 'thread', thread: a.bb.session.identity.thread });
    expect(Object.values(one.state.records).map((r) => (r as { v: unknown }).v)).toEqual([4]);
    expect(await a.store.revision()).toBe(revision);
    expect((await a.ok('state_get', { key: 'i', scope: 'thread', maxBytes: 1048576 })).value).toBe(22);
    expect((await a.err('checkpoint_list', { checkpointId: 'cp-000000000-00000000' })).code).toBe('NOT_FOUND');
  });

  it('checkpoints saved before summaries, heads and packing still list, restore, and serve as a base', async () => {
    const a = await agent({ config: { keepCheckpoints: 1000 } });
    await a.ok('state_set', { key: 'messages', value: [message(0)], scope: 'thread' });
    const entry = (await a.store.list({ lo: '', hi: prefixEnd(''), limit: 1000 })).entries.find(([key]) => key.endsWith('\u001fmessages'))!;
    const keys = a.bb.session.keys;
    const thread = a.bb.session.identity.thread;
    const rel = keys.relative(entry[0]);
    // addressed as the previous version did: by the hash of its canonical JSON (members sorted)
    const h = canonicalHashOf(entry[1].value);
    const id = 'cp-000000001-0000abcd';
    // the layout of the previous version: a manifest without lengths, index entries of 1, blobs holding the value
    await a.store.transact(async (tx) => {
      const put = (key: string, value: unknown, by = 'old') =>
        tx.putEntry(key, { value: value as never, version: 1, updatedAt: 1, updatedBy: by });
      await put(keys.checkpoint(id), {
        format: 2,
        thread,
        run: '',
        createdAt: 1,
        revision: entry[1].revision,
        bytes: 10,
        records: { [rel]: { h, ver: entry[1].version, at: entry[1].updatedAt, by: entry[1].updatedBy } },
      });
      await put(keys.checkpointIndex(thread, id), 1);
      await put(keys.blob(h), entry[1].value, 'checkpoint');
      await put(keys.blobRefs(h), 1, 'checkpoint');
      return {};
    });
    expect((await a.ok('checkpoint_list', {})).checkpoints).toEqual([expect.objectContaining({ checkpointId: id, records: 1, bytes: 10 })]);
    await a.ok('state_update', { key: 'messages', op: 'append', value: message(1), scope: 'thread' });
    const next = await a.ok('checkpoint_save', {});
    expect((await a.ok('checkpoint_list', {})).checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual([
      next.checkpointId,
      id,
    ]);
    await a.ok('checkpoint_restore', { checkpointId: id });
    expect((await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value).toEqual([message(0)]);
    await a.ok('checkpoint_restore', { checkpointId: next.checkpointId });
    expect((await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1048576 })).value).toEqual([message(0), message(1)]);
  });
});
