// import --replace into a store that holds more than the bundle: the store stays usable.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { runCli, spawnAgent } from '../helpers.js';

async function mail(db: string, count: number, text: string): Promise<void> {
  const bob = await spawnAgent(['--store', `sqlite://${db}`, '--thread', 'TB', '--agent', 'bob']);
  await bob.ok('team_list', {});
  const alice = await spawnAgent(['--store', `sqlite://${db}`, '--thread', 'TA', '--agent', 'alice']);
  try {
    for (let i = 0; i < count; i++) await alice.ok('message_send', { to: 'bob', content: `${text} ${i}` });
    for (let i = 0; i < count; i++) await alice.ok('history_append', { kind: 'note', content: `${text} ${i}` });
  } finally {
    await alice.close();
    await bob.close();
  }
}

describe('import --replace into a store that holds more than the bundle', () => {
  it('a namespace bundle: messages can still be sent, and none is lost or given a number twice', async () => {
    const [a, b] = [join(tempDir(), 'a.db'), join(tempDir(), 'b.db')];
    await mail(a, 2, 'from a');
    await mail(b, 5, 'from b');
    const file = join(tempDir(), 'a.json');
    writeFileSync(file, (await runCli(['export', '--store', `sqlite://${a}`])).stdout);
    const r = await runCli(['import', file, '--store', `sqlite://${b}`, '--replace']);
    expect(r.code, r.stderr).toBe(0);
    const alice = await spawnAgent(['--store', `sqlite://${b}`, '--thread', 'TA', '--agent', 'alice']);
    const bob = await spawnAgent(['--store', `sqlite://${b}`, '--thread', 'TB', '--agent', 'bob']);
    try {
      const sent = await alice.ok('message_send', { to: 'bob', content: 'after' });
      const inbox = await bob.ok('inbox', { waitMs: 0, limit: 50 });
      expect(inbox.messages.map((m: { id: string }) => m.id)).toContain(sent.messageId);
      expect(new Set(inbox.messages.map((m: { id: string }) => m.id)).size).toBe(inbox.messages.length);
      const seq = (await alice.ok('history_append', { kind: 'note', content: 'after' })).seq;
      expect(seq).toBeGreaterThan(5);
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it("a namespace bundle with an older acknowledged position: the recipient's position does not move back", async () => {
    const [a, b] = [join(tempDir(), 'a.db'), join(tempDir(), 'b.db')];
    await mail(a, 2, 'from a');
    await mail(b, 5, 'from b');
    const ack = async (db: string): Promise<void> => {
      const bob = await spawnAgent(['--store', `sqlite://${db}`, '--thread', 'TB', '--agent', 'bob']);
      try {
        const { cursor } = await bob.ok('inbox', { waitMs: 0, limit: 50 });
        await bob.ok('inbox', { waitMs: 0, ack: cursor });
      } finally {
        await bob.close();
      }
    };
    await ack(a); // the bundle's position: message 2
    await ack(b); // the store's: message 5
    const file = join(tempDir(), 'a.json');
    writeFileSync(file, (await runCli(['export', '--store', `sqlite://${a}`])).stdout);
    const r = await runCli(['import', file, '--store', `sqlite://${b}`, '--replace']);
    expect(r.code, r.stderr).toBe(0);
    const bob = await spawnAgent(['--store', `sqlite://${b}`, '--thread', 'TB', '--agent', 'bob']);
    try {
      const inbox = await bob.ok('inbox', { waitMs: 0, limit: 50 });
      expect(inbox.messages).toEqual([]);
      expect(inbox.unread).toBe(0);
    } finally {
      await bob.close();
    }
  });

  it("a thread bundle: the thread's next history event gets a number it never had", async () => {
    const [a, b] = [join(tempDir(), 'a.db'), join(tempDir(), 'b.db')];
    await mail(a, 2, 'from a');
    await mail(b, 5, 'from b');
    const file = join(tempDir(), 'ta.json');
    writeFileSync(file, (await runCli(['export', '--store', `sqlite://${a}`, '--thread', 'TA'])).stdout);
    const r = await runCli(['import', file, '--store', `sqlite://${b}`, '--replace']);
    expect(r.code, r.stderr).toBe(0);
    const alice = await spawnAgent(['--store', `sqlite://${b}`, '--thread', 'TA', '--agent', 'alice']);
    try {
      // the bundle's two events, and the store's three later ones gone with the replace
      expect((await alice.ok('history_list', { order: 'asc' })).entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2]);
      // a follower that read up to 5 before the import sees the next event
      expect((await alice.ok('history_append', { kind: 'note', content: 'after' })).seq).toBe(6);
      expect((await alice.ok('history_list', { afterSeq: 5, order: 'asc' })).entries).toHaveLength(1);
    } finally {
      await alice.close();
    }
  });
});
