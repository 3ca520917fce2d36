// The team through the library on every shareable backend: roster, sends resolved at send time, per-recipient order,
// reads that consume nothing until acknowledged, and an inbox in one connection woken by a send through another.
import { afterEach, describe, expect, it } from 'vitest';
import { BlackboardError, openBlackboard, type Blackboard, type Message } from '../../src/index.js';
import { sharedStores } from '../stores.js';

const opened: Blackboard[] = [];
afterEach(async () => {
  for (const bb of opened.splice(0).reverse()) await bb.close().catch(() => {});
});
async function board(options: Parameters<typeof openBlackboard>[0]): Promise<Blackboard> {
  const bb = await openBlackboard(options);
  opened.push(bb);
  return bb;
}
async function take(feed: AsyncIterable<Message>, n: number): Promise<Message[]> {
  const out: Message[] = [];
  for await (const m of feed) if (out.push(m) === n) break;
  return out;
}

describe.each(sharedStores())('team on $name', ({ fresh }) => {
  it('delivers each message to exactly its recipients, in send order, again until acknowledged', async () => {
    const url = fresh();
    const lead = await board({ store: url, agent: 'lead', agentType: 'planner', thread: 'tl' });
    const w1 = await board({ store: url, agent: 'w1', agentType: 'worker', thread: 't1' });
    const w2 = await board({ store: url, agent: 'w2', agentType: 'worker', thread: 't2' });
    for (const bb of [lead, w1, w2]) await bb.whoami();
    const roster = await lead.team.list();
    expect(roster.agents.map((a) => a.agent).sort()).toEqual(['lead', 'w1', 'w2']);

    for (let i = 0; i < 5; i++) await lead.send({ to: 'w1', content: `direct ${i}` });
    await lead.send({ to: 'agentType:worker', content: 'to workers' });
    const all = await w2.send({ to: 'all', content: 'from w2 to all' });
    expect(all.recipients.map((r) => r.agent).sort()).toEqual(['lead', 'w1']);
    expect(await failure(lead.send({ to: 'w9', content: 'x' }))).toMatchObject({ code: 'NOT_FOUND' });

    const got1 = await take(w1.inbox({ waitMs: 0 }), 7);
    expect(got1.map((m) => m.content)).toEqual([...[0, 1, 2, 3, 4].map((i) => `direct ${i}`), 'to workers', 'from w2 to all']);
    expect((await take(w2.inbox({ waitMs: 0 }), 1)).map((m) => m.content)).toEqual(['to workers']);
    expect((await lead.mail.read({ waitMs: 0 })).messages.map((m) => m.content)).toEqual(['from w2 to all']);

    // The loop above broke on the 7th message before asking for an 8th: only the first six are acknowledged, so the
    // same agent and thread (as after a restart) reads the 7th again
    const again = await board({ store: url, agent: 'w1', thread: 't1' });
    const page = await again.mail.read({ waitMs: 0 });
    expect(page.messages.map((m) => m.content)).toEqual(['from w2 to all']);
    expect((await again.whoami()).unread).toBe(1);
    await again.mail.read({ waitMs: 0, ack: page.cursor });
    expect((await again.whoami()).unread).toBe(0);
  });

  it('an inbox waiting in one connection wakes on a send through another', async () => {
    const url = fresh();
    const lead = await board({ store: url, agent: 'lead', thread: 'tl' });
    const w1 = await board({ store: url, agent: 'w1', thread: 't1' });
    await w1.whoami();
    const started = Date.now();
    const waiting = take(w1.inbox({ waitMs: 10_000 }), 1);
    await new Promise((r) => setTimeout(r, 200));
    const sent = Date.now();
    await lead.send({ to: 'w1', content: 'wake' });
    const [m] = await waiting;
    expect(m).toMatchObject({ content: 'wake', from: 'lead', fromThread: 'tl', to: 'w1' });
    expect(Date.now() - sent).toBeLessThan(2000);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

async function failure(promise: Promise<unknown>): Promise<BlackboardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BlackboardError);
  return error as BlackboardError;
}
