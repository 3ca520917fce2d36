// Mail to a name or a type, and an agent's inbox resource, read that name's or type's signs of life, not the roster's;
// signs of life written before their copies existed (an older version's) are still reached.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keysOf } from '../../src/keyspace.js';
import { loadDocument } from '../../src/services/checkpoint-document.js';
import { Presence } from '../../src/services/presence.js';
import { Session } from '../../src/services/session.js';
import { SqliteBackend } from '../../src/store/sqlite/backend.js';
import type { Json } from '../../src/store/types.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { tempDir } from '../contract/backends.js';
import { agentsClosedAfterEach, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

/** A SQLite store that counts the records its range reads return. */
async function countingStore(): Promise<{ store: VersionedStore; rows: () => number }> {
  const backend = await SqliteBackend.open(join(tempDir(), 'reads.db'));
  let rows = 0;
  const list = backend.list.bind(backend);
  backend.list = async (query) => {
    const out = await list(query);
    rows += out.rows.length;
    return out;
  };
  return { store: new VersionedStore(backend, { sweepIntervalMs: 0 }), rows: () => rows };
}

/** `n` more agents on the roster, each in its own thread, as their servers write their signs of life. */
async function fill(store: VersionedStore, n: number, from: number): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const thread = `f${i}`;
    const session = new Session(store, { agent: `f${i}`, agentType: 'filler', thread, run: 'r', rootThread: thread, delegateLevel: 0 });
    await new Presence(store, session, 600_000).touch();
  }
}

describe('mail and the roster size', () => {
  it('a send to a name, a type or a thread, and the inbox resource, read no more records at a roster of 303 than of 3', async () => {
    const { store, rows } = await countingStore();
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    const w1 = await agent({ store, config: { agent: 'w1', agentType: 'worker', thread: 't1' } });
    await fill(store, 1, 0);
    for (const a of [lead, w1]) await a.ok('whoami');
    const reads = async (): Promise<number[]> => {
      const out: number[] = [];
      for (const to of ['w1', 'agentType:worker', 'thread:t1']) {
        const before = rows();
        expect((await lead.ok('message_send', { to, content: 'x' })).recipients).toBe(1);
        out.push(rows() - before);
      }
      const before = rows();
      const read = await lead.client.readResource({ uri: 'blackboard://_default/inbox/w1' });
      expect(JSON.parse((read.contents[0] as { text: string }).text).messages.length).toBeGreaterThan(0);
      out.push(rows() - before);
      return out;
    };
    const small = await reads();
    await fill(store, 300, 1);
    expect(await reads()).toEqual(small.map((n, i) => (i === 3 ? n + 3 : n))); // the resource reads its 3 new messages
    // an unknown name is still told the closest name on the whole roster
    const unknown = await lead.err('message_send', { to: 'f299x', content: 'x' });
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', details: { suggestion: 'f299' } });
  });

  it('signs of life written before their copies existed are reached by name and by type, as before', async () => {
    const { store } = await countingStore();
    const keys = keysOf(undefined);
    // an agent on the roster from a server of an older version: a sign of life, no copies
    const now = store.now();
    const old = { agent: 'old', agentType: 'worker', thread: 'to', lastSeen: now, since: now };
    await store.transact(async (tx) => {
      await tx.set(keys.presence('old', 'to'), old as Json, { by: 'old', ttlMs: 3600_000 });
      return {};
    });
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    const w1 = await agent({ store, config: { agent: 'w1', agentType: 'worker', thread: 't1' } });
    for (const a of [lead, w1]) await a.ok('whoami');
    expect((await lead.ok('message_send', { to: 'old', content: 'x' })).recipients).toBe(1);
    const byType = await lead.ok('message_send', { to: 'agentType:worker', content: 'x' });
    expect(byType.recipients).toBe(2);
    const read = await lead.client.readResource({ uri: 'blackboard://_default/inbox/old' });
    expect(JSON.parse((read.contents[0] as { text: string }).text).messages).toHaveLength(2);
  });

  it("a bundle's sign of life under another holder's key (renamed in its value only) is refused, and mail stays as it was", async () => {
    const { store } = await countingStore();
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    const x = await agent({ store, config: { agent: 'x', agentType: 'coder', thread: 'tx' } });
    for (const a of [lead, x]) await a.ok('whoami');
    const { doc } = await lead.bb.services.bundles.exportNamespace();
    const rel = keysOf(undefined).relative(keysOf(undefined).presence('x', 'tx'));
    const records = { ...doc.records, [rel]: { ...doc.records[rel], v: { ...(doc.records[rel].v as object), agent: 'y' } } };
    // (as `import` and the library load a bundle; with it, mail to x would read x's copies while the roster has no x)
    expect(() => loadDocument(JSON.stringify({ ...doc, records }), 'bundle')).toThrow(/cannot be loaded: .*not its holder's/);
    expect((await lead.ok('message_send', { to: 'x', content: 'x' })).recipients).toBe(1);
    expect(await lead.err('message_send', { to: 'y', content: 'x' })).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('servers of one store with different roster windows each judge the copies by their own window', async () => {
    const { store } = await countingStore();
    const keys = keysOf(undefined);
    // copies kept since 10 minutes ago; an agent last seen (by an older version, no copies) a minute before that
    const now = store.now();
    const old = { agent: 'old', agentType: 'worker', thread: 'to', lastSeen: now - 660_000, since: now - 660_000 };
    await store.transact(async (tx) => {
      await tx.set(keys.presenceIndexed(), { since: now - 600_000 }, { by: 'test' });
      await tx.set(keys.presence('old', 'to'), old as Json, { by: 'old', ttlMs: 3600_000 });
      return {};
    });
    // a window of 5 minutes no longer reaches back before the copies; one of an hour does, and still lists old
    const short = await agent({ store, config: { agent: 'short', thread: 'ts', rosterWindowSeconds: 300 } });
    const long = await agent({ store, config: { agent: 'long', thread: 'tl', rosterWindowSeconds: 3600 } });
    for (const a of [short, long]) await a.ok('whoami');
    expect(await short.err('message_send', { to: 'old', content: 'x' })).toMatchObject({ code: 'NOT_FOUND' });
    expect((await long.ok('message_send', { to: 'old', content: 'x' })).recipients).toBe(1);
    expect((await long.ok('message_send', { to: 'agentType:worker', content: 'x' })).recipients).toBe(1);
  });

  it('an agent that comes back in its thread as another type is reached by its new type only', async () => {
    const { store } = await countingStore();
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    await lead.ok('whoami');
    // a lease of 0.4 s: a sign of life is written at most every 0.1 s
    const first = await agent({ store, config: { agent: 'x', agentType: 'coder', thread: 'tx', claimLeaseSeconds: 0.4 } });
    await first.ok('whoami');
    await first.close();
    await sleep(150);
    const again = await agent({ store, config: { agent: 'x', agentType: 'tester', thread: 'tx', claimLeaseSeconds: 0.4 } });
    await again.ok('whoami');
    expect((await lead.ok('message_send', { to: 'agentType:tester', content: 'x' })).recipients).toBe(1);
    expect(await lead.err('message_send', { to: 'agentType:coder', content: 'x' })).toMatchObject({ code: 'NOT_FOUND' });
  });

  it("an imported namespace's signs of life are reached by name and by type, from a document with no copies too", async () => {
    const { store } = await countingStore();
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    await lead.ok('whoami');
    const keys = keysOf(undefined);
    const at = store.now();
    // a namespace export made by an older version: a sign of life, no copies
    const sign = { agent: 'old', agentType: 'worker', thread: 'to', lastSeen: at, since: at };
    const record = { v: sign, ver: 1, at, by: 'old', exp: at + 3600_000 };
    const doc = { format: 1, kind: 'namespace', records: { [keys.relative(keys.presence('old', 'to'))]: record } };
    const { doc: current } = await lead.bb.services.bundles.exportNamespace();
    expect(await lead.bb.services.bundles.import({ ...current, records: doc.records })).toMatchObject({ records: 1 });
    expect((await lead.ok('message_send', { to: 'old', content: 'x' })).recipients).toBe(1);
    expect((await lead.ok('message_send', { to: 'agentType:worker', content: 'x' })).recipients).toBe(1);
    // the record of since when copies are kept is this store's: not exported
    const { doc: after } = await lead.bb.services.bundles.exportNamespace();
    expect(Object.keys(after.records).filter((rel) => rel.includes('presence-index'))).toEqual([]);
  });

  it("a document's copies of signs of life are neither exported nor imported: an imported sign of life's own are written", async () => {
    const { store } = await countingStore();
    const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl' } });
    const x = await agent({ store, config: { agent: 'x', agentType: 'coder', thread: 'tx' } });
    for (const a of [lead, x]) await a.ok('whoami');
    const { doc: exported } = await lead.bb.services.bundles.exportNamespace();
    expect(Object.keys(exported.records).filter((rel) => rel.includes('~presence-'))).toEqual([]);
    // a document whose sign of life of y says tester while its copy says coder (one read while y came back as a
    // tester, by a version that exported copies, or an edited bundle): y is a tester, as the roster shows it
    const keys = keysOf(undefined);
    const at = store.now();
    const sign = { agent: 'y', agentType: 'tester', thread: 'ty', lastSeen: at, since: at };
    const saved = (v: object) => ({ v, ver: 1, at, by: 'y', exp: at + 3600_000 });
    const records = {
      [keys.relative(keys.presence('y', 'ty'))]: saved(sign),
      [keys.relative(keys.presenceBy('type', 'coder', 'y:ty'))]: saved({ ...sign, agentType: 'coder' }),
      [keys.relative(keys.presenceBy('agent', 'z', 'ty'))]: saved({ ...sign, agent: 'z' }),
    };
    expect(await lead.bb.services.bundles.import({ ...exported, records })).toMatchObject({ records: 3 });
    expect((await lead.ok('message_send', { to: 'agentType:tester', content: 'x' })).recipients).toBe(1);
    expect((await lead.ok('message_send', { to: 'agentType:coder', content: 'x' })).recipients).toBe(1); // x only
    expect(await lead.err('message_send', { to: 'z', content: 'x' })).toMatchObject({ code: 'NOT_FOUND' });
  });
});
