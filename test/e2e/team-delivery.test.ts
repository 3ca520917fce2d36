// Delivery under load on every shareable backend, through separate server processes: two senders send direct, by
// type and to all while two recipients read and acknowledge; one recipient is killed with kill -9 mid-run and
// restarted. Each recipient gets exactly the messages meant for it, in send order per sender, duplicates only as
// re-reads of what it had not acknowledged.
import { afterEach, describe, expect, it } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { sharedStores } from '../stores.js';

const open: Spawned[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close().catch(() => {})));
});
type Msg = { id: string; from: string; content: string };

describe.each(sharedStores())('message delivery across processes on $name', ({ fresh }) => {
  it('every acknowledged send reaches exactly its recipients, in order per sender, across a kill -9 of a recipient', async () => {
    const store = fresh();
    const proc = async (name: string, type: string): Promise<Spawned> => {
      const a = await spawnAgent(['--store', store, '--agent', name, '--agent-type', type, '--thread', `t-${name}`]);
      open.push(a);
      return a;
    };
    const [s1, s2, r1, r2] = await Promise.all([proc('s1', 'sender'), proc('s2', 'sender'), proc('r1', 'reader'), proc('r2', 'reader')]);
    for (const a of [s1, s2, r1, r2]) await a.ok('whoami');
    const PER = 40;
    // what each reader must get, by sender, in order
    const expected: Record<string, Record<string, string[]>> = { r1: { s1: [], s2: [] }, r2: { s1: [], s2: [] } };
    const send = async (from: Spawned, name: string) => {
      for (let i = 0; i < PER; i++) {
        const to = i % 3 === 0 ? 'r1' : i % 3 === 1 ? 'agentType:reader' : 'all';
        const { messageId } = await from.ok('message_send', { to, content: `${name}-${i}` });
        expected.r1[name].push(messageId); // r1 is addressed by name, by type and as one of all
        if (to !== 'r1') expected.r2[name].push(messageId);
      }
    };
    const got: Record<string, Msg[]> = { r1: [], r2: [] };
    let stop = false;
    let r1Now = r1;
    const read = async (name: 'r1' | 'r2', killAfter?: number) => {
      let reader = name === 'r1' ? r1 : r2;
      let killed = false;
      while (!stop || (await reader.ok('inbox', { waitMs: 0 })).messages.length > 0) {
        const box = await reader.ok('inbox', { waitMs: 500, limit: 7 });
        got[name].push(...box.messages);
        if (killAfter !== undefined && !killed && got[name].length >= killAfter) {
          // killed after reading a page it never acknowledged: a new process for the same agent and thread reads it again
          killed = true;
          reader.kill();
          reader = await proc(name, 'reader');
          r1Now = reader;
          continue;
        }
        if (box.messages.length > 0) await reader.ok('inbox', { waitMs: 0, ack: box.cursor });
      }
    };
    const readers = Promise.all([read('r1', 20), read('r2')]);
    await Promise.all([send(s1, 's1'), send(s2, 's2')]);
    await sleep(500);
    stop = true;
    await readers;
    expect(r1Now).not.toBe(r1);
    for (const name of ['r1', 'r2'] as const) {
      const ids = got[name].map((m) => m.id);
      const unique = [...new Set(ids)];
      const wanted = [...expected[name].s1, ...expected[name].s2];
      // exactly the messages meant for it: none lost, none for anyone else
      expect([...unique].sort()).toEqual([...wanted].sort());
      // per sender, first deliveries in send order
      for (const sender of ['s1', 's2']) {
        const firsts = unique.filter((id) => expected[name][sender].includes(id));
        expect(firsts).toEqual(expected[name][sender]);
      }
      // duplicates only for r1, whose unacknowledged page was read again after the kill
      if (name === 'r2') expect(ids).toHaveLength(unique.length);
    }
    expect(got.r1.length).toBeGreaterThan(new Set(got.r1.map((m) => m.id)).size);
  }, 240_000);
});

describe.each(sharedStores())('a reader racing sends to its thread and to its name on $name', ({ name, fresh }) => {
  it('loses nothing: a page never acknowledges past a message another mailbox of the reader has yet to show', async () => {
    const store = fresh();
    const proc = async (agent: string, url = store): Promise<Spawned> => {
      const a = await spawnAgent(['--store', url, '--agent', agent, '--thread', `t-${agent}`]);
      open.push(a);
      await a.ok('whoami');
      return a;
    };
    // one pooled connection: the reader's mailboxes are read one after the other, as under a small pool or pgbouncer
    const [reader, ...senders] = await Promise.all([
      proc('r', name === 'postgres' ? `${store}&pool_max=1` : store),
      proc('s1'),
      proc('s2'),
      proc('s3'),
      proc('s4'),
    ]);
    // mail to its thread is in the reader's thread mailbox, mail to its name in its agent's: sends land in both at once
    const PER = 100;
    const sent: string[] = [];
    const send = async (from: Spawned, to: string) => {
      for (let i = 0; i < PER; i++) sent.push((await from.ok('message_send', { to, content: `${to}-${i}` })).messageId);
    };
    const got = new Set<string>();
    let done = false;
    const read = async () => {
      let cursor: string | undefined;
      for (;;) {
        const box = await reader.ok('inbox', { waitMs: 0, limit: 100, ...(cursor ? { ack: cursor } : {}) });
        for (const m of box.messages) got.add(m.id);
        cursor = box.cursor;
        if (done && box.messages.length === 0) return;
      }
    };
    const reading = read();
    await Promise.all(senders.map((s, i) => send(s, i % 2 === 0 ? 'thread:t-r' : 'r')));
    done = true;
    await reading;
    expect(
      sent.filter((id) => !got.has(id)),
      'messages passed over by an acknowledged cursor',
    ).toEqual([]);
  }, 120_000);
});
