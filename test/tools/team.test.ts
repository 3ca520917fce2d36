import { describe, expect, it } from 'vitest';
import { FAMILY, familyRange } from '../../src/keyspace.js';
import { teamView } from '../../src/services/team.js';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

async function crew(store = memoryStore(), config: Record<string, unknown> = {}) {
  const lead = await agent({ store, config: { agent: 'lead', agentType: 'planner', thread: 'tl', ...config } });
  // a 2025-11-25 client names itself at initialize (a 2026-07-28 one may in each request's _meta)
  const w1 = await agent({ store, config: { agent: 'w1', agentType: 'worker', thread: 't1', ...config }, era: 'legacy' });
  const w2 = await agent({ store, config: { agent: 'w2', agentType: 'worker', thread: 't2', ...config } });
  // every call is a sign of life: each is on the roster after one
  for (const a of [lead, w1, w2]) await a.ok('whoami');
  return { store, lead, w1, w2 };
}

describe('team_list: the roster the server keeps', () => {
  it('lists every agent that called, most recently seen first, with client name, status and the steps it holds', async () => {
    const { lead, w1 } = await crew();
    const { planId } = await lead.ok('plan_create', { title: 'P', steps: ['a', 'b'] });
    await w1.ok('plan_claim', { planId, stepId: 's2' });
    const { agents, nextCursor } = await lead.ok('team_list');
    expect(nextCursor).toBeUndefined();
    expect(agents.map((a: { agent: string }) => a.agent).sort()).toEqual(['lead', 'w1', 'w2']);
    const byName = Object.fromEntries(agents.map((a: { agent: string }) => [a.agent, a]));
    expect(byName.w1).toMatchObject({
      agentType: 'worker',
      thread: 't1',
      client: 'test-agent',
      status: 'active',
      holding: [{ planId, stepId: 's2' }],
      unread: 0,
    });
    expect(byName.w2).toMatchObject({ status: 'active', holding: [] });
    const seen = agents.map((a: { lastSeen: string }) => a.lastSeen);
    expect([...seen].sort().reverse()).toEqual(seen);
  });

  it('a client that can only read is not on the roster, and mail to all does not count it', async () => {
    const { store, lead } = await crew();
    const watcher = await agent({ store, config: { agent: 'watcher', thread: 'tw', readOnly: true, tools: ['all'] } });
    await watcher.ok('team_list');
    await watcher.ok('whoami');
    expect((await lead.ok('team_list')).agents.map((a: { agent: string }) => a.agent).sort()).toEqual(['lead', 'w1', 'w2']);
    expect((await lead.ok('message_send', { to: 'all', content: 'hello' })).recipients).toBe(2);
  });

  it('an agent silent past the claim lease is idle; one closed is gone', async () => {
    const { lead, w1, w2 } = await crew(memoryStore(), { claimLeaseSeconds: 1 });
    await sleep(1300);
    await lead.ok('whoami');
    await w2.bb.services.presence.leave();
    const byName = Object.fromEntries((await lead.ok('team_list')).agents.map((a: { agent: string }) => [a.agent, a]));
    expect(byName.lead.status).toBe('active');
    expect(byName.w1.status).toBe('idle');
    expect(byName.w2.status).toBe('gone');
    await w2.ok('whoami');
    await w1.ok('whoami');
    const again = Object.fromEntries((await lead.ok('team_list')).agents.map((a: { agent: string }) => [a.agent, a]));
    expect(again.w2.status).toBe('active');
  });

  it('an agent silent past the roster window leaves the roster: not listed, and mail to it is NOT_FOUND', async () => {
    const store = memoryStore();
    const config = { rosterWindowSeconds: 1, claimLeaseSeconds: 1 };
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl', ...config } });
    const w = await agent({ store, config: { agent: 'w', thread: 'tw', ...config } });
    await w.ok('whoami');
    await lead.ok('whoami');
    expect((await lead.ok('team_list')).agents.map((a: { agent: string }) => a.agent).sort()).toEqual(['lead', 'w']);
    await sleep(1500);
    await lead.ok('whoami');
    expect((await lead.ok('team_list')).agents.map((a: { agent: string }) => a.agent)).toEqual(['lead']);
    expect((await lead.err('message_send', { to: 'w', content: 'hi' })).code).toBe('NOT_FOUND');
    // kept for it, mail reaches it when it calls again
    expect(await lead.ok('message_send', { to: 'w', content: 'when back', waitForRecipient: true })).toMatchObject({ awaiting: 'w' });
    expect((await w.ok('inbox', { waitMs: 0 })).messages).toMatchObject([{ content: 'when back' }]);
  });

  it('an agent whose new process is already calling is not gone when its old connection closes', async () => {
    const store = memoryStore();
    const config = { agent: 'w', thread: 'tw', claimLeaseSeconds: 1 };
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl', claimLeaseSeconds: 1 } });
    const old = await agent({ store, config });
    await old.ok('whoami');
    await sleep(300); // past the renewal interval (lease / 4), so the new connection's call writes its sign of life
    const renewed = await agent({ store, config });
    await renewed.ok('whoami');
    await old.bb.services.presence.leave();
    const status = async () => (await lead.ok('team_list')).agents.find((a: { agent: string }) => a.agent === 'w').status;
    expect(await status()).toBe('active');
    // the last connection of the holder closing does make it gone
    await renewed.bb.services.presence.leave();
    expect(await status()).toBe('gone');
  });

  it('pages with cursor and refuses a cursor it never gave', async () => {
    const store = memoryStore();
    for (let i = 0; i < 55; i++) await (await agent({ store, config: { agent: `a${i}`, thread: `t${i}` } })).ok('whoami');
    const viewer = await agent({ store, config: { agent: 'viewer', thread: 'tv' } });
    const first = await viewer.ok('team_list');
    expect(first.agents).toHaveLength(50);
    const second = await viewer.ok('team_list', { cursor: first.nextCursor });
    expect(second.nextCursor).toBeUndefined();
    const names = [...first.agents, ...second.agents].map((a: { agent: string }) => a.agent);
    expect(new Set(names).size).toBe(55);
    expect((await viewer.err('team_list', { cursor: 'nope' })).code).toBe('INVALID_ARGUMENT');
  });

  it('a page also ends before an agent that would take it over 16 KiB; paging on reaches every agent', async () => {
    const store = memoryStore();
    const long = (c: string, i: number) => `${c}${i}-${c.repeat(110)}`;
    for (let i = 0; i < 60; i++) await (await agent({ store, config: { agent: long('a', i), thread: long('t', i) } })).ok('whoami');
    const viewer = await agent({ store, config: { agent: 'viewer', thread: 'tv' } });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const reply = await viewer.raw('team_list', cursor ? { cursor } : {});
      expect(Buffer.byteLength(JSON.stringify(reply.structuredContent))).toBeLessThan(16 * 1024 + 512);
      const got = reply.structuredContent as { agents: Array<{ agent: string }>; nextCursor?: string };
      if (page === 0) expect(got.agents.length).toBeLessThan(50);
      seen.push(...got.agents.map((a) => a.agent));
      cursor = got.nextCursor;
      if (!cursor) break;
    }
    expect(new Set(seen)).toEqual(new Set(Array.from({ length: 60 }, (_, i) => long('a', i))));
  });
});

describe('message_send and inbox', () => {
  it('delivers to an agent, a type, a thread and all (not the sender), stamping the sender, in send order', async () => {
    const { lead, w1, w2 } = await crew();
    const direct = await lead.ok('message_send', { to: 'w1', content: 'stop, the spec changed' });
    expect(direct).toMatchObject({ messageId: expect.stringMatching(/^m\d+$/), recipients: 1 });
    expect(direct.revision).toBeGreaterThan(0);
    const byType = await lead.ok('message_send', { to: 'agentType:worker', content: 'workers: sync' });
    expect(byType.recipients).toBe(2);
    await w2.ok('message_send', { to: 'thread:t1', content: 'from w2' });
    const all = await w1.ok('message_send', { to: 'all', content: 'hello all' });
    expect(all.recipients).toBe(2);

    const box1 = await w1.ok('inbox', { waitMs: 0 });
    expect(box1.messages.map((m: { content: string }) => m.content)).toEqual(['stop, the spec changed', 'workers: sync', 'from w2']);
    expect(box1.messages[0]).toMatchObject({ from: 'lead', fromThread: 'tl', to: 'w1', id: direct.messageId });
    expect(box1.unread).toBe(3);
    const box2 = await w2.ok('inbox', { waitMs: 0 });
    expect(box2.messages.map((m: { content: string }) => m.content)).toEqual(['workers: sync', 'hello all']);
    const boxLead = await lead.ok('inbox', { waitMs: 0 });
    expect(boxLead.messages.map((m: { content: string }) => m.content)).toEqual(['hello all']);
  });

  it('nothing is consumed by reading: only ack moves the position, and never back', async () => {
    const { lead, w1 } = await crew();
    for (const n of [1, 2, 3]) await lead.ok('message_send', { to: 'w1', content: `n${n}` });
    const first = await w1.ok('inbox', { waitMs: 0, limit: 2 });
    expect(first.messages.map((m: { content: string }) => m.content)).toEqual(['n1', 'n2']);
    expect((await w1.ok('inbox', { waitMs: 0, limit: 2 })).messages.map((m: { content: string }) => m.content)).toEqual(['n1', 'n2']);
    const after = await w1.ok('inbox', { waitMs: 0, ack: first.cursor });
    expect(after.messages.map((m: { content: string }) => m.content)).toEqual(['n3']);
    expect(after.unread).toBe(1);
    // an older cursor does not move the position back
    expect((await w1.ok('inbox', { waitMs: 0, ack: '0' })).messages.map((m: { content: string }) => m.content)).toEqual(['n3']);
    const done = await w1.ok('inbox', { waitMs: 0, ack: after.cursor });
    expect(done).toMatchObject({ messages: [], unread: 0, cursor: after.cursor, timedOut: true }); // empty, as any wait that ends so
    expect(after.timedOut).toBeUndefined();
    expect((await w1.err('inbox', { ack: '999999' })).code).toBe('INVALID_ARGUMENT');
    expect((await w1.err('inbox', { ack: 'abc' })).code).toBe('INVALID_ARGUMENT');
  });

  it('an inbox page stays within about 16 KiB: it ends before a message that would take it over; paging with ack reads every one', async () => {
    const { lead, w1 } = await crew();
    const sizes = [9000, 9000, 16 * 1024, 100, 200, 7000];
    for (const [i, n] of sizes.entries()) await lead.ok('message_send', { to: 'w1', content: `${i}:${'x'.repeat(n - 2)}` });
    const read: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < sizes.length; page++) {
      const reply = await w1.raw('inbox', { waitMs: 0, ...(cursor ? { ack: cursor } : {}) });
      const got = reply.structuredContent as { messages: Array<{ content: string }>; cursor: string };
      if (got.messages.length === 0) break;
      // one message alone may be its 16 KiB of content and its envelope; two never pass 16 KiB
      if (got.messages.length > 1) expect(Buffer.byteLength(JSON.stringify(got.messages))).toBeLessThanOrEqual(16 * 1024 + 2);
      else expect(Buffer.byteLength(JSON.stringify(got.messages))).toBeLessThan(17 * 1024);
      read.push(...got.messages.map((m) => m.content.split(':')[0]));
      cursor = got.cursor;
    }
    expect(read).toEqual(['0', '1', '2', '3', '4', '5']);
  });

  it('a blocking inbox wakes on a send; an empty one times out', async () => {
    const { lead, w1 } = await crew();
    const started = Date.now();
    const waiting = w1.ok('inbox', { waitMs: 5000 });
    await sleep(100);
    await lead.ok('message_send', { to: 'w1', content: 'wake up' });
    const got = await waiting;
    expect(got.messages.map((m: { content: string }) => m.content)).toEqual(['wake up']);
    expect(Date.now() - started).toBeLessThan(3000);
    const empty = await lead.ok('inbox', { waitMs: 200 });
    expect(empty).toMatchObject({ messages: [], unread: 0, timedOut: true });
  });

  it('unread rides in the _meta of other replies and in whoami', async () => {
    const { lead, w1 } = await crew();
    const before = await w1.raw('state_get', { key: 'k' });
    expect(before._meta?.unread).toBeUndefined();
    await lead.ok('message_send', { to: 'w1', content: 'ping' });
    await sleep(1100); // the hint is reused for up to a second
    const after = await w1.raw('state_get', { key: 'k' });
    expect(after._meta?.unread).toBe(1);
    expect((await w1.ok('whoami')).unread).toBe(1);
    // a refused call too
    const refused = await w1.raw('state_update', { key: 'text', op: 'increment', value: 1, ifVersion: 7 });
    expect(refused.isError).toBe(true);
    expect(refused._meta?.unread).toBe(1);
  });

  it("an ack in one of an agent's threads refreshes the unread hint of its other threads in the process at once", async () => {
    const { store, lead } = await crew();
    const t1 = await agent({ store, config: { agent: 'w', thread: 'w-1' } });
    const t2 = await agent({ store, config: { agent: 'w', thread: 'w-2' } });
    await t1.ok('whoami');
    await t2.ok('whoami');
    await lead.ok('message_send', { to: 'w', content: 'for w, in any thread' });
    expect((await t1.raw('state_get', { key: 'k' }))._meta?.unread).toBe(1); // the hint is now held for a second
    const box = await t2.ok('inbox', { waitMs: 0 });
    await t2.ok('inbox', { waitMs: 0, ack: box.cursor });
    const after = await t1.raw('whoami');
    expect((after.structuredContent as { unread: number }).unread).toBe(0);
    expect(after._meta?.unread).toBeUndefined();
  });

  it('refuses what it cannot deliver: too large, unknown recipient (with the closest name), nobody for all; changes nothing', async () => {
    const { lead, w1 } = await crew();
    expect((await lead.err('message_send', { to: 'w1', content: 'x'.repeat(16 * 1024 + 1) })).code).toBe('VALUE_TOO_LARGE');
    const unknown = await lead.err('message_send', { to: 'w3', content: 'hi' });
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', details: { suggestion: expect.stringMatching(/^w[12]$/) } });
    expect(unknown.message).toContain('waitForRecipient');
    expect((await lead.err('message_send', { to: 'agentType:nobody', content: 'hi' })).code).toBe('NOT_FOUND');
    expect((await lead.err('message_send', { to: 'bad name!', content: 'hi' })).code).toBe('INVALID_ARGUMENT');
    expect((await lead.err('message_send', { to: 'w1', content: 'hi', replyTo: 'x1' })).code).toBe('INVALID_ARGUMENT');
    expect((await w1.ok('inbox', { waitMs: 0 })).messages).toEqual([]);
    const alone = await agent({ config: { agent: 'solo', thread: 'ts' } });
    expect((await alone.err('message_send', { to: 'all', content: 'anyone?' })).code).toBe('NOT_FOUND');
  });

  it('waitForRecipient keeps a message for an agent that has not arrived yet', async () => {
    const { store, lead } = await crew();
    const kept = await lead.ok('message_send', { to: 'late', content: 'welcome', waitForRecipient: true });
    expect(kept).toMatchObject({ recipients: 0, awaiting: 'late' });
    const late = await agent({ store, config: { agent: 'late', thread: 'tz' } });
    const box = await late.ok('inbox', { waitMs: 0 });
    expect(box.messages).toMatchObject([{ content: 'welcome', from: 'lead' }]);
  });

  it("an agent's mail follows it to a new thread: what it left unacknowledged, and what came while it was away, once", async () => {
    const { store, lead, w1 } = await crew();
    const contents = (box: { messages: Array<{ content: string }> }) => box.messages.map((m) => m.content);
    await lead.ok('message_send', { to: 'w1', content: 'read and acted on' });
    await lead.ok('message_send', { to: 'agentType:worker', content: 'for every worker' });
    const first = await w1.ok('inbox', { waitMs: 0, limit: 1 });
    expect(contents(first)).toEqual(['read and acted on']);
    await w1.ok('inbox', { waitMs: 0, ack: first.cursor });
    await lead.ok('message_send', { to: 'w1', content: 'read, not acted on' });
    await w1.ok('inbox', { waitMs: 0 });
    await w1.close(); // a restart without --thread: the same agent in a new thread
    await lead.ok('message_send', { to: 'w1', content: 'sent while it was away' });
    const again = await agent({ store, config: { agent: 'w1', agentType: 'worker', thread: 't1-restarted' } });
    const box = await again.ok('inbox', { waitMs: 0 });
    expect(contents(box)).toEqual(['for every worker', 'read, not acted on', 'sent while it was away']);
    expect(box.unread).toBe(3);
    await again.ok('inbox', { waitMs: 0, ack: box.cursor });
    // acknowledged in one thread, it is the agent's: a third thread does not get it again
    const third = await agent({ store, config: { agent: 'w1', agentType: 'worker', thread: 't1-third' } });
    expect(await third.ok('inbox', { waitMs: 0 })).toMatchObject({ messages: [], unread: 0 });
  });

  it('a kept message is read once by the agent it waited for, not again in each later thread', async () => {
    const { store, lead } = await crew();
    await lead.ok('message_send', { to: 'late', content: 'welcome', waitForRecipient: true });
    const first = await agent({ store, config: { agent: 'late', thread: 'late-1' } });
    const box = await first.ok('inbox', { waitMs: 0 });
    expect(box.messages).toMatchObject([{ content: 'welcome' }]);
    await first.ok('inbox', { waitMs: 0, ack: box.cursor });
    const second = await agent({ store, config: { agent: 'late', thread: 'late-2' } });
    expect(await second.ok('inbox', { waitMs: 0 })).toMatchObject({ messages: [], unread: 0 });
  });

  it('mail to a thread reaches that thread only, not a thread whose id starts with it', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl' } });
    const named = await agent({ store, config: { agent: 'w', thread: 'job' } });
    const namedSub = await agent({ store, config: { agent: 'w', thread: 'job:2' } });
    const anon = await agent({ store, config: { thread: 'task' } });
    const anonSub = await agent({ store, config: { thread: 'task:2' } });
    for (const a of [named, namedSub, anon, anonSub]) await a.ok('whoami');
    expect((await lead.ok('message_send', { to: 'thread:job:2', content: 'for job:2' })).recipients).toBe(1);
    expect((await lead.ok('message_send', { to: 'thread:task:2', content: 'for task:2' })).recipients).toBe(1);
    expect(await named.ok('inbox', { waitMs: 0 })).toMatchObject({ messages: [], unread: 0 });
    expect(await anon.ok('inbox', { waitMs: 0 })).toMatchObject({ messages: [], unread: 0 });
    expect((await namedSub.ok('inbox', { waitMs: 0 })).messages).toMatchObject([{ content: 'for job:2' }]);
    expect((await anonSub.ok('inbox', { waitMs: 0 })).messages).toMatchObject([{ content: 'for task:2' }]);
  });

  it("mail to a thread reaches its caller, reading only that thread's signs of life", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl' } });
    // two connections of one holder are one roster entry
    const inJob = [
      await agent({ store, config: { agent: 'a', thread: 'job' } }),
      await agent({ store, config: { agent: 'a', thread: 'job' } }),
    ];
    const others = [
      await agent({ store, config: { agent: 'a', thread: 'jo' } }),
      await agent({ store, config: { agent: 'c', thread: 'jobs' } }),
      await agent({ store, config: { thread: 'job2' } }),
    ];
    for (const a of [...inJob, ...others]) await a.ok('whoami');
    // what the send lists: the roster of a namespace can hold thousands of agents, a thread's a few
    const listed: string[] = [];
    const list = store.list.bind(store);
    store.list = (query) => {
      listed.push(query.lo);
      return list(query);
    };
    const sent = await lead.ok('message_send', { to: 'thread:job', content: 'for job' });
    store.list = list;
    expect(sent.recipients).toBe(1);
    const keys = lead.bb.services.session.keys;
    expect(listed.filter((lo) => lo.startsWith(keys.presenceRange().lo))).toEqual([familyRange(keys.namespace, FAMILY.presence, 'job').lo]);
    expect((await inJob[1].ok('inbox', { waitMs: 0 })).messages).toMatchObject([{ content: 'for job' }]);
    for (const a of others) expect(await a.ok('inbox', { waitMs: 0 })).toMatchObject({ messages: [], unread: 0 });
    expect((await lead.err('message_send', { to: 'thread:jobz', content: 'x' })).code).toBe('NOT_FOUND');
  });

  it("a caller that only reads another agent's thread is not on the roster there, and gets none of its mail", async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl' } });
    await lead.ok('whoami');
    const visitor = await agent({ store, config: { agent: 'v', thread: 'tl' } });
    await visitor.ok('state_get', { key: 'anything', scope: 'thread' });
    const { agents } = await lead.ok('team_list');
    expect(agents.map((a: { agent: string; thread: string }) => `${a.agent}@${a.thread}`)).toEqual(['lead@tl']);
    expect((await lead.ok('message_send', { to: 'thread:tl', content: 'for tl' })).recipients).toBe(1);
  });

  it('an idempotencyKey sends once; a reply names the message it answers', async () => {
    const { lead, w1 } = await crew();
    const a = await lead.ok('message_send', { to: 'w1', content: 'q?', idempotencyKey: 'k1' });
    const b = await lead.ok('message_send', { to: 'w1', content: 'q?', idempotencyKey: 'k1' });
    expect(b.messageId).toBe(a.messageId);
    expect((await lead.err('message_send', { to: 'w1', content: 'other', idempotencyKey: 'k1' })).code).toBe('INVALID_ARGUMENT');
    await w1.ok('message_send', { to: 'lead', content: 'answer', replyTo: a.messageId });
    expect((await lead.ok('inbox', { waitMs: 0 })).messages[0]).toMatchObject({ content: 'answer', replyTo: a.messageId });
    expect((await w1.ok('inbox', { waitMs: 0 })).messages).toHaveLength(1);
  });

  it('a message_send retried after its recipient left the roster answers as the send that happened, not NOT_FOUND', async () => {
    const store = memoryStore();
    const config = { rosterWindowSeconds: 1, claimLeaseSeconds: 1 };
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl', ...config } });
    const w = await agent({ store, config: { agent: 'w', thread: 'tw', ...config } });
    await w.ok('whoami');
    const sent = await lead.ok('message_send', { to: 'w', content: 'hi', idempotencyKey: 'k1' });
    await sleep(1500); // w, silent, is off the roster now
    expect(await lead.ok('message_send', { to: 'w', content: 'hi', idempotencyKey: 'k1' })).toEqual(sent);
    expect((await lead.err('message_send', { to: 'w', content: 'hi' })).code).toBe('NOT_FOUND');
    expect((await w.ok('inbox', { waitMs: 0 })).messages).toMatchObject([{ id: sent.messageId, content: 'hi' }]);
  });

  it('messages expire after the retention', async () => {
    const { lead, w1 } = await crew(memoryStore(), { messageRetentionSeconds: 1 });
    await lead.ok('message_send', { to: 'w1', content: 'short-lived' });
    await sleep(1200);
    expect((await w1.ok('inbox', { waitMs: 0 })).messages).toEqual([]);
  });
});

describe('the inbox resource', () => {
  it('resources/subscribe on blackboard://{namespace}/inbox/{agent} hears of every new message; reading shows them', async () => {
    const { store, lead } = await crew();
    const watcher = await agent({ store, config: { agent: 'watcher', thread: 'tw' }, era: 'legacy' });
    const updated: string[] = [];
    watcher.client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    const uri = 'blackboard://_default/inbox/w1';
    await watcher.client.subscribeResource({ uri });
    await sleep(50);
    await lead.ok('message_send', { to: 'w1', content: 'one' });
    await sleep(50);
    await lead.ok('message_send', { to: 'w2', content: 'not for w1' });
    await sleep(50);
    await lead.ok('message_send', { to: 'agentType:worker', content: 'two' });
    for (const end = Date.now() + 3000; updated.length < 2 && Date.now() < end; ) await sleep(20);
    await sleep(100);
    expect(updated).toEqual([uri, uri]);
    const read = await watcher.client.readResource({ uri });
    expect(JSON.parse((read.contents[0] as { text: string }).text).messages.map((m: { content: string }) => m.content)).toEqual([
      'one',
      'two',
    ]);
    await expect(watcher.client.readResource({ uri: 'blackboard://_default/inbox/bad name' })).rejects.toMatchObject({ code: -32602 });
  });

  it('shows the mail kept for the agent (waitForRecipient, by name, type or thread) as its inbox does; a subscriber hears of mail kept for its name', async () => {
    const { store, lead } = await crew();
    const watcher = await agent({ store, config: { agent: 'watcher', thread: 'tw' }, era: 'legacy' });
    const updated: string[] = [];
    watcher.client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    const uri = 'blackboard://_default/inbox/bob';
    await watcher.client.subscribeResource({ uri });
    await sleep(50);
    await lead.ok('message_send', { to: 'bob', content: 'by name', waitForRecipient: true });
    for (const end = Date.now() + 3000; updated.length < 1 && Date.now() < end; ) await sleep(20);
    expect(updated).toEqual([uri]);
    await lead.ok('message_send', { to: 'agentType:tester', content: 'by type', waitForRecipient: true });
    await lead.ok('message_send', { to: 'thread:tb', content: 'by thread', waitForRecipient: true });
    const bob = await agent({ store, config: { agent: 'bob', agentType: 'tester', thread: 'tb' } });
    const box = await bob.ok('inbox', { waitMs: 0 });
    const contents = ['by name', 'by type', 'by thread'];
    expect(box.messages.map((m: { content: string }) => m.content)).toEqual(contents);
    const read = JSON.parse(((await watcher.client.readResource({ uri })).contents[0] as { text: string }).text);
    expect(read.messages.map((m: { content: string }) => m.content)).toEqual(contents);
  });

  it('reading it stays within about 16 KiB: the newest messages that fit, the newest always', async () => {
    const { store, lead } = await crew();
    const reader = await agent({ store, config: { agent: 'reader', thread: 'tr' } });
    for (let i = 0; i < 20; i++) await lead.ok('message_send', { to: 'w1', content: `${i} ${'m'.repeat(15_000)}` });
    const read = await reader.client.readResource({ uri: 'blackboard://_default/inbox/w1' });
    const text = (read.contents[0] as { text: string }).text;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(16 * 1024 + 200);
    expect(JSON.parse(text).messages.map((m: { content: string }) => m.content.split(' ')[0])).toEqual(['19']);
    await lead.ok('message_send', { to: 'w1', content: 'short' });
    const after = JSON.parse(
      ((await reader.client.readResource({ uri: 'blackboard://_default/inbox/w1' })).contents[0] as { text: string }).text,
    );
    expect(after.messages.map((m: { content: string }) => m.content.split(' ')[0])).toEqual(['19', 'short']);
  });

  it('counts the reply around the messages: two that fill 16 KiB by themselves do not both come', async () => {
    const { store, lead } = await crew();
    const reader = await agent({ store, config: { agent: 'reader', thread: 'tr' } });
    const uri = 'blackboard://_default/inbox/w1';
    const text = async (): Promise<string> => ((await reader.client.readResource({ uri })).contents[0] as { text: string }).text;
    await lead.ok('message_send', { to: 'w1', content: 'x' });
    const around = Buffer.byteLength(JSON.stringify(JSON.parse(await text()).messages[0])) - 1; // a message's JSON but its content
    const content = (tag: string): string => tag + 'm'.repeat((16 * 1024) / 2 - around - 1);
    await lead.ok('message_send', { to: 'w1', content: content('a') });
    await lead.ok('message_send', { to: 'w1', content: content('b') });
    const read = await text();
    expect(Buffer.byteLength(read)).toBeLessThanOrEqual(16 * 1024);
    expect(JSON.parse(read).messages.map((m: { content: string }) => m.content[0])).toEqual(['b']);
  });
});

describe('teamView (what the board shows)', () => {
  it('gives the roster with unread counts and the newest messages with their recipients, oldest first', async () => {
    const { store, lead } = await crew();
    await lead.ok('message_send', { to: 'w1', content: 'first' });
    await lead.ok('message_send', { to: 'agentType:worker', content: 'second' });
    await lead.ok('message_send', { to: 'ghost', content: 'kept', waitForRecipient: true });
    const view = await teamView(store, undefined, { leaseMs: 600_000, windowMs: 3_600_000, messages: 2 });
    expect(Object.fromEntries(view.roster.map((e) => [e.agent, e.unread]))).toEqual({ lead: 0, w1: 2, w2: 1 });
    expect(view.messages).toMatchObject([
      { content: 'second', to: 'agentType:worker', recipients: [{ agent: 'w1' }, { agent: 'w2' }] },
      { content: 'kept', to: 'ghost', recipients: [], awaiting: 'ghost' },
    ]);
  });

  it('an inbox page of many messages stays within 16 KiB, its frame and commas counted', async () => {
    const store = memoryStore();
    const reader = await agent({ store, config: { agent: 'reader', thread: 'tr' } });
    const sender = await agent({ store, config: { agent: 'sender', thread: 'ts' } });
    await reader.ok('whoami'); // on the roster
    // 66 messages of 246 bytes of JSON fill 16,236: counting the frame and the commas too takes the page to 65
    for (let i = 0; i < 100; i++) await sender.ok('message_send', { to: 'reader', content: `${i} ${'m'.repeat(136)}` });
    let cursor: string | undefined;
    let read = 0;
    for (let page = 0; page < 10 && read < 100; page++) {
      const reply = await reader.raw('inbox', { waitMs: 0, limit: 100, ...(cursor ? { ack: cursor } : {}) });
      expect(reply.isError, JSON.stringify(reply.content)).toBeFalsy();
      expect(Buffer.byteLength(JSON.stringify(reply.structuredContent))).toBeLessThanOrEqual(16 * 1024);
      const box = reply.structuredContent as { messages: unknown[]; cursor: string };
      read += box.messages.length;
      cursor = box.cursor;
    }
    expect(read).toBe(100);
  });
});
